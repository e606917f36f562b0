"""Celery tasks of the nightly maintenance: one-line wrappers around service functions (tests
call the services)."""

from __future__ import annotations

from market.catalog.maintenance import (
    delete_dead_web_sessions,
    forget_old_contexts,
    recount_counters,
)
from market.platform.celery_app import celery, task_engine
from market.platform.config import load_settings
from market.platform.db import session_scope
from market.platform.time import utcnow


@celery.task(name="sprig.recount_counters")
def recount_counters_task() -> dict:
    with session_scope(task_engine()) as session:
        return recount_counters(session)


@celery.task(name="sprig.forget_old_contexts")
def forget_old_contexts_task() -> dict:
    """Erase exposure context text older than SPRIG_CONTEXT_RETENTION_DAYS (beat: nightly)."""
    keep_days = load_settings().context_retention_days
    with session_scope(task_engine()) as session:
        return forget_old_contexts(session, utcnow(), keep_days)


@celery.task(name="sprig.delete_dead_web_sessions")
def delete_dead_web_sessions_task() -> dict:
    with session_scope(task_engine()) as session:
        return delete_dead_web_sessions(session, utcnow())
