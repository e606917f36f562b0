"""Reward-dataset exports: one row per run, numbered by its id.

A run's files live in its own directory (``location``), written under a temporary name and
renamed into place only when complete, then never touched again: the row says what was asked
(``parameters``), what was read (``watermark``: feedback last written at or before it), and
what came out (``manifest``, the same document as the run's ``manifest.json``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, DateTime, Index
from sqlmodel import Field, SQLModel

from market.platform.time import utcnow


class ExportRun(SQLModel, table=True):
    __tablename__ = "export_run"
    __table_args__ = (Index("ix_export_run_status", "status", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    status: str = Field(default="queued", max_length=16)  # queued | running | succeeded | failed
    # What the caller asked for, with the defaults filled in (k, confidence, shapes, ...).
    parameters: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # The run whose watermark this one starts from (an incremental export); None: everything.
    since_run_id: int | None = Field(default=None)
    # Feedback last written at or before this instant is in the run; the next incremental
    # run reads what was written after it.
    watermark: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    manifest: dict | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    location: str | None = Field(default=None, max_length=1000)
    error: str | None = Field(default=None, max_length=2000)
    requested_by_id: int | None = Field(default=None, foreign_key="user_account.id")
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    started_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    finished_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
