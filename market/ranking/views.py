"""How ranking works: the page that publishes the formulas and the last run's parameters."""

from __future__ import annotations

from flask import render_template
from sqlmodel import select

import evolution.ranking
from market.platform.api_deps import db
from market.ranking.models import RankingRun
from market.web.blueprint import bp


@bp.get("/ranking")
def ranking_page():
    """How ranking works: the published formulas and the last run's estimated parameters."""
    session = db()
    last = session.scalars(
        select(RankingRun).where(RankingRun.mode != "skipped").order_by(RankingRun.id.desc())
    ).first()
    return render_template(
        "web/ranking.html", formulas=evolution.ranking.__doc__.strip(), last_run=last
    )
