"""A worker finds every task by its explicit name from the modules the Celery app includes
(each domain keeps its tasks in its own ``tasks`` module)."""

from __future__ import annotations

from market.app import create_app
from market.platform.celery_app import celery_config
from market.platform.config import load_settings
from market.platform.state import app_state


def test_every_scheduled_and_queued_task_is_found_by_name():
    celery = app_state(create_app({"database_url": "sqlite://", "secret_key": "t"})).celery
    celery.loader.import_default_modules()
    schedule = celery_config(load_settings())["beat_schedule"]
    scheduled = {entry["task"] for entry in schedule.values()}
    queued = {"sprig.export_rewards"}  # sent by POST /exports
    assert scheduled | queued <= set(celery.tasks)
