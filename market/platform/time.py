"""One definition of a stored moment for every table: UTC, with its zone."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Column, DateTime
from sqlmodel import Field


def utcnow() -> datetime:
    return datetime.now(UTC)


def timestamp_field(nullable: bool = False):
    return Field(
        default_factory=utcnow if not nullable else None,
        sa_column=Column(DateTime(timezone=True), nullable=nullable),
    )


def as_utc(moment: datetime) -> datetime:
    """A stored moment with its zone: SQLite hands ``DateTime(timezone=True)`` back naive."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
