"""The suggestion index under a real gunicorn: built once in the master, before its workers are
forked, and taken over by each of them, a worker gunicorn forks again after a crash included.

What only separate processes show: that no worker builds its own (one "built" log line, the
master's), that both workers answer searches from the start, and that a worker forked long
after the master's build (here, after a publish) still finds what was published since. And
that a master started again reads the index from the snapshot the first one wrote, instead
of the catalog, while its workers still find what changed after the snapshot.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
import requests

from market.platform.migrate import upgrade
from tests import gunicorn_server, two_nodes

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DATABASE = "sprig_index_before_fork"
TIMEOUT = (5.0, 30.0)


def log_records(server: gunicorn_server.Gunicorn) -> list[dict]:
    records = []
    for line in server.log_path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            records.append(json.loads(line))
    return records


def found_by_search(base: str, word: str, subagent_id: int) -> bool:
    # A new connection each time, so either worker may answer.
    response = requests.get(f"{base}/api/v1/subagents?q={word}&limit=20", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return subagent_id in {item["id"] for item in response.json()["items"]}


def searched_by(server: gunicorn_server.Gunicorn, since: int) -> set[int]:
    """The worker processes that answered a browse or search in the log's records from
    ``since`` on (an access line holds the route, never the query)."""
    return {
        record["process"]
        for record in log_records(server)[since:]
        if record.get("logger") == "market.access" and record.get("route") == "/api/v1/subagents"
    }


@pytest.fixture
def server(tmp_path):
    base_url = os.environ.get("SPRIG_TEST_POSTGRES_URL")
    if not base_url:
        pytest.skip("needs PostgreSQL (scripts/test-services.sh)")
    url = two_nodes.fresh_database(base_url, DATABASE)
    upgrade(url)
    actors = two_nodes.make_actors(url)
    settings = {
        **two_nodes.node_settings(url, os.environ.get("SPRIG_TEST_REDIS_URL", "redis://x/0")),
        "SPRIG_LOG_LEVEL": "INFO",
        "SPRIG_LOG_FORMAT": "json",
    }
    return url, actors, settings, tmp_path / "gunicorn.log"


def test_the_master_builds_once_and_every_worker_serves_from_its_build(server):
    url, actors, settings, log_path = server
    author = actors["author"].headers
    # Listed before the server starts: in the master's build.
    early_word = two_nodes.unique_word()
    early = _publish_directly(url, actors, early_word)

    served = gunicorn_server.start(settings, log_path, workers=2, startup_seconds=120)
    try:
        master = served.process.pid
        builds = [r for r in log_records(served) if "suggestion index built" in r["message"]]
        assert [r["process"] for r in builds] == [master], served.log_tail()

        workers = set(gunicorn_server.children(master))
        since = len(log_records(served))
        deadline = time.monotonic() + 30
        while searched_by(served, since) != workers and time.monotonic() < deadline:
            assert found_by_search(served.base, early_word, early)
        assert searched_by(served, since) == workers  # both answered, each found it

        # Published through the server after the master's build, then a worker is killed:
        # gunicorn forks a new one from the master, whose build predates the publish.
        late_word = two_nodes.unique_word()
        late = two_nodes.publish(served.base, author, late_word)
        assert found_by_search(served.base, late_word, late)
        victim = sorted(workers)[0]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = set(gunicorn_server.children(master))
            if victim not in now and len(now) == 2:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("gunicorn did not replace the worker:\n" + served.log_tail())
        (replacement,) = now - workers
        since = len(log_records(served))
        deadline = time.monotonic() + 30
        while replacement not in searched_by(served, since) and time.monotonic() < deadline:
            assert found_by_search(served.base, late_word, late)
        assert replacement in searched_by(served, since), served.log_tail()
        # Still one build: the new worker took over the master's and caught up from it.
        builds = [r for r in log_records(served) if "suggestion index built" in r["message"]]
        assert len(builds) == 1, served.log_tail()
    finally:
        gunicorn_server.stop(served)


def test_a_restarted_master_serves_from_the_snapshot_and_what_changed_since(server, tmp_path):
    url, actors, settings, log_path = server
    settings = {**settings, "SPRIG_INDEX_SNAPSHOT_DIR": str(tmp_path / "index")}
    author = actors["author"].headers
    early_word, hidden_word = two_nodes.unique_word(), two_nodes.unique_word()
    early = _publish_directly(url, actors, early_word)
    hidden = _publish_directly(url, actors, hidden_word)

    first = gunicorn_server.start(settings, log_path, workers=2, startup_seconds=120)
    try:
        # Written by a child of the master, not the master: serving did not wait for it.
        (writer,) = snapshot_writers(first)
        assert writer not in {first.process.pid, *gunicorn_server.children(first.process.pid)}
        # While it runs, after its snapshot: a publish, and a listing made private.
        late_word = two_nodes.unique_word()
        late = two_nodes.publish(first.base, author, late_word)
        two_nodes.make_private(first.base, author, hidden)
    finally:
        gunicorn_server.stop(first)

    again = gunicorn_server.start(settings, tmp_path / "again.log", workers=2, startup_seconds=120)
    try:
        records = log_records(again)
        loads = [r for r in records if "loaded from its snapshot" in r["message"]]
        assert [r["process"] for r in loads] == [again.process.pid], again.log_tail()
        assert not [r for r in records if "suggestion index built" in r["message"]]
        # The master caught up with both changes before forking, and wrote that back.
        caught = [r for r in records if "caught up with the database" in r["message"]]
        assert [r["process"] for r in caught] == [again.process.pid], again.log_tail()
        assert "2 sub-agents" in caught[0]["message"], again.log_tail()
        (writer,) = snapshot_writers(again)
        assert writer not in {again.process.pid, *gunicorn_server.children(again.process.pid)}
        for _ in range(6):  # new connections: either worker may answer
            assert found_by_search(again.base, early_word, early)
            assert found_by_search(again.base, late_word, late)
            assert not found_by_search(again.base, hidden_word, hidden)
    finally:
        gunicorn_server.stop(again)


def snapshot_writers(server: gunicorn_server.Gunicorn) -> list[int]:
    """The processes that logged writing the index snapshot, once one has (it is written in
    the background while the server serves)."""
    deadline = time.monotonic() + 60
    while True:
        writers = [r["process"] for r in log_records(server) if "snapshot written" in r["message"]]
        if writers or time.monotonic() > deadline:
            assert writers, server.log_tail()
            return writers
        time.sleep(0.1)


def _publish_directly(url: str, actors: dict, word: str) -> int:
    """Publish through the app in this process, before any server runs."""
    from market.app import create_app
    from market.platform.state import app_state

    app = create_app({"database_url": url, "secret_key": "two-nodes", "read_cache_seconds": 0})
    try:
        response = app.test_client().post(
            "/api/v1/subagents", json=two_nodes.listing(word), headers=actors["author"].headers
        )
        assert response.status_code == 201, response.get_json()
        return response.get_json()["id"]
    finally:
        app_state(app).engine.dispose()
        app_state(app).read_engine.dispose()
