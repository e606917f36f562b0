"""Rate limits (market/platform/limits.py): each limit answers 429 with Retry-After and a
problem document, then recovers after its window; users and addresses have budgets of their
own; racing clients get exactly the budget; on Redis, on the in-process fallback, and on the
fallback a Redis outage falls back to."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import redis

from market.app import create_app
from market.platform.config import Settings
from market.platform.limits import LIMIT_CLASSES
from market.platform.state import app_state
from tests.conftest import make_app
from tests.factories import bundle, listing, make_user, publish
from tests.functional.web.test_pages import csrf_of
from tests.xdist_worker import own_redis_url

PROBLEM = "application/problem+json"
SEARCH = "/api/v1/subagents?q=water"
# A port nothing listens on: every Redis call fails at once and the limiter counts locally.
REDIS_DOWN = "redis://127.0.0.1:1/0"


def _counters() -> list[str]:
    counters = ["local", "redis-down"]
    if os.environ.get("SPRIG_TEST_REDIS_URL"):
        counters.append("redis")
    return counters


@pytest.fixture(params=_counters())
def redis_url(request) -> str:
    if request.param == "local":
        return ""
    if request.param == "redis-down":
        return REDIS_DOWN
    # A database of its own on the test Redis, emptied first: user ids restart in every test.
    url = own_redis_url(os.environ["SPRIG_TEST_REDIS_URL"], 9)
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture
def limited(database_url, redis_url):
    """An app factory with the given limits on this test's counter."""
    apps = []

    def build(**settings):
        context = make_app(database_url, redis_url=redis_url, **settings)
        apps.append(context)
        return context.__enter__()

    yield build
    for context in reversed(apps):
        context.__exit__(None, None, None)


def start_of_window(seconds: int) -> None:
    """Wait for a fresh window, so that the requests of a test all fall in the same one."""
    time.sleep(seconds - time.time() % seconds + 0.02)


def in_one_window(seconds: int, make, count: int) -> list:
    """``count`` answers of ``make()``, all asked within one fixed window from its start. On a
    slow machine they can run past its end, which renews the budget halfway and proves
    nothing: then they are asked again from the next window's start."""
    for _attempt in range(5):
        start_of_window(seconds)
        window = time.time() // seconds
        answers = [make() for _ in range(count)]
        if time.time() // seconds == window:
            return answers
    pytest.fail(f"{count} requests never fitted in one {seconds}-second window")


def clear_of_window_end(seconds: int) -> None:
    """Wait for a fresh window when this one ends within five seconds."""
    if time.time() % seconds > seconds - 5:
        start_of_window(seconds)


def assert_limited(response) -> int:
    assert response.status_code == 429, response.get_data(as_text=True)[:300]
    wait = int(response.headers["Retry-After"])
    assert 1 <= wait <= 2
    if response.mimetype != "text/html":
        assert response.mimetype == PROBLEM
        body = response.get_json()
        assert body["status"] == 429 and body["title"] == "Too many requests"
        assert "Rate limit reached" in body["detail"]
    return wait


def fork_body() -> dict:
    return {"title": "Fork", "fork_request": "please change it", "bundle": bundle("fork")}


# Each limit: (setting, how one request is made, given the app, its client and a user).
CASES = {
    "publish": lambda c, who, _root: c.post(
        "/api/v1/subagents", json=listing(), headers=who.headers
    ),
    "fork": lambda c, who, root: c.post(
        f"/api/v1/subagents/{root}/forks", json=fork_body(), headers=who.headers
    ),
    "search": lambda c, who, _root: c.get(SEARCH, headers=who.headers),
    "suggestions": lambda c, who, _root: c.post(
        "/api/v1/suggestions", json={"request": "track my water"}, headers=who.headers
    ),
    "recommendations": lambda c, who, _root: c.post(
        "/api/v1/recommendations", json={"request": "track my water"}, headers=who.headers
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_limit_answers_429_then_recovers_after_its_window(limited, name):
    app = limited(**{f"rate_limit_{name}": "2/2"})
    client = app.test_client()
    person = make_user(app_state(app).engine, "alice", kind="person")
    root = publish(client, person)["id"] if name == "fork" else None
    *made, third = in_one_window(2, lambda: CASES[name](client, person, root), 3)
    assert all(response.status_code != 429 for response in made), [r.status_code for r in made]
    wait = assert_limited(third)
    time.sleep(wait + 0.05)
    assert CASES[name](client, person, root).status_code != 429


def test_events_spend_one_unit_per_event(limited):
    app = limited(rate_limit_events="5/2")
    client = app.test_client()
    service = make_user(app_state(app).engine, "collector", kind="service", scopes=["events:write"])
    batch = {"events": [{"kind": "open"}] * 3}
    start_of_window(2)
    first = client.post("/api/v1/events", json=batch, headers=service.headers)
    assert first.status_code == 202, first.get_json()
    wait = assert_limited(client.post("/api/v1/events", json=batch, headers=service.headers))
    time.sleep(wait + 0.05)
    assert client.post("/api/v1/events", json=batch, headers=service.headers).status_code == 202


def test_web_search_is_limited_with_an_error_page_and_retry_after(limited):
    app = limited(rate_limit_search="2/2")
    client = app.test_client()
    start_of_window(2)
    assert client.get("/").status_code == 200  # no query: not a search
    assert [client.get("/?q=water").status_code for _ in range(2)] == [200, 200]
    refused = client.get("/?q=water")
    assert_limited(refused)
    assert refused.mimetype == "text/html"


def test_one_users_flood_leaves_others_and_anonymous_callers_their_budget(limited):
    app = limited(rate_limit_search="3/60")
    client = app.test_client()
    alice, bob = make_user(app_state(app).engine, "alice"), make_user(app_state(app).engine, "bob")
    clear_of_window_end(60)
    statuses = [client.get(SEARCH, headers=alice.headers).status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429]
    assert client.get(SEARCH, headers=bob.headers).status_code == 200
    assert client.get(SEARCH).status_code == 200  # anonymous: the address's own budget


def test_anonymous_callers_are_held_per_address(limited):
    app = limited(rate_limit_search="2/60")
    client = app.test_client()
    clear_of_window_end(60)
    first = {"REMOTE_ADDR": "203.0.113.7"}
    statuses = [client.get(SEARCH, environ_base=first).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert client.get(SEARCH, environ_base={"REMOTE_ADDR": "203.0.113.8"}).status_code == 200


@pytest.mark.parametrize("hops, separate", [(0, False), (1, True)])
def test_forwarded_addresses_count_only_behind_a_trusted_proxy(limited, hops, separate):
    """Without a trusted proxy X-Forwarded-For is anyone's to forge, so it cannot buy a fresh
    budget; behind one, it is the client's address."""
    app = limited(rate_limit_search="1/60", trusted_proxy_hops=hops)
    client = app.test_client()
    clear_of_window_end(60)
    assert client.get(SEARCH, headers={"X-Forwarded-For": "198.51.100.1"}).status_code == 200
    other = client.get(SEARCH, headers={"X-Forwarded-For": "198.51.100.2"})
    assert (other.status_code == 200) is separate


def test_failed_token_checks_lock_out_the_address_then_recover(limited):
    app = limited(rate_limit_auth_failures="3/2")
    client = app.test_client()
    alice = make_user(app_state(app).engine, "alice")
    guess = {"Authorization": "Bearer sprig_not-a-real-token"}
    start_of_window(2)
    assert [client.get("/api/v1/me", headers=guess).status_code for _ in range(3)] == [401] * 3
    # Over budget: even a right token is refused before the lookup, so guessing stops here.
    assert_limited(client.get("/api/v1/me", headers=alice.headers))
    elsewhere = {"REMOTE_ADDR": "203.0.113.9"}
    assert (
        client.get("/api/v1/me", headers=alice.headers, environ_base=elsewhere).status_code == 200
    )
    start_of_window(2)
    assert client.get("/api/v1/me", headers=alice.headers).status_code == 200


def test_successful_token_checks_spend_nothing(limited):
    app = limited(rate_limit_auth_failures="2/60")
    client = app.test_client()
    alice = make_user(app_state(app).engine, "alice")
    assert all(client.get("/api/v1/me", headers=alice.headers).status_code == 200 for _ in range(5))


def test_failed_web_sign_ins_share_the_addresses_budget(limited):
    app = limited(rate_limit_auth_failures="2/2")
    client = app.test_client()
    csrf = csrf_of(client)
    start_of_window(2)
    tries = [
        client.post("/signin", data={"csrf": csrf, "token": "sprig_wrong"}).status_code
        for _ in range(2)
    ]
    assert tries == [400, 400]
    refused = client.post("/signin", data={"csrf": csrf, "token": "sprig_wrong"})
    assert_limited(refused)
    assert refused.mimetype == "text/html"


def test_racing_clients_get_exactly_the_budget(limited):
    """Twelve threads, five searches each, one address, a budget of 23: exactly 23 pass."""
    app = limited(rate_limit_search="23/86400")
    statuses: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(12)

    def searcher():
        client = app.test_client()
        barrier.wait()
        for _ in range(5):
            status = client.get(SEARCH).status_code
            with lock:
                statuses.append(status)

    threads = [threading.Thread(target=searcher) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(set(statuses)) == [200, 429]
    assert statuses.count(200) == 23


def test_the_openapi_document_lists_429_on_each_limited_operation():
    spec = create_app({"database_url": "sqlite://", "secret_key": "t"}).spec
    paths = spec["paths"]
    for path, method in [
        ("/subagents", "post"),
        ("/subagents", "get"),
        ("/subagents/{subagent_id}/forks", "post"),
        ("/subagents/{subagent_id}/versions", "post"),
        ("/suggestions", "post"),
        ("/recommendations", "post"),
        ("/events", "post"),
    ]:
        described = paths[f"/api/v1{path}"][method]["responses"]["429"]["description"]
        assert described.startswith("Rate limit reached")
    assert "failed token checks" in paths["/api/v1/me"]["get"]["responses"]["429"]["description"]


@pytest.mark.parametrize("bad", ["30", "x/60", "0/60", "30/0", "30/-1"])
def test_a_malformed_limit_stops_the_app_from_starting(bad):
    with pytest.raises(ValueError, match="rate_limit_publish"):
        create_app({"database_url": "sqlite://", "secret_key": "t", "rate_limit_publish": bad})


def test_the_readme_lists_each_limit_with_its_default():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    defaults = Settings()
    for name in LIMIT_CLASSES:
        default = getattr(defaults, f"rate_limit_{name}")
        assert f"| `{name.upper()}` |" in readme and f"| `{default}` |" in readme, name
