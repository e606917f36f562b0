"""Tables the ranking writes and the exposure policy logs to.

``subagent_score`` holds the last ranking run's figures for every sub-agent (one row each,
replaced by every run), so browse sorts and pages read plain indexed columns and never run the
model. ``rater_offset`` keeps each rater's leniency between runs: the next run starts from it
(3 rounds of fitting instead of 10). ``exposure`` records every sub-agent the main agent was
shown by ``POST /recommendations``, with the probability the policy had of showing it there,
so events and feedback that cite the exposure can later be reweighted off-policy.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import JSON, Column, DateTime, Float, Index, Integer
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


def timestamp_field(nullable: bool = False):
    """A timezone-aware timestamp column, set to now on insert unless ``nullable``. The one
    definition every table module uses (feedback and the web shell import it from here)."""
    return Field(
        default_factory=utcnow if not nullable else None,
        sa_column=Column(DateTime(timezone=True), nullable=nullable),
    )


class SubAgentScore(SQLModel, table=True):
    __tablename__ = "subagent_score"
    __table_args__ = (
        Index("ix_subagent_score_display", "display", "subagent_id"),
        Index("ix_subagent_score_trending", "trending", "subagent_id"),
        Index("ix_subagent_score_rising", "rising", "subagent_id"),
    )

    # No foreign key: a run writes a whole table of scores at once, and a sub-agent deleted
    # meanwhile (none are, today) must not fail the run.
    subagent_id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    quality: float  # E[θ], rater-corrected, in standard rating units
    quality_sd: float  # sd(θ)
    display: float  # E[θ] − 1.64 sd(θ): the "top" order
    branch_value: float  # E[max θ over the sub-agent and its descendants]
    best_descendant_id: int | None = Field(default=None)
    p_descendant_better: float = 0.0
    fork_gain: float = 0.0
    # Recent forks only (NULL otherwise): how surely the fork beats its parent.
    rising: float | None = Field(default=None, sa_column=Column(Float, nullable=True))
    trending: float = 0.0  # ln((u7 + 5) / (weekly baseline + 5))
    active_users: float = 0.0  # distinct users, each decayed by a 30-day half-life
    retention: float = 0.0
    usage_score: float = 0.0
    rating_count: int = 0
    young: bool = True  # own evidence worth under 10 typical ratings: the exploration pool
    run_id: int = 0
    computed_at: datetime = timestamp_field()


class RaterOffset(SQLModel, table=True):
    """b_u of the ranking's rater model: how much more generous than average user u rates."""

    __tablename__ = "rater_offset"

    user_id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    leniency: float


class RankingRun(SQLModel, table=True):
    __tablename__ = "ranking_run"

    id: int | None = Field(default=None, primary_key=True)
    started_at: datetime = timestamp_field()
    finished_at: datetime | None = timestamp_field(nullable=True)
    mode: str = Field(default="full", max_length=16)  # full | incremental
    subagents: int = 0
    ratings: int = 0
    trees_recomputed: int = 0
    seconds: float = 0.0
    # μ0, σ0², δ̄, τ² of the lineage prior, the rating noise, and the watermarks the next
    # incremental run starts from.
    parameters: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class Exposure(SQLModel, table=True):
    __tablename__ = "exposure"
    __table_args__ = (
        Index("ix_exposure_decision", "decision_id", "slot"),
        Index("ix_exposure_user_time", "user_id", "created_at"),
        Index("ix_exposure_subagent", "subagent_id", "created_at"),
    )

    # The id the main agent cites in later events and feedback.
    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    decision_id: uuid.UUID  # one per slate: the propensities of a decision's slots
    slot: int
    user_id: int
    subagent_id: int
    version_id: int
    propensity: float  # P(policy shows this sub-agent in this slot | earlier slots)
    young_slot: bool = False
    policy_version: str = Field(max_length=40)
    context: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # The slot's whole distribution, {sub-agent id: probability} over the candidates the
    # policy could have shown there (sums to one), for off-policy evaluation of other policies.
    slot_distribution: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    client_id: int | None = Field(default=None)
    created_at: datetime = timestamp_field()
