"""Races through a real gunicorn: several workers, parallel clients, a real database.

Each test starts its clients together (a barrier; each client a thread with its own HTTP
connection) on one of the writes that must not be done twice or counted wrong, then checks the
database: ``install_count`` equals the active install rows, ``fork_count`` equals the forks an
anonymous viewer is shown (public, active or yanked), one row per unique key, and every answer
is what the same requests sent one after another would get (the first 201, the others 200; an
uninstall 204) and never a 5xx. The last test turns a fork private while anonymous readers poll
its detail, bundle, search and its parent's fork list: no read sent after the PATCH answered
may serve it.

PostgreSQL runs with the production settings (the per-worker read cache on); SQLite as
``make run`` serves it. Each backend gets a database of its own (``sprig_races_<pid>`` on the
test PostgreSQL server), so the per-test wipe of the shared test database is not disturbed;
the server is started once per backend.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
import requests
from sqlalchemy import text
from sqlalchemy.engine import make_url

from market.app import create_app
from market.platform.db import make_engine
from market.platform.migrate import upgrade
from market.platform.state import app_state
from tests import gunicorn_server
from tests.conftest import NO_RATE_LIMITS
from tests.factories import bundle, listing, make_user

pytestmark = [pytest.mark.slow]

RACES_DB = f"sprig_races_{os.getpid()}"  # one per test process (xdist runs several)
WORKERS = 3
CLIENTS = 12
API = "/api/v1"
TIMEOUT = (5.0, 30.0)  # connect, read


# ---- the server -----------------------------------------------------------------------


def _admin_conninfo(database_url: str) -> str:
    url = make_url(database_url).set(drivername="postgresql", database="postgres")
    return url.render_as_string(hide_password=False)


def _own_database(database_url: str, tmp_path: Path) -> str:
    if make_url(database_url).get_backend_name() == "sqlite":
        return f"sqlite:///{tmp_path / 'races.db'}"
    with psycopg.connect(_admin_conninfo(database_url), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {RACES_DB} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {RACES_DB}")
    return make_url(database_url).set(database=RACES_DB).render_as_string(hide_password=False)


def _drop_own_database(database_url: str) -> None:
    if make_url(database_url).get_backend_name() != "sqlite":
        with psycopg.connect(_admin_conninfo(database_url), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {RACES_DB} WITH (FORCE)")


@dataclass
class Live:
    base: str
    engine: object
    author: object
    moderator: object
    users: list
    log_path: Path
    codes: Counter = field(default_factory=Counter)

    def url(self, path: str) -> str:
        return f"{self.base}{API}{path}"

    def call(self, actor, method: str, path: str, **kwargs) -> requests.Response:
        headers = actor.headers if actor is not None else {}
        response = requests.request(
            method, self.url(path), headers=headers, timeout=TIMEOUT, **kwargs
        )
        self.codes[response.status_code] += 1
        return response

    def scalar(self, sql: str, **params):
        with self.engine.connect() as connection:
            return connection.execute(text(sql), params).scalar_one()


@pytest.fixture(scope="module")
def live(database_url, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("races")
    url = _own_database(database_url, tmp_path)
    upgrade(url)
    app = create_app({"database_url": url, "testing": True, "read_cache_seconds": 0})
    seed_engine = app_state(app).engine
    try:
        author = make_user(seed_engine, "race-author")
        moderator = make_user(seed_engine, "race-mod", role="moderator")
        users = [make_user(seed_engine, f"racer{i}") for i in range(CLIENTS)]
    finally:
        seed_engine.dispose()
        app_state(app).read_engine.dispose()
    log_path = tmp_path / "gunicorn.log"
    settings = {"SPRIG_DATABASE_URL": url, "SPRIG_REDIS_URL": "", "SPRIG_SECRET_KEY": "races"}
    settings.update({f"SPRIG_{name.upper()}": value for name, value in NO_RATE_LIMITS.items()})
    served = gunicorn_server.start(settings, log_path, workers=WORKERS)
    engine = make_engine(url)
    try:
        yield Live(served.base, engine, author, moderator, users, log_path)
    finally:
        gunicorn_server.stop(served)
        engine.dispose()
        _drop_own_database(database_url)


@pytest.fixture
def server(live):
    """The live server, checked after each test: no 5xx, and every counter exact."""
    live.codes.clear()
    before = live.scalar("SELECT coalesce(max(id), 0) FROM subagent")
    yield live
    server_errors = {code: n for code, n in live.codes.items() if code >= 500}
    assert not server_errors, (server_errors, live.log_path.read_text()[-3000:])
    _assert_counters_exact(live, after_id=before)


def _assert_counters_exact(live: Live, after_id: int) -> None:
    """The counters of the sub-agents this test made equal the rows they count."""
    with live.engine.connect() as connection:
        drifted = connection.execute(
            text(
                "SELECT s.id, s.install_count, s.fork_count,"
                " (SELECT count(*) FROM install i WHERE i.subagent_id = s.id AND i.active),"
                " (SELECT count(*) FROM subagent c WHERE c.parent_id = s.id"
                "  AND c.visibility = 'public' AND c.status IN ('active', 'yanked'))"
                " FROM subagent s WHERE s.id > :after"
            ),
            {"after": after_id},
        ).all()
    wrong = [row for row in drifted if (row[1], row[2]) != (row[3], row[4])]
    assert not wrong, f"(id, install_count, fork_count, active installs, listed forks): {wrong}"


# ---- racing ---------------------------------------------------------------------------


@dataclass
class Call:
    actor: object
    method: str
    path: str
    json: dict | None = None


def race(live: Live, calls: list[Call]) -> list[requests.Response]:
    """Send every call at once, each from its own thread and connection."""
    barrier = threading.Barrier(len(calls))
    responses: list = [None] * len(calls)
    errors: list = []

    def run(i: int, call: Call) -> None:
        with requests.Session() as http:
            try:
                # Connect first, so the barrier releases requests rather than handshakes.
                http.get(live.url("/subagents/2147483647"), timeout=TIMEOUT)
                barrier.wait(30)
                headers = call.actor.headers if call.actor is not None else {}
                responses[i] = http.request(
                    call.method,
                    live.url(call.path),
                    json=call.json,
                    headers=headers,
                    timeout=TIMEOUT,
                )
            except Exception as error:  # a failed client fails the race, visibly
                errors.append(error)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert not errors, errors
    for response in responses:
        live.codes[response.status_code] += 1
    return responses


def _codes(responses) -> list[int]:
    return [r.status_code for r in responses]


def _first_then_repeats(responses, *, same_id: bool = True) -> None:
    """What the same requests one after another get: one 201, then 200s with that row."""
    codes = _codes(responses)
    assert sorted(codes) == [200] * (len(codes) - 1) + [201], codes
    if same_id:
        assert len({r.json()["id"] for r in responses}) == 1


def _publish(live: Live, title: str, actor=None, **extra) -> dict:
    response = live.call(actor or live.author, "POST", "/subagents", json=listing(title, **extra))
    assert response.status_code == 201, response.text
    return response.json()


def _fork_body(note: str) -> dict:
    return {"title": f"Fork {note}", "fork_request": f"change: {note}", "bundle": bundle(note)}


# ---- installs -------------------------------------------------------------------------


def test_simultaneous_uninstalls_after_one_install(server):
    subagent = _publish(server, "Uninstall Race")
    user = server.users[0]
    path = f"/subagents/{subagent['id']}/install"
    assert server.call(user, "POST", path, json={}).status_code == 201
    responses = race(server, [Call(user, "DELETE", path)] * CLIENTS)
    assert _codes(responses) == [204] * CLIENTS
    assert server.scalar("SELECT install_count FROM subagent WHERE id = :i", i=subagent["id"]) == 0


def test_install_uninstall_flapping(server):
    subagent = _publish(server, "Flapping Race")
    path = f"/subagents/{subagent['id']}/install"
    flapper, steady = server.users[1], server.users[2]
    assert server.call(steady, "POST", path, json={}).status_code == 201
    for _round in range(4):
        calls = [Call(flapper, "POST", path, {}), Call(flapper, "DELETE", path)] * (CLIENTS // 2)
        responses = race(server, calls)
        # Taken one after another, each is an install (201 or 200) or an uninstall (204);
        # the count is checked against the rows after the test.
        assert set(_codes(responses)) <= {200, 201, 204}
        rows = server.scalar(
            "SELECT count(*) FROM install WHERE subagent_id = :i AND user_id = :u",
            i=subagent["id"],
            u=flapper.id,
        )
        assert rows == 1


def test_many_users_install_and_uninstall_at_once(server):
    subagent = _publish(server, "Crowd Race")
    path = f"/subagents/{subagent['id']}/install"
    first = race(server, [Call(user, "POST", path, {}) for user in server.users])
    assert _codes(first) == [201] * CLIENTS
    leavers = server.users[: CLIENTS // 2]
    calls = [Call(u, "DELETE", path) for u in leavers] + [
        Call(u, "POST", path, {}) for u in server.users[CLIENTS // 2 :]
    ]
    responses = race(server, calls)
    assert _codes(responses) == [204] * len(leavers) + [200] * (CLIENTS - len(leavers))
    count = server.scalar("SELECT install_count FROM subagent WHERE id = :i", i=subagent["id"])
    assert count == CLIENTS - len(leavers)


def test_simultaneous_first_installs(server):
    subagent = _publish(server, "First Install Race")
    user = server.users[3]
    path = f"/subagents/{subagent['id']}/install"
    responses = race(server, [Call(user, "POST", path, {})] * CLIENTS)
    _first_then_repeats(responses)
    rows = server.scalar("SELECT count(*) FROM install WHERE subagent_id = :i", i=subagent["id"])
    assert rows == 1


# ---- ratings, reports, fork requests ----------------------------------------------------


def test_simultaneous_first_ratings(server):
    subagent = _publish(server, "Rating Race")
    version_id = subagent["latest_version"]["id"]
    user = server.users[4]
    # Only people who installed a sub-agent rate it.
    installs = race(
        server,
        [Call(u, "POST", f"/subagents/{subagent['id']}/install", {}) for u in server.users[4:]],
    )
    assert _codes(installs) == [201] * len(installs)
    body = {"version_id": version_id, "stars": 5, "comment": "lovely"}
    responses = race(server, [Call(user, "POST", "/feedback", body)] * CLIENTS)
    _first_then_repeats(responses)
    rows = server.scalar("SELECT count(*) FROM feedback WHERE version_id = :v", v=version_id)
    assert rows == 1
    # Many people rating at once: one row each, each a 201.
    others = race(server, [Call(u, "POST", "/feedback", body) for u in server.users[5:]])
    assert _codes(others) == [201] * len(others)
    rows = server.scalar("SELECT count(*) FROM feedback WHERE version_id = :v", v=version_id)
    assert rows == 1 + len(others)


def test_simultaneous_reports(server):
    subagent = _publish(server, "Report Race")
    user = server.users[5]
    body = {"reason": "spam", "detail": "the same words"}
    path = f"/subagents/{subagent['id']}/report"
    _first_then_repeats(race(server, [Call(user, "POST", path, body)] * CLIENTS))
    rows = server.scalar("SELECT count(*) FROM report WHERE subagent_id = :i", i=subagent["id"])
    assert rows == 1


def test_simultaneous_identical_fork_requests(server):
    subagent = _publish(server, "Request Race")
    user = server.users[6]
    body = {"text": "Count cups, not litres"}
    path = f"/subagents/{subagent['id']}/fork-requests"
    _first_then_repeats(race(server, [Call(user, "POST", path, body)] * CLIENTS))
    rows = server.scalar(
        "SELECT count(*) FROM fork_request WHERE subagent_id = :i AND status = 'open'",
        i=subagent["id"],
    )
    assert rows == 1


# ---- publishes and forks ----------------------------------------------------------------


def test_publishes_and_versions(server):
    # Identical bytes at once: one sub-agent, then one version.
    body = listing("Publish Race")
    _first_then_repeats(race(server, [Call(server.author, "POST", "/subagents", body)] * CLIENTS))
    assert server.scalar("SELECT count(*) FROM subagent WHERE title = 'Publish Race'") == 1
    subagent_id = server.scalar("SELECT id FROM subagent WHERE title = 'Publish Race'")
    version = {"bundle": bundle("second version"), "changelog": "v2"}
    path = f"/subagents/{subagent_id}/versions"
    _first_then_repeats(race(server, [Call(server.author, "POST", path, version)] * CLIENTS))
    versions = server.scalar(
        "SELECT count(*) FROM subagent_version WHERE subagent_id = :i", i=subagent_id
    )
    assert versions == 2
    # Different versions at once: each published, numbered 3, 4, ... without a gap or a clash.
    distinct = [
        Call(server.author, "POST", path, {"bundle": bundle(f"version {i}")})
        for i in range(CLIENTS)
    ]
    assert _codes(race(server, distinct)) == [201] * CLIENTS
    numbers = server.scalar(
        "SELECT count(DISTINCT number) FROM subagent_version WHERE subagent_id = :i"
        " AND number BETWEEN 1 AND :n",
        i=subagent_id,
        n=CLIENTS + 2,
    )
    assert numbers == CLIENTS + 2


def test_simultaneous_forks(server):
    parent = _publish(server, "Fork Race")
    path = f"/subagents/{parent['id']}/forks"
    # Everyone forks at once, some of them privately or unlisted: all created, counted right.
    visibilities = ["public", "unlisted", "private"]
    calls = [
        Call(user, "POST", path, {**_fork_body(f"crowd {i}"), "visibility": visibilities[i % 3]})
        for i, user in enumerate(server.users)
    ]
    assert _codes(race(server, calls)) == [201] * CLIENTS
    # One person sends the same fork many times at once: one fork.
    same = _fork_body("the very same")
    _first_then_repeats(race(server, [Call(server.users[0], "POST", path, same)] * CLIENTS))
    children = server.scalar("SELECT count(*) FROM subagent WHERE parent_id = :i", i=parent["id"])
    assert children == CLIENTS + 1
    # Forks made while others change their forks' visibility and a moderator quarantines one.
    listed = server.call(None, "GET", f"{path}?limit=100").json()["items"]
    owners = {u.handle: u for u in server.users}
    changes = [
        Call(owners[f["author"]["handle"]], "PATCH", f"/subagents/{f['id']}", {"visibility": v})
        for f, v in zip(listed, ["private", "unlisted"], strict=False)
    ]
    changes.append(
        Call(
            server.moderator,
            "POST",
            f"/subagents/{listed[2]['id']}/quarantine",
            {"reason": "spam links"},
        )
    )
    more = [
        Call(user, "POST", path, _fork_body(f"second wave {i}"))
        for i, user in enumerate(server.users[: CLIENTS - len(changes)])
    ]
    responses = race(server, changes + more)
    assert _codes(responses) == [200] * len(changes) + [201] * len(more)


# ---- visibility while others read -------------------------------------------------------


def _reader(live: Live, parent_id: int, fork: dict, word: str, stop, reads: list) -> None:
    version_id = fork["latest_version"]["id"]
    paths = [
        (f"/subagents/{fork['id']}", lambda r: r.status_code == 200),
        (f"/subagents/{fork['id']}/versions/{version_id}/bundle", lambda r: r.status_code == 200),
        (f"/subagents?q={word}", lambda r: any(c["id"] == fork["id"] for c in r.json()["items"])),
        (
            f"/subagents/{parent_id}/forks",
            lambda r: any(c["id"] == fork["id"] for c in r.json()["items"]),
        ),
    ]
    with requests.Session() as http:
        turn = 0
        while not stop.is_set():
            path, serves = paths[turn % len(paths)]
            turn += 1
            sent = time.monotonic()
            response = http.get(live.url(path), timeout=TIMEOUT)
            reads.append((sent, response.status_code, serves(response) if response.ok else False))


def test_no_anonymous_read_serves_what_was_just_made_private(server):
    word = "quokkazebra"
    parent = _publish(server, "Visibility Race")
    fork = server.call(
        server.users[0],
        "POST",
        f"/subagents/{parent['id']}/forks",
        json={**_fork_body("secret soon"), "title": f"Secret {word}"},
    ).json()
    owner = server.users[0]
    for _round in range(3):
        reads: list = []
        stop = threading.Event()
        readers = [
            threading.Thread(target=_reader, args=(server, parent["id"], fork, word, stop, reads))
            for _ in range(CLIENTS - 1)
        ]
        for thread in readers:
            thread.start()
        time.sleep(0.5)  # every kind of read has been served (and cached) meanwhile
        answered = server.call(
            owner, "PATCH", f"/subagents/{fork['id']}", json={"visibility": "private"}
        )
        assert answered.status_code == 200
        made_private = time.monotonic()
        time.sleep(0.5)
        stop.set()
        for thread in readers:
            thread.join(30)
        for _sent, code, _served in reads:
            server.codes[code] += 1
        assert any(served for sent, _c, served in reads if sent < made_private)
        late = [
            (sent - made_private, code)
            for sent, code, served in reads
            if served and sent > made_private
        ]
        assert not late, late
        back = server.call(
            owner, "PATCH", f"/subagents/{fork['id']}", json={"visibility": "public"}
        )
        assert back.status_code == 200
