"""Celery tasks of usage: the rollup."""

from __future__ import annotations

import time

from celery import shared_task

from market.platform.celery_app import RETRY_TRANSIENT
from market.platform.state import app_state
from market.usage.rollups import run_rollup

# Beat runs the rollup every minute: a run drains for at most this long, well inside its soft
# time limit (SPRIG_ROLLUP_TIME_LIMIT_SECONDS).
DRAIN_BUDGET_S = 50.0


@shared_task(name="sprig.rollup", **RETRY_TRANSIENT)
def rollup_task(budget_seconds: float = DRAIN_BUDGET_S) -> dict:
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
