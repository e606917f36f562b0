"""Celery tasks of the ranking."""

from __future__ import annotations

from market.platform.celery_app import celery, task_engine
from market.platform.db import session_scope
from market.ranking.services import run_ranking


@celery.task(name="sprig.rank")
def rank_task(force: bool = False) -> dict:
    """Recompute the ranking scores (beat: every 5 minutes; a no-change run returns at once)."""
    with session_scope(task_engine()) as session:
        run = run_ranking(session, force=force)
        return {"mode": run.mode, "subagents": run.subagents, "seconds": run.seconds}
