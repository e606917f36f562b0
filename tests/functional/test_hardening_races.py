"""Counters and concurrent writes, in process, on every backend.

Threads (each with its own test client, so its own requests and database connections) release
the same request at once through a barrier. Whatever the interleaving, a race must end as the
same requests one after another would: one row per unique key, the first answer 201 and the
others 200, counters equal to the rows they count, and no 5xx. ``fork_count`` counts exactly
the forks the fork list shows an anonymous viewer. tests/integration/test_races.py runs the
same races through a real multi-worker gunicorn on PostgreSQL.
"""

from __future__ import annotations

import threading
from collections import Counter

from sqlalchemy import func, select

from market.catalog.models import ForkRequest, Install, Report, SubAgent, Version
from market.platform.db import session_scope
from market.usage.models import Feedback
from tests.factories import bundle, fork, make_user, publish

API = "/api/v1"
N = 8


def _race(app, requests: list) -> list[int]:
    """Send ``requests`` (each ``(method, path, kwargs)``) at once, one thread each; the
    status codes, with an exception the app raised counted as a 500."""
    barrier = threading.Barrier(len(requests))
    codes: list[int] = [0] * len(requests)

    def send(i: int, method: str, path: str, kwargs: dict) -> None:
        client = app.test_client()
        barrier.wait()
        try:
            codes[i] = client.open(path, method=method, **kwargs).status_code
        except Exception:
            codes[i] = 500

    threads = [
        threading.Thread(target=send, args=(i, *request)) for i, request in enumerate(requests)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return codes


def _counted(engine, model, **where) -> int:
    with session_scope(engine) as session:
        statement = select(func.count()).select_from(model)
        for name, value in where.items():
            statement = statement.where(getattr(model, name) == value)
        return session.execute(statement).scalar_one()


def _counters(engine, subagent_id: int) -> tuple[int, int]:
    with session_scope(engine) as session:
        row = session.get(SubAgent, subagent_id)
        return row.install_count, row.fork_count


def _first_then_repeats(codes: list[int]) -> bool:
    return sorted(codes) == [200] * (len(codes) - 1) + [201]


# ---- install_count --------------------------------------------------------------------------


def test_simultaneous_uninstalls_after_one_install_count_once(app, client, engine, alice, bob):
    root = publish(client, alice)
    url = f"{API}/subagents/{root['id']}/install"
    assert client.post(url, json={}, headers=bob.headers).status_code == 201
    codes = _race(app, [("DELETE", url, {"headers": bob.headers})] * N)
    assert codes == [204] * N
    assert _counted(engine, Install, subagent_id=root["id"], active=True) == 0
    assert _counters(engine, root["id"])[0] == 0


def test_install_uninstall_flapping_leaves_the_count_equal_to_the_rows(
    app, client, engine, alice, bob
):
    root = publish(client, alice)
    carol = make_user(engine, "carol")
    assert client.post(f"{API}/subagents/{root['id']}/install", json={}, headers=carol.headers)
    url = f"{API}/subagents/{root['id']}/install"
    for _round in range(3):
        requests = [("POST", url, {"json": {}, "headers": bob.headers})] * (N // 2) + [
            ("DELETE", url, {"headers": bob.headers})
        ] * (N // 2)
        codes = _race(app, requests)
        assert set(codes) <= {200, 201, 204}, codes
        active = _counted(engine, Install, subagent_id=root["id"], active=True)
        assert _counters(engine, root["id"])[0] == active
        assert _counted(engine, Install, subagent_id=root["id"]) == 2


# ---- first writes answer 201 once and 200 after -----------------------------------------------


def test_simultaneous_first_installs_make_one_row_and_one_201(app, client, engine, alice, bob):
    root = publish(client, alice)
    url = f"{API}/subagents/{root['id']}/install"
    codes = _race(app, [("POST", url, {"json": {}, "headers": bob.headers})] * N)
    assert _first_then_repeats(codes), codes
    assert _counted(engine, Install, subagent_id=root["id"], user_id=bob.id) == 1
    assert _counters(engine, root["id"])[0] == 1


def test_simultaneous_first_ratings_make_one_row_and_one_201(app, client, engine, alice, bob):
    root = publish(client, alice)
    version_id = root["latest_version"]["id"]
    assert (
        client.post(f"{API}/subagents/{root['id']}/install", headers=bob.headers).status_code == 201
    )
    body = {"version_id": version_id, "stars": 4, "comment": "good"}
    codes = _race(app, [("POST", f"{API}/feedback", {"json": body, "headers": bob.headers})] * N)
    assert _first_then_repeats(codes), codes
    assert _counted(engine, Feedback, version_id=version_id, user_id=bob.id) == 1


def test_simultaneous_first_reports_make_one_row_and_one_201(app, client, engine, alice, bob):
    root = publish(client, alice)
    url = f"{API}/subagents/{root['id']}/report"
    body = {"reason": "spam", "detail": "same text"}
    codes = _race(app, [("POST", url, {"json": body, "headers": bob.headers})] * N)
    assert _first_then_repeats(codes), codes
    assert _counted(engine, Report, subagent_id=root["id"], reporter_id=bob.id) == 1


# ---- fork requests --------------------------------------------------------------------------


def test_simultaneous_identical_fork_requests_make_one_open_request(
    app, client, engine, alice, bob
):
    root = publish(client, alice)
    url = f"{API}/subagents/{root['id']}/fork-requests"
    body = {"text": "Make it count cups instead of litres"}
    codes = _race(app, [("POST", url, {"json": body, "headers": bob.headers})] * N)
    assert _first_then_repeats(codes), codes
    assert _counted(engine, ForkRequest, subagent_id=root["id"], requester_id=bob.id) == 1


# ---- fork_count is what the fork list shows ---------------------------------------------------


def _anonymous_fork_ids(client, parent_id: int) -> set[int]:
    page = client.get(f"{API}/subagents/{parent_id}/forks?limit=100").get_json()
    return {card["id"] for card in page["items"]}


def _fork_count(client, parent_id: int) -> int:
    return client.get(f"{API}/subagents/{parent_id}").get_json()["fork_count"]


def _assert_count_matches_list(client, parent_id: int, expected: int) -> None:
    listed = _anonymous_fork_ids(client, parent_id)
    assert len(listed) == expected
    assert _fork_count(client, parent_id) == expected


def test_fork_count_counts_only_the_forks_the_list_shows(client, engine, alice, bob):
    mod = make_user(engine, "mod", role="moderator")
    root = publish(client, alice)
    rid = root["id"]
    fork(client, bob, rid, "public")
    fork(client, bob, rid, "unlisted", visibility="unlisted")
    fork(client, bob, rid, "private", visibility="private")
    _assert_count_matches_list(client, rid, 1)

    later = fork(client, bob, rid, "made unlisted later")
    _assert_count_matches_list(client, rid, 2)
    patched = client.patch(
        f"{API}/subagents/{later['id']}", json={"visibility": "unlisted"}, headers=bob.headers
    )
    assert patched.status_code == 200
    _assert_count_matches_list(client, rid, 1)
    client.patch(
        f"{API}/subagents/{later['id']}", json={"visibility": "public"}, headers=bob.headers
    )
    _assert_count_matches_list(client, rid, 2)

    bad = fork(client, bob, rid, "to quarantine")
    _assert_count_matches_list(client, rid, 3)
    quarantine = f"{API}/subagents/{bad['id']}/quarantine"
    assert client.post(quarantine, json={"reason": "spam"}, headers=mod.headers).status_code == 200
    _assert_count_matches_list(client, rid, 2)
    lift = {"reason": "fixed", "lift": True}
    assert client.post(quarantine, json=lift, headers=mod.headers).status_code == 200
    _assert_count_matches_list(client, rid, 3)

    # A yanked fork stays in the list (so lineages do not break), and so in the count.
    yank = client.post(
        f"{API}/subagents/{later['id']}/yank", json={"reason": "broken"}, headers=bob.headers
    )
    assert yank.status_code == 200
    _assert_count_matches_list(client, rid, 3)


def test_simultaneous_forks_count_every_one(app, client, engine, alice):
    root = publish(client, alice)
    forkers = [make_user(engine, f"forker{i}") for i in range(N)]
    requests = [
        (
            "POST",
            f"{API}/subagents/{root['id']}/forks",
            {
                "json": {
                    "title": f"Fork {i}",
                    "fork_request": "smaller cups",
                    "bundle": bundle(f"fork {i}"),
                },
                "headers": forker.headers,
            },
        )
        for i, forker in enumerate(forkers)
    ]
    codes = _race(app, requests)
    assert Counter(codes) == {201: N}
    assert _counters(engine, root["id"])[1] == N == len(_anonymous_fork_ids(client, root["id"]))


# ---- versions published at once --------------------------------------------------------


def test_simultaneous_versions_are_all_published_with_their_own_numbers(app, client, engine, alice):
    root = publish(client, alice)
    path = f"{API}/subagents/{root['id']}/versions"
    distinct = [
        ("POST", path, {"json": {"bundle": bundle(f"v{i}")}, "headers": alice.headers})
        for i in range(N)
    ]
    assert _race(app, distinct) == [201] * N
    same = {"json": {"bundle": bundle("the same")}, "headers": alice.headers}
    assert _first_then_repeats(_race(app, [("POST", path, same)] * N))
    with session_scope(engine) as session:
        numbers = session.execute(
            select(Version.number).where(Version.subagent_id == root["id"])
        ).scalars()
        assert sorted(numbers) == list(range(1, N + 3))
