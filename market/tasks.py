"""Celery tasks: one-line wrappers around service functions (tests call the services)."""

from __future__ import annotations

from feedback.services import run_rollup
from market.celery_app import celery
from market.config import load_settings
from market.db import make_engine, session_scope
from market.maintenance import recount_counters


def _engine():
    settings = load_settings()
    return make_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)


@celery.task(name="sprig.recount_counters")
def recount_counters_task() -> dict:
    with session_scope(_engine()) as session:
        return recount_counters(session)


@celery.task(name="sprig.rollup")
def rollup_task() -> dict:
    with session_scope(_engine()) as session:
        return run_rollup(session)
