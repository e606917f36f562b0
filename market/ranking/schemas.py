"""The ranking run and method the ``/ranking`` API returns. (A sub-agent's own figures are
part of its response, ``market.catalog.schemas.RankingOut``.)"""

from __future__ import annotations

from pydantic import BaseModel, Field

from market.platform.schemas import UtcDatetime


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
