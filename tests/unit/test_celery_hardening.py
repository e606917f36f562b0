"""The Celery settings that keep a task from running twice or forever: a time limit for every
task, a visibility timeout above the longest of them, bounded worker processes, and retries
only for the idempotent tasks."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError

from market.app import create_app
from market.platform.celery_app import celery_config, task_time_limits, visibility_timeout
from market.platform.config import Settings
from market.platform.state import app_state
from market.usage.tasks import DRAIN_BUDGET_S


@pytest.fixture(scope="module")
def celery():
    app = create_app({"database_url": "sqlite://", "secret_key": "t"})
    celery = app_state(app).celery
    celery.loader.import_default_modules()
    yield celery
    app_state(app).engine.dispose()


def sprig_tasks(celery) -> dict:
    return {name: task for name, task in celery.tasks.items() if name.startswith("sprig.")}


def test_every_task_has_a_soft_limit_below_its_hard_limit(celery):
    limits = task_time_limits(Settings())
    assert set(limits) == set(sprig_tasks(celery))
    for name, (soft, hard) in limits.items():
        assert 0 < soft < hard, name


def test_the_worker_applies_each_tasks_limits(celery):
    limits = task_time_limits(Settings())
    for name, task in sprig_tasks(celery).items():
        assert (task.soft_time_limit, task.time_limit) == limits[name], name


def test_no_task_asks_for_a_result_so_a_send_never_waits_on_the_result_store(celery):
    """Sending a task that keeps a result first subscribes to the result store; with Redis away
    that retried for 19 s inside the request that sent it (a publish offering its new version
    upstream, an export). Each task writes what it did to the database, so none keeps one."""
    assert celery.conf.task_ignore_result
    for name, task in sprig_tasks(celery).items():
        assert task.ignore_result, name


@pytest.mark.parametrize(
    "settings",
    [Settings(), Settings(export_time_limit_seconds=6 * 3600), Settings(rank_time_limit_seconds=1)],
)
def test_a_task_is_never_redelivered_while_it_may_still_run(settings):
    """With acks_late, Redis hands an unacknowledged task to another worker after the visibility
    timeout: it must outlast the longest hard limit, which ends any task."""
    config = celery_config(settings)
    longest = max(hard for _soft, hard in task_time_limits(settings).values())
    assert config["task_acks_late"]
    assert visibility_timeout(settings) > longest
    assert config["broker_transport_options"]["visibility_timeout"] == visibility_timeout(settings)
    for annotation in config["task_annotations"].values():
        assert annotation["time_limit"] < config["broker_transport_options"]["visibility_timeout"]


def test_the_rollups_drain_budget_ends_before_its_soft_limit():
    soft, _hard = task_time_limits(Settings())["sprig.rollup"]
    assert soft > DRAIN_BUDGET_S


def test_worker_processes_are_recycled():
    assert 0 < celery_config(Settings())["worker_max_tasks_per_child"] <= 1000


def test_only_idempotent_tasks_retry_on_database_errors(celery):
    retried = {
        name for name, task in sprig_tasks(celery).items() if getattr(task, "autoretry_for", ())
    }
    assert retried == set(sprig_tasks(celery)) - {"sprig.export_rewards"}
    for name in retried:
        task = celery.tasks[name]
        assert OperationalError in task.autoretry_for
        assert 0 < task.max_retries <= 10
