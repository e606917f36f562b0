"""``POST /recommendations``: which sub-agents the main agent shows a user, each exposure logged."""

from __future__ import annotations

from uuid import UUID

from apiflask import APIBlueprint
from flask import current_app
from pydantic import BaseModel, Field

from market import recommendations
from market.api.deps import caller, commit, db
from market.character_search import matcher_for
from market.errors import Forbidden, NotFound
from market.models import User
from market.schemas import Category, Id, StrictInput, whole_number

bp = APIBlueprint("recommendations", __name__, tag="Recommendations")

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
    seed: whole_number(0, recommendations.MAX_SEED) | None = Field(
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
    items: list[RecommendedSlot] = Field(description="fewer than k when fewer are relevant")


@bp.post("/recommendations")
@bp.input(RecommendationIn, arg_name="body")
@bp.output(RecommendationOut, description="the slate; its exposures are logged")
@bp.doc(
    description=(
        "A service with the `recommend` scope asks for any person (`user_id`); a signed-in "
        "person asks for themselves. Candidates: public, active sub-agents of the `category`, "
        "the best full-text matches of any word of `context`, leaving out what the user "
        "installed or wrote unless fewer than `k` others remain. The slate is chosen by "
        "Thompson sampling on each candidate's quality posterior (`GET /ranking`: E[θ] and "
        "sd(θ); one the last run has not scored starts from its nearest scored ancestor), "
        "with 15% of slots on average reserved for young forks (the last slots). Each slot "
        "is logged as an exposure with its propensity (the probability the policy had of "
        "showing that sub-agent there, given the earlier slots), the slot's whole "
        "distribution and the policy version. Send its `exposure_id` with the usage events "
        "and feedback it leads to; feedback must cite an exposure of that sub-agent to that "
        "user (404 otherwise). The same `seed` over the same catalog and scores gives the "
        "same slate."
    )
)
def recommend(body: RecommendationIn):
    """Choose sub-agents to show a user (scope `recommend`, or a person for themselves)."""
    who = caller()
    who.require()
    session = db()
    if who.kind == "service":
        who.require("recommend")
        user = session.get(User, body.user_id)
        if user is None or user.kind != "person":
            raise NotFound(f"No user {body.user_id}.")
        client_id = who.user_id
    else:
        if body.user_id != who.user_id:
            raise Forbidden("People ask for recommendations for themselves only.")
        client_id = None
    decision = recommendations.recommend(
        session,
        user_id=body.user_id,
        k=body.k,
        category=body.category.value if body.category else None,
        context=body.context,
        seed=body.seed,
        client_id=client_id,
        text_matches=matcher_for(current_app, session),
    )
    commit()
    return RecommendationOut(
        decision_id=decision.decision_id,
        policy_version=decision.policy_version,
        user_id=decision.user_id,
        seed=decision.seed,
        candidates=decision.candidates,
        items=[
            RecommendedSlot(
                slot=shown.slot,
                exposure_id=shown.exposure_id,
                subagent_id=shown.candidate.subagent_id,
                version_id=shown.candidate.version_id,
                title=shown.candidate.title,
                summary=shown.candidate.summary,
                category=shown.candidate.category,
                propensity=shown.propensity,
                young_slot=shown.young_slot,
            )
            for shown in decision.slots
        ],
    )
