"""A real Celery worker process enforces the task time limits the settings give, and logs the
failure with the task's id: the soft limit raises inside the task, the hard limit kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded

ROOT = Path(__file__).resolve().parents[3]
REDIS_URL = os.environ.get("SPRIG_TEST_REDIS_URL")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not REDIS_URL, reason="needs SPRIG_TEST_REDIS_URL (a real broker)"),
]


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """A prefork worker on a queue of its own; yields (client app, queue, log file)."""
    folder = tmp_path_factory.mktemp("worker")
    queue = f"nap-{uuid.uuid4().hex[:8]}"
    log_path = folder / "worker.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SPRIG_DATABASE_URL": f"sqlite:///{folder / 'sprig.db'}",
        "SPRIG_REDIS_URL": REDIS_URL,
        "SPRIG_CELERY_EAGER": "0",
        "SPRIG_SECRET_KEY": "test",
        # Soft limit 1 s, hard limit 2 s (the soft one is 90% of the hard, at least 1 s).
        "SPRIG_ROLLUP_TIME_LIMIT_SECONDS": "2",
    }
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "tests.integration.platform.celery_nap_app:celery",
                "worker",
                "--pool=prefork",
                "--concurrency=1",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                f"--queues={queue}",
                f"--hostname={queue}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    client = Celery("nap-client", broker=REDIS_URL, backend=REDIS_URL)
    try:
        deadline = time.monotonic() + 60
        while "ready." not in log_path.read_text():
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.2)
        yield client, queue, log_path
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_log(log_path: Path, text: str) -> str:
    deadline = time.monotonic() + 20
    while text not in (content := log_path.read_text()):
        assert time.monotonic() < deadline, content
        time.sleep(0.2)
    return content


def test_a_task_within_its_limit_finishes(worker):
    client, queue, _log = worker
    result = client.send_task("tests.nap", args=[0.1], queue=queue)
    assert result.get(timeout=30) == "rested"


def test_each_worker_process_builds_its_own_connection_pools(worker):
    """A forked child must not share its parent's pooled connections."""
    client, queue, _log = worker
    assert client.send_task("tests.own_pools", queue=queue).get(timeout=30) is True


def test_the_soft_limit_stops_a_task_and_the_failure_is_logged(worker):
    client, queue, log_path = worker
    result = client.send_task("tests.nap", args=[30], queue=queue)
    with pytest.raises(SoftTimeLimitExceeded):
        result.get(timeout=30, propagate=True)
    content = _wait_for_log(log_path, f"task tests.nap [{result.id}] failed")
    assert "SoftTimeLimitExceeded" in content


def test_the_hard_limit_kills_a_task_that_ignores_the_soft_one(worker):
    client, queue, log_path = worker
    result = client.send_task("tests.stubborn_nap", args=[30], queue=queue)
    with pytest.raises(TimeLimitExceeded):
        result.get(timeout=30, propagate=True)
    content = _wait_for_log(log_path, f"task tests.stubborn_nap [{result.id}] failed")
    assert "TimeLimitExceeded" in content
    # The pool's own line about the kill may come after the task's failure line (CI saw it).
    _wait_for_log(log_path, "Hard time limit (2")
    # The worker replaced the killed process and goes on serving.
    assert client.send_task("tests.nap", args=[0.1], queue=queue).get(timeout=30) == "rested"
