"""Tables the ranking writes and the exposure policy logs to.

``subagent_score`` holds the last ranking run's figures for every sub-agent (one row each,
replaced by every run), so browse sorts and pages read plain indexed columns and never run the
model. ``rater_offset`` keeps each rater's leniency between runs: the next run starts from it
(3 rounds of fitting instead of 10). ``rater_taste`` and ``subagent_taste`` hold the personal
scores' factors of the last full run. ``exposure`` records every sub-agent the main agent was
shown by ``POST /recommendations``, with the probability the policy had of showing it there,
so events and feedback that cite the exposure can later be reweighted off-policy.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, Float, Index, Integer
from sqlmodel import Field, SQLModel

from market.platform.time import timestamp_field


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


class RaterTaste(SQLModel, table=True):
    """p_u of the personal scores (``evolution.personal``): a rater's taste, learned from their
    own ratings by the last full run. Personal: read only to order what this person is shown,
    never exported, listed or logged."""

    __tablename__ = "rater_taste"

    user_id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    factors: list = Field(sa_column=Column(JSON, nullable=False))


class SubAgentTaste(SQLModel, table=True):
    """q_v of the personal scores: which tastes a sub-agent suits (a fork without ratings of
    its own inherits its parent's), from the last full run."""

    __tablename__ = "subagent_taste"

    subagent_id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    factors: list = Field(sa_column=Column(JSON, nullable=False))


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
