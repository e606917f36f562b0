"""Celery tasks of the ranking."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task

from market.platform.celery_app import RETRY_TRANSIENT
from market.platform.state import app_state
from market.ranking.services import TASTE_RETRY_MARGIN, run_ranking


@shared_task(name="sprig.rank", **RETRY_TRANSIENT)
def rank_task(force: bool = False) -> dict:
    """Recompute the ranking scores (beat: every 5 minutes; a no-change run returns at once)."""
    state = app_state()
    # A fit that has run this long was killed at the task's limit: its taste is lost.
    limit = timedelta(seconds=state.settings.rank_time_limit_seconds)
    run = run_ranking(state.unit_of_work, force=force, taste_retry_after=limit + TASTE_RETRY_MARGIN)
    return {"mode": run.mode, "subagents": run.subagents, "seconds": run.seconds}
