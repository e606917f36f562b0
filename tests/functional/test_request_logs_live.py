"""Logs as an operator reads them: a real gunicorn and a real Celery worker (on the test Redis),
each writing JSON lines on stdout. One access line per request, the request id from the web
request into the worker's lines for the task it queued, and nothing secret anywhere."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests import gunicorn_server
from tests.conftest import make_app
from tests.factories import Actor, make_user
from tests.log_scanner import leaks
from tests.xdist_worker import own_redis_url

REPO = Path(__file__).resolve().parents[2]
API = "/api/v1"
EMAIL, PHONE = "carol.diaz@example.org", "+44 20 7946 0958"
# A database of its own on the test Redis: no other test's queue shares it.
REDIS_DB = 11


@dataclass
class Live:
    web: gunicorn_server.Gunicorn
    worker_log: Path
    carol: Actor
    trainer: Actor


def json_lines(path: Path) -> list[dict]:
    """Every line of a process's output, each of which must be one JSON object."""
    text = path.read_text(errors="replace")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def wait_for(predicate, path: Path, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate(json_lines(path))
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"not seen in {path.name}:\n" + path.read_text(errors="replace")[-3000:])


def start_worker(settings: dict[str, str], log_path: Path) -> subprocess.Popen:
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [
                str(Path(sys.executable).with_name("celery")),
                "-A",
                "market.entrypoints.worker:celery",
                "--quiet",  # no banner: stdout holds log lines only, as in compose
                "worker",
                "--pool=solo",
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
                "--loglevel=INFO",
            ],
            cwd=REPO,
            env={**os.environ, **settings},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def stop_worker(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@pytest.fixture(scope="module")
def live(database_url, tmp_path_factory):
    redis_url = os.environ.get("SPRIG_TEST_REDIS_URL")
    if not redis_url:
        pytest.skip("needs the test Redis (scripts/test-services.sh sets SPRIG_TEST_REDIS_URL)")
    folder = tmp_path_factory.mktemp("logs")
    settings = {
        "SPRIG_DATABASE_URL": database_url,
        "SPRIG_REDIS_URL": own_redis_url(redis_url, REDIS_DB),
        "SPRIG_CELERY_EAGER": "0",
        "SPRIG_SECRET_KEY": "test",
        "SPRIG_READ_CACHE_SECONDS": "0",
        "SPRIG_EXPORT_DIR": str(folder / "exports"),
        "SPRIG_EXPORT_SETTLE_SECONDS": "0",
        "SPRIG_LOG_LEVEL": "INFO",
        "SPRIG_LOG_FORMAT": "json",
    }
    with make_app(database_url) as app:
        from market.platform.state import app_state

        engine = app_state(app).engine
        carol = make_user(engine, "carol", email=EMAIL, phone=PHONE)
        trainer = make_user(engine, "trainer", kind="service", scopes=["exports"])
        worker_log = folder / "worker.log"
        worker = start_worker(settings, worker_log)
        try:
            wait_for(
                lambda lines: any(line["message"].endswith("ready.") for line in lines),
                worker_log,
            )
            web = gunicorn_server.start(settings, folder / "gunicorn.log", workers=2)
            try:
                yield Live(web, worker_log, carol, trainer)
            finally:
                gunicorn_server.stop(web)
        finally:
            stop_worker(worker)


def test_each_request_writes_one_json_access_line(live):
    sent = {
        "health-1": requests.get(
            f"{live.web.base}{API}/health", headers={"X-Request-Id": "health-1"}, timeout=10
        ),
        "search-1": requests.get(
            f"{live.web.base}{API}/subagents",
            params={"q": f"{EMAIL} {PHONE}"},
            headers={"X-Request-Id": "search-1", **live.carol.headers},
            timeout=10,
        ),
        "detail-1": requests.get(
            f"{live.web.base}{API}/subagents/777", headers={"X-Request-Id": "detail-1"}, timeout=10
        ),
    }
    assert {rid: r.headers["X-Request-Id"] for rid, r in sent.items()} == {r: r for r in sent}

    def access_lines(lines):
        mine = [line for line in lines if line.get("request_id") in sent]
        return mine if len(mine) >= len(sent) else None

    lines = wait_for(access_lines, live.web.log_path)
    assert sorted(line["request_id"] for line in lines) == sorted(sent)
    by_id = {line["request_id"]: line for line in lines}
    search = by_id["search-1"]
    assert search["logger"] == "market.access" and search["level"] == "INFO"
    # Written by the worker that answered, not the master that set logging up before forking.
    workers = set(gunicorn_server.children(live.web.process.pid))
    assert {line["process"] for line in lines} <= workers
    assert (search["method"], search["route"], search["status"]) == ("GET", f"{API}/subagents", 200)
    assert search["user_id"] == live.carol.id and search["duration_ms"] >= 0
    detail = by_id["detail-1"]
    assert (detail["route"], detail["ids"], detail["status"]) == (
        f"{API}/subagents/<subagent_id>",
        {"subagent_id": 777},
        404,
    )
    # gunicorn's own lines come through the same formatter.
    assert any(line["logger"] == "gunicorn.error" for line in json_lines(live.web.log_path))


def test_a_request_id_reaches_the_worker_lines_of_the_task_it_queued(live):
    response = requests.post(
        f"{live.web.base}{API}/exports",
        json={},
        headers={"X-Request-Id": "export-req-1", **live.trainer.headers},
        timeout=10,
    )
    assert response.status_code == 202, response.text

    def task_lines(lines):
        return [line for line in lines if line.get("task") == "sprig.export_rewards"] or None

    lines = wait_for(task_lines, live.worker_log)
    assert all(line["request_id"] == "export-req-1" for line in lines)
    assert any("succeeded" in line["message"] for line in lines)
    (access,) = [
        line for line in json_lines(live.web.log_path) if line.get("request_id") == "export-req-1"
    ]
    assert (access["service_id"], access["status"]) == (live.trainer.id, 202)


def test_no_process_logs_a_token_or_personal_value(live):
    """After the requests above (module order): every line of both processes, scanned."""
    for path in (live.web.log_path, live.worker_log):
        text = path.read_text(errors="replace")
        assert text.strip()
        with contextlib.suppress(ValueError):
            json_lines(path)
        assert leaks(text) == []
        for secret in (live.carol.token, live.trainer.token, EMAIL, PHONE, "Bearer"):
            assert secret not in text
