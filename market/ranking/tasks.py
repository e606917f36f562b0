"""Celery tasks of the ranking."""

from __future__ import annotations

from celery import shared_task

from market.platform.celery_app import RETRY_TRANSIENT
from market.platform.state import app_state
from market.ranking.services import run_ranking


@shared_task(name="sprig.rank", **RETRY_TRANSIENT)
def rank_task(force: bool = False) -> dict:
    """Recompute the ranking scores (beat: every 5 minutes; a no-change run returns at once)."""
    run = run_ranking(app_state().unit_of_work, force=force)
    return {"mode": run.mode, "subagents": run.subagents, "seconds": run.seconds}
