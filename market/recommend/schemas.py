"""Request and response models of ``POST /recommendations``."""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel, Field

from market.catalog.models import Category
from market.platform.schemas import Id, StrictInput, whole_number
from market.recommend.services import MAX_SEED

MAX_CONTEXT_CHARS = 500


class RecommendationIn(StrictInput):
    user_id: Id = Field(description="the person to recommend for (people: themselves)")
    category: Category | None = Field(None, description="only sub-agents of this category")
    context: str | None = Field(
        None,
        max_length=MAX_CONTEXT_CHARS,
        description="what the user is doing or asking; sub-agents matching any of its words",
    )
    k: whole_number(1, 20) = Field(5, description="slate size")
    seed: whole_number(0, MAX_SEED) | None = Field(
        None, description="makes the slate and its propensities reproducible (tests, replays)"
    )


class RecommendedSlot(BaseModel):
    slot: int = Field(description="position in the slate, 0 first")
    exposure_id: UUID = Field(description="cite it in events and feedback about this item")
    subagent_id: int
    version_id: int = Field(description="the latest version, the one to install")
    title: str
    summary: str
    category: str
    propensity: float = Field(
        description="probability the policy had of showing this sub-agent in this slot, "
        "given the earlier slots"
    )
    young_slot: bool = Field(description="the slot was reserved for young forks")


class RecommendationOut(BaseModel):
    decision_id: UUID
    policy_version: str
    user_id: int
    seed: int = Field(description="the seed used (the one sent, or a fresh one): a replay key")
    candidates: int = Field(description="how many sub-agents the policy chose among")
    personal: bool = Field(
        description="the person's taste, learned from their own ratings, moved the candidates' "
        "scores (false: everyone's order)"
    )
    items: list[RecommendedSlot] = Field(description="fewer than k when fewer are relevant")
