"""``POST /api/v1/suggestions``: who may ask, bad input, freshness, privacy, context."""

from __future__ import annotations

import gc
import re
import threading
import time
from datetime import timedelta

import pytest
from sqlmodel import select

from market.catalog import bundles
from market.catalog import services as catalog
from market.catalog.models import SubAgent
from market.identity.models import User
from market.platform.db import make_engine, session_scope
from market.platform.state import app_state
from market.ranking.models import SubAgentScore
from tests.factories import bundle, fork, make_user, publish

URL = "/api/v1/suggestions"


@pytest.fixture
def coding_agent(engine):
    return make_user(engine, "coder", kind="service", scopes=["suggest", "publish:on-behalf"])


@pytest.fixture
def creator(engine):
    return make_user(engine, "creator")


def ask(client, actor, request: str, **extra):
    response = client.post(URL, json={"request": request, **extra}, headers=actor.headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def ids(answer) -> list[int]:
    return [item["subagent_id"] for item in answer["items"]]


def set_score(engine, subagent_id: int, quality: float, sd: float, ratings: int, young=False):
    with session_scope(engine) as session:
        row = session.get(SubAgentScore, subagent_id) or SubAgentScore(
            subagent_id=subagent_id, quality=0, quality_sd=1, display=0, branch_value=0
        )
        row.quality, row.quality_sd, row.display = quality, sd, quality - 1.64 * sd
        row.rating_count, row.young = ratings, young
        session.add(row)


def test_who_may_ask(client, engine, coding_agent, creator):
    publish(client, creator)
    body = {"request": "water tracker"}
    assert client.post(URL, json=body).status_code == 401
    no_scope = make_user(engine, "svc", kind="service", scopes=["events:write"])
    assert client.post(URL, json=body, headers=no_scope.headers).status_code == 403
    assert client.post(URL, json=body, headers=coding_agent.headers).status_code == 200
    # A person's own coding agent asks with the person's token.
    assert client.post(URL, json=body, headers=creator.headers).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"request": ""},
        {"request": "   ?!  "},
        {"request": "x" * 2001},
        {"request": "water\x00"},
        {"request": 42},
        {"request": "water", "k": 0},
        {"request": "water", "k": 21},
        {"request": "water", "k": "5"},
        {"request": "water", "k": 2.5},
        {"request": "water", "category": "cooking"},
        {"request": "water", "granted_scopes": "hydration.read"},
        {"request": "water", "granted_scopes": ["hydration.fly"]},
        {"request": "water", "granted_scopes": [""]},
        {"request": "water", "locale": "english please"},
        {"request": "water", "owner": "me"},
    ],
)
def test_bad_input_is_a_422_problem(client, coding_agent, body):
    response = client.post(URL, json=body, headers=coding_agent.headers)
    assert response.status_code == 422, body
    assert response.content_type == "application/problem+json"


def test_a_body_that_is_not_json_is_refused(client, coding_agent):
    response = client.post(URL, data="request=water", headers=coding_agent.headers)
    assert 400 <= response.status_code < 500


def test_the_sub_agent_written_for_the_request_comes_first(client, coding_agent, creator):
    water = publish(client, creator)
    sleep = publish(
        client,
        creator,
        title="Sleep Diary",
        summary="Note when you went to bed and how rested you felt.",
        story="I sleep badly and wanted to see why.",
        category="sleep",
        tags=["sleep", "diary"],
        bundle=bundle("sleep", scopes=["sleep.read", "sleep.write"]),
    )
    answer = ask(client, coding_agent, "a diary of how I sleep", k=5)
    assert ids(answer)[0] == sleep["id"]
    first = answer["items"][0]
    assert first["version_id"] == sleep["latest_version"]["id"]
    assert first["version_number"] == 1
    assert first["scopes"] == ["sleep.read", "sleep.write"]
    assert "sleep" in first["why"]["terms"] and "diary" in first["why"]["fields"]["title"]
    assert first["quality"] == {
        "mean": 0.0,
        "sd": 1.0,
        "young": True,
        "rating_count": 0,
        "ranked": False,
    }
    assert 0 < first["relevance"] <= 1
    assert answer["indexed"] == 2
    # Filters: category, and only bases whose permissions the user granted.
    assert ids(ask(client, coding_agent, "tracker diary", category="hydration")) == [water["id"]]
    granted = ask(client, coding_agent, "tracker diary", granted_scopes=["sleep.read"])
    assert granted["items"] == []
    both = ["sleep.read", "sleep.write", "hydration.read", "hydration.write"]
    assert set(ids(ask(client, coding_agent, "tracker diary", granted_scopes=both))) == {
        water["id"],
        sleep["id"],
    }


def test_publishes_are_suggested_without_a_rebuild(app, client, engine, coding_agent, creator):
    publish(client, creator)
    ask(client, coding_agent, "water")  # builds the index
    service = app_state(app).suggestions
    index = service.index
    # Published through this worker: indexed right after its commit.
    pomodoro = publish(
        client,
        creator,
        title="Pomodoro Timer",
        summary="Twenty-five minutes of focus, then a break.",
        category="study",
        tags=["focus"],
    )
    assert ids(ask(client, coding_agent, "pomodoro focus timer"))[0] == pomodoro["id"]
    # A new version re-indexes the same sub-agent.
    response = client.post(
        f"/api/v1/subagents/{pomodoro['id']}/versions",
        json={"changelog": "adds a gong", "bundle": bundle("gong")},
        headers=creator.headers,
    )
    assert response.status_code == 201
    again = ask(client, coding_agent, "pomodoro focus timer")
    assert again["items"][0]["version_number"] == 2
    # Published by another process (straight into the database): caught up from updated_at.
    with session_scope(engine) as session:
        author = session.exec(select(User).where(User.handle == creator.handle)).one()
        catalog.publish(
            session,
            author,
            title="Houseplant Watering Calendar",
            category="home",
            bundle=bundles.bundle_from_json(bundle("plants", scopes=["home.read"])),
            summary="Which plant needs water this week.",
        )
    service.refresh_seconds = 0.0
    answer = ask(client, coding_agent, "houseplant watering calendar")
    assert answer["items"][0]["title"] == "Houseplant Watering Calendar"
    assert service.index is index  # the same index, grown, never rebuilt


def test_private_and_unlisted_never_appear(app, client, engine, coding_agent, creator):
    publish(client, creator, title="Public Kombucha Log", summary="Brew batches.")
    secret = publish(
        client, creator, title="Secret Kombucha Log", summary="Brew batches.", visibility="private"
    )
    unlisted = publish(
        client,
        creator,
        title="Unlisted Kombucha Log",
        summary="Brew batches.",
        visibility="unlisted",
    )
    answer = ask(client, creator, "kombucha brew log", k=20)
    assert secret["id"] not in ids(answer) and unlisted["id"] not in ids(answer)
    assert len(ids(answer)) == 1
    # Made private after being indexed: gone at once, before any catch-up.
    public_id = ids(answer)[0]
    app_state(app).suggestions.refresh_seconds = 3600.0
    response = client.patch(
        f"/api/v1/subagents/{public_id}", json={"visibility": "private"}, headers=creator.headers
    )
    assert response.status_code == 200
    assert ask(client, coding_agent, "kombucha brew log")["items"] == []
    # Private forks neither.
    parent = publish(client, creator, title="Hiking Checklist", summary="Pack for a day hike.")
    fork(client, creator, parent["id"], "secret hiking", visibility="private", title="Secret Hike")
    answer = ask(client, coding_agent, "secret hike checklist", k=20)
    assert ids(answer) == [parent["id"]]


def test_quality_reorders_relevant_bases(client, engine, coding_agent, creator):
    first = publish(client, creator, title="Tea Timer", summary="Steep tea right.", tags=["tea"])
    second = publish(
        client,
        creator,
        title="Tea Timer",
        summary="Steep tea right.",
        tags=["tea"],
        bundle=bundle("second tea"),
    )
    assert ids(ask(client, coding_agent, "tea timer"))[:2] == [first["id"], second["id"]]
    set_score(engine, first["id"], -1.0, 0.1, 40)
    set_score(engine, second["id"], 1.0, 0.1, 40)
    answer = ask(client, coding_agent, "tea timer")
    assert ids(answer)[:2] == [second["id"], first["id"]]
    assert answer["items"][0]["quality"]["ranked"] is True
    assert answer["items"][0]["quality"]["rating_count"] == 40


def test_themes_and_improving_forks(client, engine, coding_agent, creator):
    parent = publish(client, creator)
    child = fork(
        client,
        creator,
        parent["id"],
        "ounces",
        title="Water Tracker in Ounces",
        fork_request="use ounces instead of millilitres",
        bundle=bundle("oz", scopes=["hydration.read", "hydration.write", "health.read"]),
    )
    worse = fork(client, creator, parent["id"], "red", title="Red Water Tracker")
    set_score(engine, parent["id"], 0.0, 0.2, 30)
    set_score(engine, child["id"], 0.8, 0.25, 12)
    set_score(engine, worse["id"], -0.5, 0.3, 9)
    raters = [make_user(engine, f"rater{i}") for i in range(4)]
    comments = [
        ("please add a reminder, write me at sam@example.org", ["wants reminders"]),
        ("A reminder in the evening would help", []),
        ("call me on +1 415 555 0134 about dark mode", []),
        ("needs dark mode for night", []),
    ]
    for rater, (comment, tags) in zip(raters, comments, strict=True):
        installed = client.post(f"/api/v1/subagents/{parent['id']}/install", headers=rater.headers)
        assert installed.status_code == 201, installed.get_json()
        response = client.post(
            "/api/v1/feedback",
            json={
                "version_id": parent["latest_version"]["id"],
                "stars": 3,
                "comment": comment,
                "tags": tags,
            },
            headers=rater.headers,
        )
        assert response.status_code == 201, response.get_json()
    answer = ask(client, coding_agent, "water tracker", k=3)
    item = next(i for i in answer["items"] if i["subagent_id"] == parent["id"])
    themes = {t["label"]: t for t in item["themes"]}
    assert themes["wants reminders"]["count"] == 2
    # Newest first, contact details replaced.
    assert themes["wants reminders"]["examples"] == [
        "A reminder in the evening would help",
        "please add a reminder, write me at [email]",
    ]
    assert themes["dark / mode"]["examples"] == [
        "needs dark mode for night",
        "call me on [phone] about dark mode",
    ]
    text = str(answer)
    assert "sam@example.org" not in text and "555 0134" not in text
    [improvement] = item["improving_forks"]
    assert improvement["fork_id"] == child["id"]
    assert improvement["improvement"] == pytest.approx(0.8)
    assert improvement["request"] == "use ounces instead of millilitres"
    assert improvement["scopes_added"] == ["health.read"]
    assert set(improvement["files_changed"]) == {"index.html", "app.js"}
    assert improvement["version_id"] == child["latest_version"]["id"]
    assert "+scope health.read" in improvement["summary"]


def test_yanked_sub_agents_are_not_suggested(client, engine, coding_agent, creator):
    yanked = publish(client, creator, title="Abacus Drill", summary="Mental arithmetic.")
    assert ids(ask(client, coding_agent, "abacus drill")) == [yanked["id"]]
    response = client.post(
        f"/api/v1/subagents/{yanked['id']}/yank",
        json={"reason": "broken on phones"},
        headers=creator.headers,
    )
    assert response.status_code == 200
    assert ask(client, coding_agent, "abacus drill")["items"] == []
    with session_scope(engine) as session:
        assert session.get(SubAgent, yanked["id"]).status == "yanked"


def test_listing_changes_by_other_processes_are_swept_in(
    app, client, engine, coding_agent, creator
):
    hidden = publish(
        client, creator, title="Quince Jam Planner", summary="Jam batches.", visibility="private"
    )
    assert ask(client, coding_agent, "quince jam planner")["items"] == []
    service = app_state(app).suggestions
    # Another process makes it public: no new version, only the row's updated_at moves.
    with session_scope(engine) as session:
        row = session.get(SubAgent, hidden["id"])
        catalog.update_listing(
            session,
            catalog.viewer_for(session.get(User, creator.id)),
            row,
            {"visibility": "public"},
        )
    service.refresh_seconds = service.sweep_seconds = 0.0
    assert ids(ask(client, coding_agent, "quince jam planner")) == [hidden["id"]]
    assert hidden["id"] in service.index


def test_a_catch_up_that_fails_part_way_is_read_again_from_where_it_started(
    app, client, engine, creator, monkeypatch
):
    """A catch-up whose re-read fails (the database restarted or failed over under it) moves
    none of its marks: the next one reads again all that the failed one had found. Had the
    marks moved as the changes were found, what it failed to index would be passed for good:
    the versions seen, and every listing changed before the newest it saw."""
    from sqlalchemy.exc import OperationalError
    from sqlmodel import Session

    from market.suggestions import services as suggestions

    monkeypatch.setattr(suggestions, "CATCH_UP_OVERLAP", timedelta(0))
    shown = publish(client, creator, title="Medlar Jelly Log", visibility="private")
    worker = suggestions.SuggestionService(engine)  # another worker's; the app is the other
    worker.prepare()
    # Changed by the other process: a new listing, then a listing made public.
    published = publish(client, creator, title="Quince Jam Planner")
    time.sleep(0.01)
    with session_scope(engine) as session:
        row = session.get(SubAgent, shown["id"])
        viewer = catalog.viewer_for(session.get(User, creator.id))
        catalog.update_listing(session, viewer, row, {"visibility": "public"})

    def database_gone(session, ids):
        raise OperationalError("SELECT", {}, Exception("server closed the connection"))

    with monkeypatch.context() as patch, Session(engine) as session:
        patch.setattr(worker, "_reindex", database_gone)
        with pytest.raises(OperationalError):
            worker.catch_up(session, force=True)
    with Session(engine) as session:
        assert worker.catch_up(session, force=True) == 2
    assert published["id"] in worker.index and shown["id"] in worker.index


def test_a_worker_builds_its_index_as_it_starts(app, client, creator):
    """gunicorn's post_worker_init hook builds the suggestion index on a thread of its own,
    before any request asks for it, and the index holds what is listed."""
    from types import SimpleNamespace

    from market.entrypoints import gunicorn_conf

    listed = publish(client, creator, title="Warm water log")
    service = app_state(app).suggestions
    assert service._index is None  # nothing has asked for it yet
    started = set(threading.enumerate())
    gunicorn_conf.post_worker_init(SimpleNamespace(wsgi=app))
    (warm_up,) = [t for t in threading.enumerate() if t not in started]
    assert warm_up.name == "suggestion-index-warm-up"
    warm_up.join(timeout=60)
    assert service._index is not None
    assert listed["id"] in {match.subagent_id for match in service.index.search("water log")}


def test_a_worker_takes_over_the_masters_build_once_and_catches_up(
    app, client, creator, tmp_path, monkeypatch
):
    """The index the gunicorn master built before forking is taken over by the first service
    on the same database (not rebuilt), by one service only, and brought up to date with what
    was published after the master read it; another database's service builds its own."""
    from types import SimpleNamespace

    from market.entrypoints import gunicorn_conf
    from market.suggestions import services as suggestions

    monkeypatch.setattr(suggestions, "_before_fork", None)  # whatever happens, none is left
    monkeypatch.setattr(gc, "freeze", lambda: None)  # the test process stays collectable
    before = publish(client, creator, title="Quinoa soak timer")
    suggestions.build_before_fork(app_state(app).engine)  # as gunicorn's master does
    inherited = suggestions._before_fork
    assert inherited is not None and before["id"] in inherited.index
    after = publish(client, creator, title="Quinoa rinse counter")
    assert after["id"] not in inherited.index

    elsewhere = make_engine(f"sqlite:///{tmp_path / 'elsewhere.db'}")
    assert suggestions._inherited_build(elsewhere) is None  # not this database's
    elsewhere.dispose()

    service = app_state(app).suggestions
    service._index = None  # as in a worker fresh from the fork
    started = set(threading.enumerate())
    gunicorn_conf.post_worker_init(SimpleNamespace(wsgi=app))
    (warm_up,) = [t for t in threading.enumerate() if t not in started]
    warm_up.join(timeout=60)
    assert service._index is inherited.index  # taken over, not rebuilt
    assert suggestions._before_fork is None  # and by this service only
    found = {match.subagent_id for match in service.index.search("quinoa")}
    assert {before["id"], after["id"]} <= found


def test_no_request_is_answered_from_a_taken_over_build_before_it_caught_up(
    app, client, creator, coding_agent, monkeypatch
):
    """A worker's first catch-up after taking over the master's build marks itself done as
    it starts; a request arriving meanwhile must still wait for it, or it would answer (and
    the read cache keep) an index that predates every publish since the master read it."""
    from market.suggestions import services as suggestions

    monkeypatch.setattr(suggestions, "_before_fork", None)
    monkeypatch.setattr(gc, "freeze", lambda: None)
    suggestions.build_before_fork(app_state(app).engine)
    late = publish(client, creator, title="Sauerkraut crock log")
    service = app_state(app).suggestions
    service._index = None
    service.index  # noqa: B018 - takes the master's build over, not caught up yet
    found: list = []
    with service._catch_up_lock:  # another thread's catch-up under way, its marks set
        service._checked_at = service._swept_at = time.monotonic()
        thread = threading.Thread(
            target=lambda: found.append(ids(ask(client, coding_agent, "sauerkraut crock log")))
        )
        thread.start()
        thread.join(timeout=0.5)
        assert thread.is_alive() and not found
    thread.join(timeout=10)
    assert found == [[late["id"]]]


def test_a_catch_up_in_progress_holds_back_only_the_requests_that_need_it(
    app, client, creator, coding_agent
):
    """A catch-up reads the database without holding the index: while one is in progress
    (its lock held here), a request with nothing new to read is answered at once, and one
    that needs an announced change waits until the catch-up is done, then answers."""
    listed = publish(client, creator, title="Kombucha brew log")
    service = app_state(app).suggestions
    service.prepare()
    service.refresh_seconds = service.sweep_seconds = 3600.0

    def answered_within(seconds: float) -> tuple[threading.Thread, list]:
        found: list = []
        thread = threading.Thread(
            target=lambda: found.append(ids(ask(client, coding_agent, "kombucha brew log")))
        )
        thread.start()
        thread.join(timeout=seconds)
        return thread, found

    with service._catch_up_lock:  # a catch-up under way in another request
        thread, found = answered_within(10)
        assert not thread.is_alive() and found == [[listed["id"]]]
        service._change_generation = lambda: 7  # another process announced a change
        thread, found = answered_within(0.5)
        assert thread.is_alive() and not found  # it waits for the catch-up
    thread.join(timeout=10)
    assert found == [[listed["id"]]]
    assert service._generation_seen == 7


@pytest.mark.parametrize(
    ("request_text", "meaningful"),
    [
        ("记账", True),
        ("家計簿", True),
        ("가계부", True),
        ("Ìñ", True),
        ("🏃", False),  # an emoji alone: no word to search for
        ("🏃 run", True),
        ("water", True),
        ("   ?!  ", False),
        ("___", False),
        ("¡¿«»", False),
    ],
)
def test_the_documented_pattern_means_what_the_server_checks(
    client, coding_agent, request_text, meaningful
):
    """Clients read the document's regex by JavaScript's rules (\\w is ASCII only, as Python's
    re.ASCII; an emoji is two UTF-16 halves) or by Python's (fuzzers, jsonschema): by both, a
    request the document calls valid is one the server takes, in any script, and the reverse."""
    document = client.get("/api/v1/openapi.json").get_json()
    pattern = document["components"]["schemas"]["SuggestionsIn"]["properties"]["request"]["pattern"]
    as_javascript = re.compile(pattern, re.ASCII)
    # JavaScript matches an astral character as its two UTF-16 halves.
    utf16_units = memoryview(request_text.encode("utf-16-le")).cast("H")
    utf16_view = "".join(chr(unit) for unit in utf16_units)
    assert bool(as_javascript.search(utf16_view)) is meaningful
    assert bool(re.search(pattern, request_text)) is meaningful  # as Python validators read it
    response = client.post(URL, json={"request": request_text}, headers=coding_agent.headers)
    assert response.status_code == (200 if meaningful else 422), response.get_json()
