"""The anonymous read cache never serves what a write has hidden (PostgreSQL only)."""

from __future__ import annotations

import time

import pytest

from market.app import create_app
from market.platform.state import app_state
from tests.factories import make_user, publish


@pytest.fixture
def cached_apps(database_url, app):
    if database_url.startswith("sqlite"):
        pytest.skip("the read cache needs PostgreSQL LISTEN/NOTIFY")
    # Two apps stand for two gunicorn workers, each with its own cache and listener.
    apps = [
        create_app({"database_url": database_url, "read_cache_seconds": 60, "secret_key": "t"})
        for _ in range(2)
    ]
    yield apps
    for other in apps:
        app_state(other).cache_listener.stop()
        app_state(other).engine.dispose()
        app_state(other).read_engine.dispose()


def _get_until(client, url, status, timeout=3.0):
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(url)
        if response.status_code == status or time.monotonic() > deadline:
            return response
        time.sleep(0.02)


def _warm(client, url):
    deadline = time.monotonic() + 5
    while client.get(url).headers.get("X-Sprig-Cache") != "hit":
        assert time.monotonic() < deadline, "cache never became ready"
        time.sleep(0.05)


def test_hits_then_invalidated_across_workers_when_made_private(cached_apps, engine):
    writer, reader = (a.test_client() for a in cached_apps)
    alice = make_user(engine, "alice")
    sub = publish(writer, alice)
    url = f"/api/v1/subagents/{sub['id']}"
    _warm(reader, url)
    _warm(writer, url)
    listing = "/api/v1/subagents?sort=new"
    _warm(reader, listing)
    assert reader.get(listing).get_json()["items"][0]["id"] == sub["id"]

    hidden = writer.patch(url, json={"visibility": "private"}, headers=alice.headers)
    assert hidden.status_code == 200
    # The writing worker drops its cache before answering: no window at all.
    assert writer.get(url).status_code == 404
    # The other worker hears the NOTIFY within milliseconds.
    assert _get_until(reader, url, 404).status_code == 404
    assert reader.get(listing).get_json()["items"] == []
    # The owner is never served from the anonymous cache.
    assert reader.get(url, headers=alice.headers).status_code == 200


def test_authenticated_and_error_responses_are_not_cached(cached_apps, engine):
    client = cached_apps[0].test_client()
    alice = make_user(engine, "alice")
    sub = publish(client, alice)
    url = f"/api/v1/subagents/{sub['id']}"
    assert "X-Sprig-Cache" not in client.get(url, headers=alice.headers).headers
    _warm(client, url)
    missing = client.get("/api/v1/subagents/999999")
    assert missing.status_code == 404 and "X-Sprig-Cache" not in missing.headers


def test_a_hit_is_the_answer_a_miss_gave(cached_apps, engine):
    """Byte for byte, with the same Vary: a detail names the best branch in the reader's
    language, and a browser or CDN that lost ``Vary`` on hits would hand one reader's language
    to the next."""
    client = cached_apps[0].test_client()
    sub = publish(client, make_user(engine, "alice"))
    url = f"/api/v1/subagents/{sub['id']}"
    # A miss is stored only once the listener is up: until then the next answer misses too.
    deadline = time.monotonic() + 5
    missed = client.get(url)
    while (hit := client.get(url)).headers.get("X-Sprig-Cache") != "hit":
        assert time.monotonic() < deadline, "the cache never started storing"
        missed = hit
        time.sleep(0.05)
    assert missed.headers["X-Sprig-Cache"] == "miss"
    assert hit.get_data() == missed.get_data()
    assert missed.headers["Vary"] == hit.headers["Vary"] == "Accept-Language"
    assert hit.headers["Content-Type"] == missed.headers["Content-Type"]
