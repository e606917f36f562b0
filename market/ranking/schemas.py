"""The ranking figures the API returns."""

from __future__ import annotations

from pydantic import BaseModel, Field

from market.platform.schemas import UtcDatetime


class RankingOut(BaseModel):
    quality: float = Field(description="E[θ]: rater-corrected quality, standard rating units")
    quality_sd: float = Field(description="sd(θ)")
    display: float = Field(description="E[θ] − 1.64·sd(θ), the `top` order")
    branch_value: float = Field(description="E[max θ over this and its descendants]")
    fork_gain: float = Field(description="how much its forks tend to improve on it")
    rising: float | None = Field(description="recent forks: E[θ − θ_parent] / sd")
    trending: float = Field(description="ln((users last 7 days + 5) / (weekly users before + 5))")
    active_users: float = Field(description="distinct users, each decayed by a 30-day half-life")
    retention: float = Field(description="shrunk share of users back after 7 days")
    rating_count: int
    young: bool = Field(description="own evidence worth under 10 typical ratings")
    computed_at: UtcDatetime


class RankingRunOut(BaseModel):
    id: int
    finished_at: UtcDatetime | None
    subagents: int
    ratings: int
    seconds: float
    prior: dict[str, float] = Field(
        description="μ0, σ0² (roots), δ̄, τ² (fork step) of the lineage prior, estimated"
    )
    noise_var: float | None = Field(description="σ², residual variance of one rating")


class RankingMethodOut(BaseModel):
    formulas: str = Field(description="the ranking's definition, formula by formula")
    last_run: RankingRunOut | None


class BestDescendantOut(BaseModel):
    id: int
    title: str
    depth: int
    probability_better: float
