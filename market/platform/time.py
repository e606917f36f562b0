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
