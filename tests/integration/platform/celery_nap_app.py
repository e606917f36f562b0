"""A worker app for the time-limit test: Sprig's own Celery app (built from the environment by
the factory, as ``market.entrypoints.worker`` does) plus two napping tasks that get the rollup's
limits through the same task annotations the real tasks get theirs from, and one that says
whether its process opened pools of its own. Sprig's tasks keep no result; these do, for the
test to read."""

from __future__ import annotations

import time

from celery.exceptions import SoftTimeLimitExceeded

from market.app import create_app
from market.platform.state import app_state

state = app_state(create_app())
celery = state.celery
# The pools as the parent process built them, before the worker forks its children.
INHERITED_POOLS = (state.engine.pool, state.read_engine.pool)
celery.conf.task_annotations["tests.nap"] = celery.conf.task_annotations["sprig.rollup"]
celery.conf.task_annotations["tests.stubborn_nap"] = celery.conf.task_annotations["sprig.rollup"]


@celery.task(name="tests.nap", ignore_result=False)
def nap(seconds: float) -> str:
    time.sleep(seconds)
    return "rested"


@celery.task(name="tests.stubborn_nap", ignore_result=False)
def stubborn_nap(seconds: float) -> str:
    """Swallows the soft limit, so only the hard limit can stop it."""
    try:
        time.sleep(seconds)
    except SoftTimeLimitExceeded:
        time.sleep(seconds)
    return "rested"


@celery.task(name="tests.own_pools", ignore_result=False)
def own_pools() -> bool:
    """Whether this worker process replaced the connection pools it inherited."""
    return all(
        current is not inherited
        for current, inherited in zip(
            (state.engine.pool, state.read_engine.pool), INHERITED_POOLS, strict=True
        )
    )
