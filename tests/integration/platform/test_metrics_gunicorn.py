"""/metrics under a real gunicorn with two workers (prometheus_client's multiprocess mode):
whichever worker answers a scrape reports the requests both served, and a worker that dies
keeps its counts while its live gauges (the connection pool) leave the sums.

SQLite only: what is tested is gunicorn's processes, not the database.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from market.app import create_app
from market.platform.metrics import every_process_registry
from market.platform.migrate import upgrade
from market.platform.state import app_state
from tests import gunicorn_server
from tests.factories import make_user

pytestmark = [pytest.mark.slow]

HEALTH = "/api/v1/health"
SERVED = {"route": HEALTH, "method": "GET", "status": "200"}
REQUEST_COUNT = "sprig_http_request_duration_seconds_count"
TIMEOUT = (5.0, 30.0)


def samples_of(text: str) -> dict[tuple[str, frozenset], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def served_by_each_worker(metrics_dir: Path, pids: list[int], tmp_path: Path) -> dict[int, float]:
    """Health requests each worker counted, read from that worker's own files alone."""
    counts = {}
    for pid in pids:
        own = tmp_path / f"only-{pid}"
        own.mkdir(exist_ok=True)
        for path in metrics_dir.glob(f"*_{pid}.db"):
            shutil.copy(path, own / path.name)
        registry = every_process_registry(str(own))
        counts[pid] = registry.get_sample_value(REQUEST_COUNT, SERVED) or 0.0
    return counts


@pytest.fixture
def server(tmp_path):
    url = f"sqlite:///{tmp_path / 'metrics.db'}"
    upgrade(url)
    app = create_app({"database_url": url, "secret_key": "test"})
    monitor = make_user(
        app_state(app).engine, "prometheus", kind="service", scopes=["metrics:read"]
    )
    app_state(app).engine.dispose()
    metrics_dir = tmp_path / "metrics"
    served = gunicorn_server.start(
        {
            "SPRIG_DATABASE_URL": url,
            "SPRIG_SECRET_KEY": "test",
            "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        },
        tmp_path / "gunicorn.log",
        workers=2,
    )
    try:
        yield served, monitor, metrics_dir
    finally:
        gunicorn_server.stop(served)


def scrape(base: str, headers: dict | None = None) -> requests.Response:
    # A new connection each time, so either worker may answer.
    return requests.get(f"{base}/metrics", headers=headers, timeout=TIMEOUT)


def test_counts_of_both_workers_add_up_and_survive_a_worker(server, tmp_path):
    served, monitor, metrics_dir = server
    assert scrape(served.base).status_code == 401
    before = samples_of(scrape(served.base, monitor.headers).text)
    workers = gunicorn_server.children(served.process.pid)
    assert len(workers) == 2

    def health(_):
        return requests.get(f"{served.base}{HEALTH}", timeout=TIMEOUT).status_code

    sent = 0
    with ThreadPoolExecutor(max_workers=8) as pool:
        # Parallel requests on fresh connections until both workers have served some.
        while sent < 800:
            assert set(pool.map(health, range(40))) == {200}
            sent += 40
            per_worker = served_by_each_worker(metrics_dir, workers, tmp_path)
            if all(per_worker.values()):
                break
    baseline = before.get((REQUEST_COUNT, frozenset(SERVED.items())), 0.0)
    assert all(per_worker.values()), per_worker
    assert sum(per_worker.values()) == baseline + sent

    # Several scrapes, whichever worker answers each: the same sum of both.
    for _ in range(6):
        samples = samples_of(scrape(served.base, monitor.headers).text)
        assert samples[(REQUEST_COUNT, frozenset(SERVED.items()))] == baseline + sent
    one_worker_pool = samples[("sprig_db_pool_size", frozenset({("pool", "write")}))] / 2
    assert one_worker_pool > 0

    # A worker dies: gunicorn replaces it; its counts stay, its pool leaves the live sum.
    victim = workers[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = gunicorn_server.children(served.process.pid)
        if victim not in now and len(now) == 2:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("gunicorn did not replace the worker:\n" + served.log_tail())
    pool_key = ("sprig_db_pool_size", frozenset({("pool", "write")}))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until the new worker has built its app and pool
        samples = samples_of(scrape(served.base, monitor.headers).text)
        if samples[pool_key] != one_worker_pool:
            break
        time.sleep(0.2)
    # Two live pools, not three: the dead worker's gauge left with it (gunicorn's child_exit).
    assert samples[pool_key] == 2 * one_worker_pool
    assert not list(metrics_dir.glob(f"gauge_livesum_{victim}.db"))
    assert samples[(REQUEST_COUNT, frozenset(SERVED.items()))] == baseline + sent
