"""Celery tasks of usage: the rollup."""

from __future__ import annotations

import time

from market.platform.celery_app import celery, task_engine
from market.platform.db import session_scope
from market.usage.rollups import run_rollup


@celery.task(name="sprig.rollup")
def rollup_task(budget_seconds: float = 50.0) -> dict:
    """Drain the marks (beat runs this every minute), in transactions of bounded size."""
    engine = task_engine()
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
