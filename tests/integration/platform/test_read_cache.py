"""The anonymous read cache never serves what a write has hidden (PostgreSQL only)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest

from market.app import create_app
from market.platform.state import app_state
from tests.factories import catalog_of_templates, fork, make_user, publish, publish_app
from tests.functional.test_metrics import scrape, value
from tests.functional.web.test_pages import sign_in
from tests.integration.ranking.test_lineage_runs import two_families
from tests.integration.ranking.test_services import rank, rate, version


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
    """A cached search page still spends its reader's search limit; one refused (429) is not
    counted as an answer from the cache, since the cache's answer was not given."""
    with apps_with_read_cache(database_url, 1, rate_limit_search="4/60") as (limited,):
        client = limited.test_client()
        monitor = make_user(engine, "prometheus", kind="service", scopes=["metrics:read"])
        publish(client, make_user(engine, "alice"), title="Water Tracker")
        _missed, hit = _warm_and_hit(client, "/?q=water")  # spends at least two
        assert hit.status_code == 200
        before = value(scrape(client, monitor), "sprig_read_cache_answers_total", outcome="hit")
        statuses = [client.get("/?q=water").status_code for _ in range(4)]
        assert statuses[-1] == 429 and 200 in statuses
        after = value(scrape(client, monitor), "sprig_read_cache_answers_total", outcome="hit")
        assert after - before == statuses.count(200)
        assert client.get("/").status_code == 200  # browsing without a search is not limited


# ---- a change drops its own lineage's entries and the lists, not other lineages' ---------


def _state(client, url) -> str:
    return client.get(url).headers.get("X-Sprig-Cache", "")


def test_a_fork_drops_its_lineage_at_once_and_reaches_lists_within_seconds(cached_apps, engine):
    """A popular sub-agent's cached pages outlive the community's publishing elsewhere: a fork
    in one lineage drops that lineage's entries (API and pages), on the worker that wrote and
    on the other, and nothing of another lineage. Lists (an addition hides nothing) show it
    within the cache's few seconds for additions; a change that hides drops them at once."""
    writer, reader = (a.test_client() for a in cached_apps)
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    water = publish(writer, alice, title="Water Tracker")
    meals = publish(writer, alice, title="Meal Planner")
    touched = [f"/api/v1/subagents/{water['id']}", f"/s/{water['id']}/tree"]
    untouched = [f"/api/v1/subagents/{meals['id']}", f"/s/{meals['id']}"]
    lists = ["/api/v1/subagents?sort=new", "/?sort=new"]
    for client in (writer, reader):
        for url in touched + untouched + lists:
            _warm_and_hit(client, url)

    made = fork(writer, bob, water["id"], "reminders", title="Water Reminders")
    added = time.monotonic()
    # The writer dropped its entries before answering; the other worker once it heard.
    deadline = added + 3
    while _state(reader, touched[0]) == "hit":
        assert time.monotonic() < deadline, "the other worker never heard of the fork"
        time.sleep(0.02)
    for client in (writer, reader):
        # Kept, not dropped: an addition reaches lists when they expire, within seconds.
        assert [_state(client, url) for url in lists] == ["hit", "hit"]
        assert all(_state(client, url) == "hit" for url in untouched), "another lineage dropped"
        assert _state(client, touched[1]) == "miss"
        assert "Water Reminders" in client.get(touched[1]).get_data(as_text=True)
        assert client.get(touched[0]).get_json()["fork_count"] == 1
    for client in (writer, reader):
        while client.get(lists[0]).get_json()["items"][0]["id"] != made["id"]:
            assert time.monotonic() < added + 10, "a list never showed the fork"
            time.sleep(0.1)
        assert "Water Reminders" in client.get(lists[1]).get_data(as_text=True)

    for client in (writer, reader):
        _warm(client, lists[1])
    hidden = writer.patch(
        f"/api/v1/subagents/{made['id']}", json={"visibility": "private"}, headers=bob.headers
    )
    assert hidden.status_code == 200
    assert "Water Reminders" not in writer.get(lists[1]).get_data(as_text=True)
    deadline = time.monotonic() + 3
    while "Water Reminders" in reader.get(lists[1]).get_data(as_text=True):
        assert time.monotonic() < deadline, "a list kept showing what was made private"
        time.sleep(0.02)


def test_an_edit_of_a_root_drops_its_forks_pages_which_name_it(cached_apps, engine):
    """A fork's entries belong to its whole lineage, not to the fork alone: renaming the root
    drops the fork's cached page, which says what it was forked from."""
    writer, reader = (a.test_client() for a in cached_apps)
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    water = publish(writer, alice, title="Water Tracker")
    reminders = fork(writer, bob, water["id"], "reminders", title="Water Reminders")
    page = f"/s/{reminders['id']}"
    _warm_and_hit(reader, page)
    assert "Water Tracker" in reader.get(page).get_data(as_text=True)

    renamed = writer.patch(
        f"/api/v1/subagents/{water['id']}", json={"title": "Hydration Log"}, headers=alice.headers
    )
    assert renamed.status_code == 200
    deadline = time.monotonic() + 3
    while "Hydration Log" not in reader.get(page).get_data(as_text=True):
        assert time.monotonic() < deadline, "the fork's page kept its root's old name"
        time.sleep(0.02)


def test_a_copy_adopting_a_parent_drops_both_lineages(cached_apps, engine):
    """Accepting a near-copy offer moves a root into the original's lineage: the copy's cached
    pages (its lineage was itself) and the original's tree are both dropped on every worker."""
    writer, reader = (a.test_client() for a in cached_apps)
    alice, bob, carol = (make_user(engine, name) for name in ("alice", "bob", "carol"))
    water = catalog_of_templates(writer, engine, alice, carol)
    copy = publish_app(writer, bob, "water", name="Hydration Buddy")
    assert [offer["id"] for offer in copy["near_copies"]] == [water["id"]]
    lineage, tree = f"/api/v1/subagents/{copy['id']}/lineage", f"/s/{water['id']}/tree"
    for url in (lineage, tree):
        _warm_and_hit(reader, url)
    assert reader.get(lineage).get_json()["ancestors"] == []

    adopted = writer.post(
        f"/api/v1/subagents/{copy['id']}/adopt-parent",
        json={"parent_id": water["id"]},
        headers=bob.headers,
    )
    assert adopted.status_code == 200, adopted.get_json()
    deadline = time.monotonic() + 3
    while _state(reader, lineage) == "hit":
        assert time.monotonic() < deadline, "the copy's lineage was not dropped"
        time.sleep(0.02)
    ancestors = reader.get(lineage).get_json()["ancestors"]
    assert [node["subagent"]["id"] for node in ancestors] == [water["id"]]
    assert _state(reader, tree) == "miss"
    assert "Hydration Buddy" in reader.get(tree).get_data(as_text=True)


def test_the_routes_scoped_to_a_lineage_are_the_reviewed_ones(app):
    """Every cacheable route that names a sub-agent is stored as that sub-agent's lineage's
    entry (``market.app._lineage_shown``): only a change to that lineage drops it. That is
    right only for a route that shows nothing of another lineage; a new one is added here
    once that was checked (otherwise it would keep showing another lineage's old state)."""
    from market.platform.api import API_PREFIX
    from market.web.blueprint import SHARED_PAGES

    scoped = {
        rule.endpoint
        for rule in app.url_map.iter_rules()
        if "GET" in rule.methods
        and "subagent_id" in rule.arguments
        and (rule.endpoint in SHARED_PAGES or rule.rule.startswith(f"{API_PREFIX}/subagents"))
    }
    assert scoped == {
        # The API: a sub-agent, its versions and their files, forks, lineage, tree, diffs, a
        # switch to a branch of its lineage, its upstream updates, near-copy offers (its
        # author's: never cached), its stats.
        "subagents.get_subagent",
        "subagents.list_versions",
        "subagents.get_bundle",
        "subagents.list_forks",
        "subagents.get_lineage",
        "subagents.get_tree",
        "subagents.get_diff",
        "subagents.get_switch_plan",
        "subagents.list_upstream_updates",
        "subagents.list_near_copies",
        "usage.subagent_stats",
        # The pages: a sub-agent, its tree (and its JSON parts), its diff.
        "web.subagent_page",
        "web.tree_page",
        "web.tree_children",
        "web.tree_all",
        "web.diff_page",
    }


def test_a_ranking_run_drops_the_lineages_whose_scores_moved(cached_apps, client, engine):
    """A lineage run over new ratings of one family drops that family's cached details (their
    figures moved) and not the other family's, whose rows it left as they were."""
    families = two_families(client, engine)
    rank(engine)
    reader = cached_apps[1].test_client()
    water, meals = (f"/api/v1/subagents/{families[name]['id']}" for name in ("water_a", "meals"))
    for url in (water, meals):
        _warm_and_hit(reader, url)
    for user_id in families["raters"][:5]:
        rate(client, families["service"], user_id, version(families["water_a"]), 5)
    run = rank(engine, now=datetime.now(UTC) + timedelta(minutes=1), lookback=timedelta(0))
    assert (run.mode, run.trees_recomputed) == ("incremental", 1)
    deadline = time.monotonic() + 3
    while _state(reader, water) == "hit":
        assert time.monotonic() < deadline, "the re-ranked lineage was not dropped"
        time.sleep(0.02)
    assert _state(reader, meals) == "hit"


def test_the_share_of_answers_from_the_cache_is_counted_for_prometheus(cached_apps, engine):
    """The hit share sizes the web tier (docs/capacity.md): each answer the cache gave and
    each it could have given but did not is counted; a signed-in read is neither."""
    client = cached_apps[0].test_client()
    alice = make_user(engine, "alice")
    monitor = make_user(engine, "prometheus", kind="service", scopes=["metrics:read"])
    url = f"/api/v1/subagents/{publish(client, alice)['id']}"
    _warm(client, url)
    before = scrape(client, monitor)
    client.get(url)
    client.get(url, headers=alice.headers)
    client.get(f"{url}/lineage")
    after = scrape(client, monitor)
    name = "sprig_read_cache_answers_total"
    hits = value(after, name, outcome="hit") - value(before, name, outcome="hit")
    misses = value(after, name, outcome="miss") - value(before, name, outcome="miss")
    assert (hits, misses) == (1, 1)


def test_readers_racing_a_hiding_write_never_get_it_back_from_the_cache(cached_apps, engine):
    """Readers hammer a lineage's tree on the worker that writes while its author shows and at
    once hides a fork, over and over, so that pages rebuilt after the first write are being
    built while the second commits. One built before the hiding commit but stored after it
    would be served to later readers from the cache: no request sent after the hiding write
    returned and answered before the fork was shown again may show it. (Without the check
    that refuses such a page, this fails.)"""
    writer_app = cached_apps[0]
    writer = writer_app.test_client()
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    root = publish(writer, alice, title="Water Tracker")
    secret = fork(writer, bob, root["id"], "secret", title="Secret Sipping Schedule")
    tree, listing = f"/s/{root['id']}/tree", f"/api/v1/subagents/{secret['id']}"
    _warm(writer, tree)
    answers: list[tuple[float, float, bool]] = []  # (sent, answered, showed the fork)
    stop = threading.Event()

    def read() -> None:
        client = writer_app.test_client()
        while not stop.is_set():
            sent = time.monotonic()
            page = client.get(tree).get_data(as_text=True)
            answers.append((sent, time.monotonic(), "Secret Sipping Schedule" in page))

    readers = [threading.Thread(target=read) for _ in range(4)]
    for reader in readers:
        reader.start()
    hidden_at: list[tuple[float, float]] = []  # (hidden, shown again) moments
    try:
        for _ in range(20):
            # Shown, then hidden at once: the readers' rebuilds of the page after the first
            # write are under way while the second commits.
            shown = writer.patch(listing, json={"visibility": "public"}, headers=bob.headers)
            hidden = writer.patch(listing, json={"visibility": "private"}, headers=bob.headers)
            assert shown.status_code == hidden.status_code == 200
            hidden_at.append((time.monotonic(), time.monotonic() + 0.15))
            time.sleep(0.15)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    # Sent after a hiding write returned and answered before it was undone: hidden throughout.
    stale = [
        sent
        for sent, answered, shows_it in answers
        if shows_it and any(hidden <= sent and answered < shown for hidden, shown in hidden_at)
    ]
    assert len(answers) > 50 and not stale, f"{len(stale)} of {len(answers)} answers were stale"
