"""How ranking works: the published formulas and the parameters of the last run."""

from __future__ import annotations

from apiflask import APIBlueprint
from sqlalchemy import select

import evolution.ranking
from market.platform.api_deps import db
from market.ranking.models import RankingRun
from market.ranking.schemas import RankingMethodOut

bp = APIBlueprint("ranking", __name__, tag="Ranking")


@bp.get("/ranking")
@bp.output(RankingMethodOut)
@bp.doc(operation_id="getRankingMethod")
def ranking_method():
    """How Sprig ranks sub-agents: the formulas behind `sort=top|trending|rising`, each
    sub-agent's `ranking` figures and its `best_descendant`, with the parameters the last
    ranking run estimated from the data."""
    last = (
        db()
        .scalars(
            select(RankingRun).where(RankingRun.mode != "skipped").order_by(RankingRun.id.desc())
        )
        .first()
    )
    return RankingMethodOut(
        formulas=evolution.ranking.__doc__.strip(),
        last_run=None
        if last is None
        else {
            "id": last.id,
            "finished_at": last.finished_at,
            "subagents": last.subagents,
            "ratings": last.ratings,
            "seconds": last.seconds,
            "prior": last.parameters.get("prior", {}),
            "noise_var": last.parameters.get("noise_var"),
        },
    )
