"""A worker app for the time-limit test: Sprig's own Celery app (built from the environment by
the factory, as ``market.entrypoints.worker`` does) plus two napping tasks that get the rollup's
limits through the same task annotations the real tasks get theirs from."""

from __future__ import annotations

import time

from celery.exceptions import SoftTimeLimitExceeded

from market.app import create_app
from market.platform.state import app_state

celery = app_state(create_app()).celery
celery.conf.task_annotations["tests.nap"] = celery.conf.task_annotations["sprig.rollup"]
celery.conf.task_annotations["tests.stubborn_nap"] = celery.conf.task_annotations["sprig.rollup"]


@celery.task(name="tests.nap")
def nap(seconds: float) -> str:
    time.sleep(seconds)
    return "rested"


@celery.task(name="tests.stubborn_nap")
def stubborn_nap(seconds: float) -> str:
    """Swallows the soft limit, so only the hard limit can stop it."""
    try:
        time.sleep(seconds)
    except SoftTimeLimitExceeded:
        time.sleep(seconds)
    return "rested"
