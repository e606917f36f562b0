"""Celery tasks of usage: the rollup, and the event partitions (created ahead, expired)."""

from __future__ import annotations

import time

from celery import shared_task

from market.platform.celery_app import RETRY_TRANSIENT
from market.platform.state import app_state
from market.platform.time import utcnow
from market.usage.partitions import create_partitions_ahead, drop_expired_partitions
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


@shared_task(name="sprig.create_event_partitions", **RETRY_TRANSIENT)
def create_event_partitions_task() -> dict:
    """The event table's month partitions, a few months ahead (beat: daily)."""
    with app_state().unit_of_work() as unit:
        created = create_partitions_ahead(unit.session, utcnow().date())
        unit.commit()
    return {"created": created}


@shared_task(name="sprig.drop_expired_events", **RETRY_TRANSIENT)
def drop_expired_events_task() -> dict:
    """Drop the months of raw events past SPRIG_EVENT_RETENTION_DAYS that the rollup no longer
    needs (beat: daily); the rollups stay."""
    state = app_state()
    with state.unit_of_work() as unit:
        dropped = drop_expired_partitions(
            unit.session, utcnow().date(), state.settings.event_retention_days
        )
        unit.commit()
    return {"dropped": dropped}
