"""The anonymous read cache never serves what a write has hidden (PostgreSQL only)."""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest

from market.app import create_app
from market.platform.state import app_state
from tests.factories import fork, make_user, publish
from tests.functional.web.test_pages import sign_in


@contextmanager
def apps_with_read_cache(database_url: str, count: int, **settings):
    """``count`` apps on ``database_url`` with the read cache on, each with its own cache and
    listener (as gunicorn workers are)."""
    if database_url.startswith("sqlite"):
        pytest.skip("the read cache needs PostgreSQL LISTEN/NOTIFY")
    config = {"database_url": database_url, "read_cache_seconds": 60, "secret_key": "t"}
    apps = [create_app(config | settings) for _ in range(count)]
    try:
        yield apps
    finally:
        for other in apps:
            app_state(other).cache_listener.stop()
            app_state(other).engine.dispose()
            app_state(other).read_engine.dispose()


@pytest.fixture
def cached_apps(database_url, app):
    # Two apps stand for two gunicorn workers. (`app` wiped the database.)
    with apps_with_read_cache(database_url, 2) as apps:
        yield apps


def _get_until(client, url, status, timeout=3.0):
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(url)
        if response.status_code == status or time.monotonic() > deadline:
            return response
        time.sleep(0.02)


def _warm_and_hit(client, url):
    """The miss that was stored and the hit that followed it. A miss is stored only once the
    listener is up: until then the next answer misses too."""
    deadline = time.monotonic() + 5
    missed = client.get(url)
    while (hit := client.get(url)).headers.get("X-Sprig-Cache") != "hit":
        assert time.monotonic() < deadline, "the cache never started storing"
        missed = hit
        time.sleep(0.05)
    assert missed.headers["X-Sprig-Cache"] == "miss"
    return missed, hit


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
    missed, hit = _warm_and_hit(client, f"/api/v1/subagents/{sub['id']}")
    assert hit.get_data() == missed.get_data()
    assert missed.headers["Vary"] == hit.headers["Vary"] == "Accept-Language"
    assert hit.headers["Content-Type"] == missed.headers["Content-Type"]


# ---- pages every anonymous reader is shown alike ---------------------------------------


def test_a_page_hit_is_the_page_a_miss_gave_with_its_headers(cached_apps, engine):
    """Byte for byte, with the page's security headers (added to hits too) and its Vary, one
    entry per language: a Japanese reader is not handed the English page."""
    client = cached_apps[0].test_client()
    alice = make_user(engine, "alice")
    root = publish(client, alice, title="Water Tracker")
    fork(client, alice, root["id"], "ounces", title="Water Tracker in Ounces")
    for url in (f"/s/{root['id']}", f"/s/{root['id']}/tree", "/?q=water", "/ranking"):
        missed, hit = _warm_and_hit(client, url)
        assert hit.get_data() == missed.get_data(), url
        assert (
            hit.headers["Content-Type"]
            == missed.headers["Content-Type"]
            == ("text/html; charset=utf-8")
        )
        for header in ("Vary", "Content-Security-Policy", "X-Frame-Options"):
            assert hit.headers[header] == missed.headers[header], (url, header)
    for language in ("en", "ja", "en", "ja"):
        answer = client.get(f"/s/{root['id']}", headers={"Accept-Language": language})
        assert f'<html lang="{language}">' in answer.get_data(as_text=True)


def test_a_page_made_private_leaves_every_workers_cache(cached_apps, engine):
    """A fork cached on another worker's tree and page is gone from both for anonymous
    readers once its author makes it private; its author, signed in, still sees it."""
    writer, reader = (a.test_client() for a in cached_apps)
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    root = publish(writer, alice, title="Water Tracker")
    secret = fork(writer, bob, root["id"], "secret", title="Secret Sipping Schedule")
    tree, page = f"/s/{root['id']}/tree", f"/s/{secret['id']}"
    for url in (tree, page):
        _warm_and_hit(reader, url)
    assert "Secret Sipping Schedule" in reader.get(tree).get_data(as_text=True)

    hidden = writer.patch(
        f"/api/v1/subagents/{secret['id']}", json={"visibility": "private"}, headers=bob.headers
    )
    assert hidden.status_code == 200
    assert _get_until(reader, page, 404).status_code == 404
    assert "Secret Sipping Schedule" not in reader.get(tree).get_data(as_text=True)
    sign_in(reader, bob)
    own = reader.get(page)
    assert own.status_code == 200 and "X-Sprig-Cache" not in own.headers


def test_a_signed_in_reader_is_never_served_nor_stored_a_shared_page(cached_apps, engine):
    client = cached_apps[0].test_client()
    alice = make_user(engine, "alice", display_name="Alice Creator")
    root = publish(client, alice, title="Water Tracker")
    url = f"/s/{root['id']}"
    anonymous, _ = _warm_and_hit(client, url)
    sign_in(client, alice)
    for _ in range(3):
        mine = client.get(url)
        assert "X-Sprig-Cache" not in mine.headers
        assert mine.headers["Cache-Control"] == "private, no-store"
        assert "Alice Creator" in mine.get_data(as_text=True)
        assert mine.get_data() != anonymous.get_data()
    # Its pages were not stored for anonymous readers either.
    other = cached_apps[0].test_client()
    assert other.get(url).get_data() == anonymous.get_data()


def test_a_chosen_language_is_cached_apart_and_its_cookie_is_never_stored(cached_apps, engine):
    """Choosing a language sets a cookie: that answer is the chooser's own and is not stored.
    Afterwards the language cookie alone (no session) is served from the cache, apart from
    readers who chose nothing."""
    client = cached_apps[0].test_client()
    root = publish(client, make_user(engine, "alice"), title="Water Tracker")
    url = f"/s/{root['id']}"
    plain, _ = _warm_and_hit(client, url)
    chose = client.get(f"{url}?lang=ja")
    assert "Set-Cookie" in chose.headers and "X-Sprig-Cache" not in chose.headers
    assert client.get_cookie("sprig_lang").value == "ja"
    in_japanese, hit = _warm_and_hit(client, url)
    assert hit.get_data() == in_japanese.get_data() != plain.get_data()
    assert '<html lang="ja">' in hit.get_data(as_text=True)
    fresh = cached_apps[0].test_client()
    assert fresh.get(url).get_data() == plain.get_data()


def test_a_cached_search_page_still_spends_the_search_limit(database_url, app, engine):
    with apps_with_read_cache(database_url, 1, rate_limit_search="4/60") as (limited,):
        client = limited.test_client()
        publish(client, make_user(engine, "alice"), title="Water Tracker")
        _missed, hit = _warm_and_hit(client, "/?q=water")  # spends at least two
        assert hit.status_code == 200
        statuses = [client.get("/?q=water").status_code for _ in range(4)]
        assert statuses[-1] == 429 and 200 in statuses
        assert client.get("/").status_code == 200  # browsing without a search is not limited
