"""Usage events, feedback, and the rollups built from them.

Events are keyed by their client-made UUID, so a retried batch can only ever store an event
once: the primary key is the deduplication (on PostgreSQL the table is partitioned by month and
the key is (event_id, occurred_day), the same for a retry: ``market.usage.partitions``). Every
stored event marks its (sub-agent, day) as dirty in the same transaction, which is how rollups
stay incremental and never miss a day.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Date,
    DateTime,
    Index,
    PrimaryKeyConstraint,
    UniqueConstraint,
    text,
)
from sqlmodel import Field, SQLModel

from market.platform.time import timestamp_field


class UsageEvent(SQLModel, table=True):
    __tablename__ = "usage_event"
    __table_args__ = (
        Index("ix_usage_event_subagent_day", "subagent_id", "occurred_day"),
        # Events arrive in time order, so a BRIN index finds a day's pages for a few bytes
        # per 1 MB of table; the rollup reads whole days through it.
        Index("ix_usage_event_day_brin", "occurred_day", postgresql_using="brin"),
        Index(
            "ix_usage_event_uninstalls",
            "subagent_id",
            "occurred_day",
            postgresql_where=text("kind = 'uninstall'"),
            sqlite_where=text("kind = 'uninstall'"),
        ),
    )

    # No foreign keys on purpose: the ingest statement checks every reference itself (and
    # rejects per item), users and sub-agents are never deleted, and the four key checks made
    # bulk inserts 3x slower.
    event_id: uuid.UUID = Field(primary_key=True)
    client_id: int
    user_id: int
    subagent_id: int
    version_id: int
    kind: str = Field(max_length=16)  # open | action | session_end | error | uninstall
    occurred_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    # The UTC day, stored so rollups group by a plain column on every database.
    occurred_day: date = Field(sa_column=Column(Date, nullable=False))
    duration_ms: int | None = Field(default=None)
    properties: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    exposure_id: uuid.UUID | None = Field(default=None)
    received_at: datetime = timestamp_field()


class Feedback(SQLModel, table=True):
    """One rating per user and version: rating again replaces it."""

    __tablename__ = "feedback"
    __table_args__ = (
        UniqueConstraint("user_id", "version_id", name="uq_feedback_user_version"),
        Index("ix_feedback_subagent_day", "subagent_id", "updated_day"),
    )

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    subagent_id: int = Field(foreign_key="subagent.id")
    version_id: int = Field(foreign_key="subagent_version.id")
    # The service that rated on the person's behalf; None when they rated themselves.
    client_id: int | None = Field(default=None, foreign_key="user_account.id")
    scale: str = Field(max_length=8)  # stars | thumbs
    rating: int  # 1..5 for stars; 0 (down) or 1 (up) for thumbs
    comment: str | None = Field(default=None, max_length=1000)
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    exposure_id: uuid.UUID | None = Field(default=None)
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()
    # The UTC day of the last write: a rating counts once, on the day it last changed.
    updated_day: date = Field(sa_column=Column(Date, nullable=False))
    # Why a rating stored before the rules (``market.usage.ratings``) does not count:
    # "author" or "not a user". None for every rating that counts.
    excluded_reason: str | None = Field(default=None, max_length=16)


# The ratings that count (in stats, pages, ranking, suggestions and exports): every one
# written under the rules, none of the older ones that break them.
COUNTED_RATING = Feedback.excluded_reason.is_(None)


class RollupDirty(SQLModel, table=True):
    """A (sub-agent, day) whose stats must be recomputed, written in the same transaction as
    what changed it. Append-only: the rollup deletes exactly the rows it read, so a mark
    committed while a rollup runs is never lost (an upsert could be)."""

    __tablename__ = "rollup_dirty"

    id: int | None = Field(default=None, primary_key=True)
    subagent_id: int
    day: date = Field(sa_column=Column(Date, nullable=False))


class DailyStats(SQLModel, table=True):
    __tablename__ = "daily_stats"
    __table_args__ = (
        # The key's index carries active_users: the fork tree sums 30 days of it for every node
        # it draws, and reads that from the index alone. A node's days were written by 30
        # different days' rollups, so read from the table they cost a page each.
        PrimaryKeyConstraint(
            "subagent_id", "day", name="daily_stats_pkey", postgresql_include=["active_users"]
        ),
    )

    subagent_id: int = Field(foreign_key="subagent.id", primary_key=True)
    day: date = Field(sa_column=Column(Date, primary_key=True))
    opens: int = 0
    active_users: int = 0  # distinct users with any event that day
    sessions: int = 0
    # Summed durations of a busy day overflow 32 bits (596 hours): 64-bit.
    time_spent_ms: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    installs: int = 0
    uninstalls: int = 0
    errors: int = 0
    ratings: int = 0  # ratings last written that day
    stars_1: int = 0
    stars_2: int = 0
    stars_3: int = 0
    stars_4: int = 0
    stars_5: int = 0
    thumbs_up: int = 0
    thumbs_down: int = 0


class RetentionCohort(SQLModel, table=True):
    """Users who installed on ``install_day`` and how many were active again on day 1/7/30."""

    __tablename__ = "retention_cohort"

    subagent_id: int = Field(foreign_key="subagent.id", primary_key=True)
    install_day: date = Field(sa_column=Column(Date, primary_key=True))
    cohort_size: int = 0
    day1: int = 0
    day7: int = 0
    day30: int = 0


class InstallLog(SQLModel, table=True):
    """Every install and uninstall as it happened (the install row keeps only the latest)."""

    __tablename__ = "install_log"
    __table_args__ = (Index("ix_install_log_subagent_day", "subagent_id", "day"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id")
    subagent_id: int = Field(foreign_key="subagent.id")
    action: str = Field(max_length=16)  # install | uninstall
    at: datetime = timestamp_field()
    day: date = Field(sa_column=Column(Date, nullable=False))
