"""Celery tasks of usage: the rollup."""

from __future__ import annotations

import time

from celery import shared_task

from market.platform.state import app_state
from market.usage.rollups import run_rollup


@shared_task(name="sprig.rollup")
def rollup_task(budget_seconds: float = 50.0) -> dict:
    """Drain the marks (beat runs this every minute), in transactions of bounded size."""
    state = app_state()
    total = {"marks": 0, "days": 0, "cohorts": 0}
    deadline = time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        with state.unit_of_work() as unit:
            done = run_rollup(unit.session)
            unit.commit()
        for name in total:
            total[name] += done[name]
        if not done["marks"]:
            break
    return total
