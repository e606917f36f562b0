"""Celery tasks: one-line wrappers around service functions (tests call the services)."""

from __future__ import annotations

import time

from feedback.models import utcnow
from market.celery_app import celery
from market.config import load_settings
from market.db import make_engine, session_scope
from market.feedback_store import run_rollup
from market.maintenance import delete_dead_web_sessions, forget_old_contexts, recount_counters
from market.ranking import run_ranking
from market.reward_exports import execute_run


def _engine():
    settings = load_settings()
    return make_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)


@celery.task(name="sprig.recount_counters")
def recount_counters_task() -> dict:
    with session_scope(_engine()) as session:
        return recount_counters(session)


@celery.task(name="sprig.forget_old_contexts")
def forget_old_contexts_task() -> dict:
    """Erase exposure context text older than SPRIG_CONTEXT_RETENTION_DAYS (beat: nightly)."""
    keep_days = load_settings().context_retention_days
    with session_scope(_engine()) as session:
        return forget_old_contexts(session, utcnow(), keep_days)


@celery.task(name="sprig.delete_dead_web_sessions")
def delete_dead_web_sessions_task() -> dict:
    with session_scope(_engine()) as session:
        return delete_dead_web_sessions(session, utcnow())


@celery.task(name="sprig.rollup")
def rollup_task(budget_seconds: float = 50.0) -> dict:
    """Drain the marks (beat runs this every minute), in transactions of bounded size."""
    engine = _engine()
    total = {"marks": 0, "days": 0, "cohorts": 0}
    deadline = time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        with session_scope(engine) as session:
            done = run_rollup(session)
        for name in total:
            total[name] += done[name]
        if not done["marks"]:
            break
    return total


@celery.task(name="sprig.rank")
def rank_task(force: bool = False) -> dict:
    """Recompute the ranking scores (beat: every 5 minutes; a no-change run returns at once)."""
    with session_scope(_engine()) as session:
        run = run_ranking(session, force=force)
        return {"mode": run.mode, "subagents": run.subagents, "seconds": run.seconds}


@celery.task(name="sprig.export_rewards")
def export_rewards_task(run_id: int) -> dict:
    """Build and publish export run ``run_id`` (idempotent: a finished run is left alone)."""
    settings = load_settings()
    run = execute_run(
        _engine(), run_id, settings.export_dir, settle_seconds=settings.export_settle_seconds
    )
    return {"run": run.id, "status": run.status, "error": run.error}
