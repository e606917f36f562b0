"""``POST /recommendations``: which sub-agents the main agent shows a user, each exposure logged."""

from __future__ import annotations

from apiflask import APIBlueprint
from flask import current_app

from market.catalog.search import matcher_for
from market.identity.access import may_recommend_for
from market.identity.models import User
from market.identity.tokens import caller
from market.platform.api_deps import commit, db
from market.platform.errors import Forbidden, NotFound
from market.recommend import services as recommendations
from market.recommend.schemas import RecommendationIn, RecommendationOut, RecommendedSlot

bp = APIBlueprint("recommendations", __name__, tag="Recommendations")


@bp.post("/recommendations")
@bp.input(RecommendationIn, arg_name="body")
@bp.output(RecommendationOut, description="the slate; its exposures are logged")
@bp.doc(
    operation_id="recommendSubagents",
    description=(
        "A service with the `recommend` scope asks for any person (`user_id`); a signed-in "
        "person asks for themselves. Candidates: public, active sub-agents of the `category`, "
        "those the catalog's search finds for `context` (any language), leaving out what the user "
        "installed or wrote unless fewer than `k` others remain. The slate is chosen by "
        "Thompson sampling on each candidate's quality posterior (`GET /ranking`: E[θ] and "
        "sd(θ); one the last run has not scored starts from its nearest scored ancestor), "
        "drawn at half its sd (young-fork slots do the exploring), with 15% of slots on "
        "average reserved for young forks (the last slots). Each slot "
        "is logged as an exposure with its propensity (the probability the policy had of "
        "showing that sub-agent there, given the earlier slots), the slot's whole "
        "distribution and the policy version. Send its `exposure_id` with the usage events "
        "and feedback it leads to; feedback must cite an exposure of that sub-agent to that "
        "user (404 otherwise). The same `seed` over the same catalog and scores gives the "
        "same slate."
    ),
)
def recommend(body: RecommendationIn):
    """Choose sub-agents to show a user (scope `recommend`, or a person for themselves)."""
    who = caller()
    who.require()
    if not may_recommend_for(who, body.user_id):
        if who.kind == "service":
            who.require("recommend")  # names the missing scope
        # The same answer whether that person exists or has a taste: nothing to probe.
        raise Forbidden("People ask for recommendations for themselves only.")
    session = db()
    user = session.get(User, body.user_id)
    if user is None or user.kind != "person":
        raise NotFound(f"No user {body.user_id}.")
    client_id = who.user_id if who.kind == "service" else None
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
        personal=decision.personal,
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
