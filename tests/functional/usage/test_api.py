"""Usage events, feedback and stats through the HTTP API, on every backend.

Bad input first (caps, malformed items, references, scopes), then the behaviour the clients
rely on: per-item results, exactly-once storage by event id, one rating per user and version,
and who sees which stats.
"""

from __future__ import annotations

import io
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import func, select

from market.platform.db import session_scope
from market.usage.models import Feedback, UsageEvent
from tests.factories import Actor, bundle, fork, make_user, publish

API = "/api/v1"
EVENTS = f"{API}/events"
FEEDBACK = f"{API}/feedback"
PROBLEM = "application/problem+json"


@dataclass
class World:
    alice: Actor  # author of `public` and `private`
    bob: Actor  # another person
    service: Actor  # events:write and feedback:on-behalf
    bare_service: Actor  # a service without events:write
    public_id: int
    public_version: int
    private_id: int
    private_version: int


@pytest.fixture
def world(client, engine) -> World:
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    service = make_user(
        engine, "collector", kind="service", scopes=["events:write", "feedback:on-behalf"]
    )
    bare = make_user(engine, "recommender", kind="service", scopes=["recommend"])
    public = publish(client, alice, title="Water Tracker")
    private = publish(client, alice, title="Secret Diary", visibility="private")
    return World(
        alice=alice,
        bob=bob,
        service=service,
        bare_service=bare,
        public_id=public["id"],
        public_version=public["latest_version"]["id"],
        private_id=private["id"],
        private_version=private["latest_version"]["id"],
    )


def event(world: World, **fields) -> dict:
    body = {
        "event_id": str(uuid.uuid4()),
        "user_id": world.bob.id,
        "subagent_id": world.public_id,
        "version_id": world.public_version,
        "kind": "open",
        "occurred_at": (datetime.now(UTC) - timedelta(minutes=5)).isoformat(),
    }
    body.update(fields)
    return body


def send(client, world: World, events: list, actor: Actor | None = None):
    actor = actor or world.service
    return client.post(EVENTS, json={"events": events}, headers=actor.headers)


def stored_ids(engine) -> set[str]:
    with session_scope(engine) as session:
        return {str(i) for i in session.execute(select(UsageEvent.event_id)).scalars()}


def count(engine, model) -> int:
    with session_scope(engine) as session:
        return session.execute(select(func.count()).select_from(model)).scalar_one()


def assert_problem(response, status: int) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    assert response.mimetype == PROBLEM
    body = response.get_json()
    assert body["status"] == status and body["detail"]
    return body


# ---- POST /events: caps ---------------------------------------------------------------


def test_more_than_1000_events_is_413_and_stores_nothing(client, engine, world):
    events = [event(world) for _ in range(1001)]
    assert_problem(send(client, world, events), 413)
    assert count(engine, UsageEvent) == 0
    # the cap is inclusive: exactly 1,000 go through
    ok = send(client, world, events[:1000])
    assert ok.status_code == 202, ok.get_json()
    assert ok.get_json()["stored"] == 1000
    assert stored_ids(engine) == {e["event_id"] for e in events[:1000]}


def test_a_body_over_1_mib_is_413_and_stores_nothing(client, engine, world):
    events = [event(world) for _ in range(3)]
    body = json.dumps({"events": events})
    padded = body + " " * (1024 * 1024 + 1 - len(body))  # still valid JSON
    assert len(padded) == 1024 * 1024 + 1
    response = client.post(
        EVENTS, data=padded, content_type="application/json", headers=world.service.headers
    )
    assert_problem(response, 413)
    assert count(engine, UsageEvent) == 0
    exactly = body + " " * (1024 * 1024 - len(body))
    ok = client.post(
        EVENTS, data=exactly, content_type="application/json", headers=world.service.headers
    )
    assert ok.status_code == 202 and ok.get_json()["stored"] == 3
    # 1,000 events (within the count cap) whose properties add up to more than 1 MiB
    heavy = [event(world, properties={"note": "x" * 1000}) for _ in range(1000)]
    assert len(json.dumps({"events": heavy})) > 1024 * 1024
    assert_problem(send(client, world, heavy), 413)
    assert count(engine, UsageEvent) == 3


def test_a_chunked_body_over_1_mib_is_also_413(client, engine, world):
    body = json.dumps({"events": [event(world)]}).encode()
    body += b" " * (2 * 1024 * 1024)
    response = client.post(
        EVENTS,
        input_stream=io.BytesIO(body),
        headers={**world.service.headers, "Transfer-Encoding": "chunked"},
        content_type="application/json",
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert response.status_code == 413, response.status_code
    assert count(engine, UsageEvent) == 0


def test_bodies_that_are_not_a_batch(client, engine, world):
    headers = world.service.headers
    not_json = client.post(EVENTS, data="{nope", content_type="application/json", headers=headers)
    assert_problem(not_json, 400)
    assert_problem(client.post(EVENTS, json={"events": {"a": 1}}, headers=headers), 422)
    assert_problem(client.post(EVENTS, json=[event(world)], headers=headers), 422)
    assert_problem(client.post(EVENTS, json={"events": [], "x": 1}, headers=headers), 422)
    assert count(engine, UsageEvent) == 0


# ---- POST /events: per-item validation -------------------------------------------------


def test_malformed_events_are_rejected_one_by_one_and_the_rest_stored(client, engine, world):
    now = datetime.now(UTC)
    good_first, good_last = event(world), event(world, kind="session_end", duration_ms=1200)
    cases = [
        (event(world, event_id="not-a-uuid"), "event_id must be a UUID string"),
        (event(world, colour="red"), "unknown fields: colour"),
        (event(world, user_id=True), "user_id must be a positive integer"),
        (event(world, subagent_id=0), "subagent_id must be a positive integer"),
        (event(world, version_id="7"), "version_id must be a positive integer"),
        (event(world, kind="purchase"), "kind must be one of"),
        (event(world, occurred_at="2026-01-01T10:00:00"), "occurred_at must be an ISO 8601"),
        (event(world, occurred_at=(now + timedelta(hours=1)).isoformat()), "in the future"),
        (event(world, occurred_at=(now - timedelta(days=8)).isoformat()), "more than 7 days"),
        (event(world, duration_ms=-1), "duration_ms must be an integer"),
        (event(world, duration_ms=24 * 3600 * 1000 + 1), "duration_ms must be an integer"),
        (event(world, properties=["a"]), "properties must be an object"),
        (event(world, properties={"x": "y" * 1100}), "properties exceed 1024 bytes"),
        (event(world, exposure_id="nope"), "exposure_id must be a UUID string"),
    ]
    items = [good_first, *(raw for raw, _ in cases), good_last]
    response = send(client, world, items)
    assert response.status_code == 202, response.get_json()
    body = response.get_json()
    assert (body["stored"], body["duplicates"], body["rejected"]) == (2, 0, len(cases))
    results = body["results"]
    assert [r["index"] for r in results] == list(range(len(items)))
    assert results[0]["status"] == results[-1]["status"] == "stored"
    for result, (raw, reason) in zip(results[1:-1], cases, strict=True):
        assert result["status"] == "rejected"
        assert reason in result["reason"], (raw, result)
        if raw["event_id"] != "not-a-uuid":
            assert result["event_id"] == raw["event_id"]
    assert stored_ids(engine) == {good_first["event_id"], good_last["event_id"]}


def test_a_non_object_item_is_rejected_alone(client, engine, world):
    good = event(world)
    response = send(client, world, [good, "not an object", None, [1]])
    assert response.status_code == 202, response.get_json()
    results = response.get_json()["results"]
    assert [r["status"] for r in results] == ["stored", "rejected", "rejected", "rejected"]
    assert results[1]["reason"] == "an event is a JSON object"
    assert stored_ids(engine) == {good["event_id"]}


def test_unknown_references_are_rejected(client, engine, world):
    other = publish(client, world.bob, title="Bob Steps")
    items = [
        event(world, subagent_id=999_999),
        event(world, version_id=other["latest_version"]["id"]),
        event(world, version_id=999_999),
        event(world, user_id=999_999),
        event(world),
    ]
    results = send(client, world, items).get_json()["results"]
    assert [(r["status"], r.get("reason")) for r in results] == [
        ("rejected", "unknown sub-agent"),
        ("rejected", "version does not belong to the sub-agent"),
        ("rejected", "version does not belong to the sub-agent"),
        ("rejected", "unknown user"),
        ("stored", None),
    ]
    assert stored_ids(engine) == {items[-1]["event_id"]}


def test_private_subagent_looks_unknown_unless_the_user_is_its_author(client, engine, world):
    items = [
        # bob using alice's private sub-agent: answered exactly like a made-up id
        event(world, subagent_id=world.private_id, version_id=world.private_version),
        event(world, subagent_id=999_999, version_id=world.private_version),
        # a version of the private sub-agent under a public one: like a made-up version
        event(world, version_id=world.private_version),
        event(world, version_id=999_999),
        # alice herself
        event(
            world,
            user_id=world.alice.id,
            subagent_id=world.private_id,
            version_id=world.private_version,
        ),
    ]
    results = send(client, world, items).get_json()["results"]
    assert results[0]["status"] == results[1]["status"] == "rejected"
    assert results[0]["reason"] == results[1]["reason"] == "unknown sub-agent"
    assert results[2]["reason"] == results[3]["reason"]
    assert results[4]["status"] == "stored"
    assert stored_ids(engine) == {items[4]["event_id"]}


# ---- POST /events: who may send -------------------------------------------------------


def test_only_services_with_events_write_may_send(client, engine, world):
    batch = {"events": [event(world)]}
    assert_problem(client.post(EVENTS, json=batch), 401)
    assert_problem(client.post(EVENTS, json=batch, headers=world.alice.headers), 403)
    assert_problem(client.post(EVENTS, json=batch, headers=world.bare_service.headers), 403)
    bad_token = {"Authorization": "Bearer sprig_" + "x" * 43}
    assert_problem(client.post(EVENTS, json=batch, headers=bad_token), 401)
    assert count(engine, UsageEvent) == 0


# ---- POST /events: exactly once -------------------------------------------------------


def test_duplicate_ids_in_one_batch_are_stored_once(client, engine, world):
    first = event(world)
    other = event(world)
    items = [first, dict(first), other, dict(first, kind="error")]
    body = send(client, world, items).get_json()
    assert [r["status"] for r in body["results"]] == ["stored", "duplicate", "stored", "duplicate"]
    assert (body["stored"], body["duplicates"], body["rejected"]) == (2, 2, 0)
    assert count(engine, UsageEvent) == 2
    with session_scope(engine) as session:
        kept = session.get(UsageEvent, uuid.UUID(first["event_id"]))
        assert kept.kind == "open"  # the first copy wins


def test_retrying_a_batch_reports_every_event_as_duplicate(client, engine, world):
    items = [event(world, kind=kind) for kind in ("open", "action", "error", "uninstall")]
    items.append(event(world, kind="bogus"))
    first = send(client, world, items).get_json()
    assert (first["stored"], first["rejected"]) == (4, 1)
    again = send(client, world, items).get_json()
    assert (again["stored"], again["duplicates"], again["rejected"]) == (0, 4, 1)
    assert [r["status"] for r in again["results"]] == ["duplicate"] * 4 + ["rejected"]
    # a later batch mixing old and new ids stores only the new ones
    fresh = event(world)
    mixed = send(client, world, [items[2], fresh, items[0]]).get_json()
    assert [r["status"] for r in mixed["results"]] == ["duplicate", "stored", "duplicate"]
    assert stored_ids(engine) == {e["event_id"] for e in items[:4]} | {fresh["event_id"]}


# ---- POST /feedback -------------------------------------------------------------------


@pytest.fixture
def bob_installed(client, world) -> None:
    """Bob installs the public sub-agent: only people who installed or used it rate it."""
    response = client.post(f"{API}/subagents/{world.public_id}/install", headers=world.bob.headers)
    assert response.status_code == 201, response.get_json()


def rate(client, actor: Actor, version_id: int, **fields):
    return client.post(FEEDBACK, json={"version_id": version_id, **fields}, headers=actor.headers)


@pytest.mark.parametrize("stars", [1, 2, 3, 4, 5])
def test_stars_one_to_five_are_accepted(client, world, stars, bob_installed):
    response = rate(client, world.bob, world.public_version, stars=stars)
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert (body["scale"], body["rating"], body["user_id"]) == ("stars", stars, world.bob.id)


@pytest.mark.parametrize(("thumbs", "rating"), [("up", 1), ("down", 0)])
def test_thumbs_are_accepted(client, world, thumbs, rating, bob_installed):
    body = rate(client, world.bob, world.public_version, thumbs=thumbs).get_json()
    assert (body["scale"], body["rating"]) == ("thumbs", rating)


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({"stars": 0}, 422),
        ({"stars": 6}, 422),
        ({"thumbs": "sideways"}, 422),
        ({"stars": 4, "thumbs": "up"}, 422),
        ({}, 422),
        ({"stars": 4, "mood": "happy"}, 422),
    ],
)
def test_a_rating_is_exactly_one_of_stars_or_thumbs(client, engine, world, fields, status):
    assert_problem(rate(client, world.bob, world.public_version, **fields), status)
    assert count(engine, Feedback) == 0


def test_rating_again_replaces_the_rating(client, engine, world, bob_installed):
    first = rate(client, world.bob, world.public_version, stars=2, comment="meh")
    assert first.status_code == 201
    second = rate(client, world.bob, world.public_version, thumbs="up")
    assert second.status_code == 200
    assert second.get_json()["id"] == first.get_json()["id"]
    assert (second.get_json()["scale"], second.get_json()["rating"]) == ("thumbs", 1)
    assert second.get_json()["comment"] is None
    assert count(engine, Feedback) == 1


def test_comment_length_is_bounded(client, engine, world, bob_installed):
    ok = rate(client, world.bob, world.public_version, stars=5, comment="a" * 1000)
    assert ok.status_code == 201 and len(ok.get_json()["comment"]) == 1000
    assert_problem(rate(client, world.bob, world.public_version, stars=5, comment="a" * 1001), 422)
    with session_scope(engine) as session:
        assert session.execute(select(Feedback.comment)).scalar_one() == "a" * 1000


def test_markup_in_comments_is_stored_verbatim_and_returned_as_json(
    client, engine, world, bob_installed
):
    comment = '<script>alert("hi")</script> & <b>bold</b>'
    response = rate(client, world.bob, world.public_version, stars=1, comment=comment)
    assert response.status_code == 201
    assert response.mimetype == "application/json"
    assert response.get_json()["comment"] == comment
    with session_scope(engine) as session:
        assert session.execute(select(Feedback.comment)).scalar_one() == comment


def test_tags_are_normalized(client, world, bob_installed):
    tags = ["Water ", "water", "Habit", "late night"]
    body = rate(client, world.bob, world.public_version, stars=4, tags=tags).get_json()
    assert body["tags"] == ["habit", "late night", "water"]
    assert_problem(rate(client, world.bob, world.public_version, stars=4, tags=[" x"]), 422)


def test_a_service_rates_for_a_named_user(client, engine, world, bob_installed):
    assert_problem(rate(client, world.service, world.public_version, stars=3), 422)
    assert_problem(rate(client, world.bare_service, world.public_version, stars=3), 403)
    assert_problem(rate(client, world.service, world.public_version, stars=3, user_id=999_999), 404)
    response = rate(client, world.service, world.public_version, stars=3, user_id=world.bob.id)
    assert response.status_code == 201
    assert response.get_json()["user_id"] == world.bob.id
    with session_scope(engine) as session:
        row = session.execute(select(Feedback)).scalar_one()
        assert (row.user_id, row.client_id) == (world.bob.id, world.service.id)


def test_people_rate_for_themselves_and_only_what_they_can_see(
    client, engine, world, bob_installed
):
    assert_problem(
        client.post(FEEDBACK, json={"version_id": world.public_version, "stars": 3}), 401
    )
    assert_problem(
        rate(client, world.bob, world.public_version, stars=3, user_id=world.alice.id), 403
    )
    hidden = rate(client, world.bob, world.private_version, stars=3)
    missing = rate(client, world.bob, 999_999, stars=3)
    assert_problem(hidden, 404)
    assert_problem(missing, 404)
    # a private version answers like a missing one, apart from the id itself
    assert hidden.get_json()["detail"].replace(str(world.private_version), "N") == (
        missing.get_json()["detail"].replace("999999", "N")
    )
    # Its author sees it but never rates their own.
    assert_problem(rate(client, world.alice, world.private_version, stars=5), 403)
    assert count(engine, Feedback) == 0


# ---- GET stats ------------------------------------------------------------------------


def stats_url(subagent_id: int, **query) -> str:
    params = "&".join(f"{k}={v}" for k, v in query.items())
    return f"{API}/subagents/{subagent_id}/stats" + (f"?{params}" if params else "")


def test_the_author_gets_full_stats_for_the_window(client, world):
    now = datetime.now(UTC)
    items = [
        event(world, kind="open", occurred_at=(now - timedelta(minutes=1)).isoformat()),
        event(world, kind="open", occurred_at=(now - timedelta(minutes=2)).isoformat()),
        event(
            world,
            kind="session_end",
            duration_ms=4000,
            occurred_at=(now - timedelta(minutes=1)).isoformat(),
        ),
        event(world, user_id=world.alice.id, kind="error", occurred_at=now.isoformat()),
    ]
    assert send(client, world, items).get_json()["stored"] == 4
    rate(client, world.bob, world.public_version, stars=4)
    today = now.date()
    start = today - timedelta(days=6)
    response = client.get(
        stats_url(world.public_id, **{"from": start.isoformat(), "to": today.isoformat()}),
        headers=world.alice.headers,
    )
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["view"] == "full"
    assert body["window"] == {
        "start": start.isoformat(),
        "end": today.isoformat(),
        "granularity": "day",
    }
    series = body["series"]
    assert [p["period_start"] for p in series] == [
        (start + timedelta(days=k)).isoformat() for k in range(7)
    ]
    last = series[-1]
    assert (last["opens"], last["sessions"], last["time_spent_ms"], last["errors"]) == (
        2,
        1,
        4000,
        1,
    )
    assert last["active_users"] == 2
    assert all(p["opens"] == 0 for p in series[:-1])
    totals = body["totals"]
    assert (totals["opens"], totals["active_users"], totals["errors"]) == (2, 2, 1)
    assert totals["ratings"]["count"] == 1 and totals["ratings"]["histogram"]["stars_4"] == 1
    assert body["rating"]["stars_count"] == 1 and body["rating"]["stars_average"] == 4.0
    assert body["lineage"] is not None and body["retention"] == []
    weekly = client.get(
        stats_url(world.public_id, granularity="week"), headers=world.alice.headers
    ).get_json()
    assert weekly["window"]["granularity"] == "week"
    assert sum(p["opens"] for p in weekly["series"]) == 2
    assert all(date.fromisoformat(p["period_start"]).weekday() == 0 for p in weekly["series"])


@pytest.mark.parametrize("who", ["bob", "service", "anonymous"])
def test_others_get_the_public_view_only(client, world, who):
    send(client, world, [event(world)])
    rate(client, world.bob, world.public_version, thumbs="up")
    headers = {} if who == "anonymous" else getattr(world, who).headers
    response = client.get(stats_url(world.public_id), headers=headers)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["view"] == "public"
    assert body["install_count"] == 0
    assert body["rating"]["thumbs_up"] == 1 and body["rating"]["count"] == 1
    for hidden in ("window", "fork_count", "totals", "series", "retention", "lineage"):
        assert body[hidden] is None, hidden


def test_a_private_subagents_stats_are_hidden_from_others(client, world):
    url = stats_url(world.private_id)
    assert_problem(client.get(url, headers=world.bob.headers), 404)
    assert_problem(client.get(url), 404)
    assert client.get(url, headers=world.alice.headers).get_json()["view"] == "full"


def test_creator_stats_are_for_the_creator(client, world):
    send(client, world, [event(world), event(world, user_id=world.alice.id)])
    url = f"{API}/creators/alice/stats"
    assert_problem(client.get(url), 401)
    # Someone else's stats answer what an unknown handle does: no enumeration.
    assert_problem(client.get(url, headers=world.bob.headers), 404)
    assert_problem(client.get(url, headers=world.service.headers), 404)
    assert_problem(client.get(f"{API}/creators/nobody/stats", headers=world.bob.headers), 404)
    response = client.get(url, headers=world.alice.headers)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["handle"] == "alice"
    assert {s["id"] for s in body["subagents"]} == {world.public_id, world.private_id}
    assert body["totals"]["opens"] == 2 and body["totals"]["active_users"] == 2
    assert len(body["series"]) == 30


def test_a_creators_sub_agents_come_a_page_at_a_time_in_the_dashboards_order(client, world):
    """`subagents` lists `limit` at a time (the window's installs first, then installs now,
    then id: the dashboard's table), each once across the pages; the figures cover all of them
    on every page; cursors and limits not made here are refused."""
    extra = [
        publish(client, world.alice, title=f"Tracker {n}", bundle=bundle(f"tracker{n}"))["id"]
        for n in range(4)
    ]
    # Bob installs the two newest and removes the older of them: in the window both lead, the
    # one still installed first.
    for subagent_id in extra[-2:]:
        installed = client.post(
            f"{API}/subagents/{subagent_id}/install", json={}, headers=world.bob.headers
        )
        assert installed.status_code in (200, 201), installed.get_json()
    removed = client.delete(f"{API}/subagents/{extra[-2]}/install", headers=world.bob.headers)
    assert removed.status_code in (200, 204)
    send(client, world, [event(world), event(world, user_id=world.alice.id)])
    everything = {world.public_id, world.private_id, *extra}

    url = f"{API}/creators/alice/stats?limit=2"
    pages, listed = [], []
    while url:
        response = client.get(url, headers=world.alice.headers)
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        pages.append(body)
        assert 1 <= len(body["subagents"]) <= 2 and body["subagents_total"] == 6
        listed += [row["id"] for row in body["subagents"]]
        cursor = body["next_cursor"]
        url = cursor and f"{API}/creators/alice/stats?limit=2&cursor={cursor}"
    assert len(pages) == 3 and len(listed) == 6 and set(listed) == everything
    assert listed[:2] == [extra[-1], extra[-2]]
    assert listed[2:] == sorted(everything - set(extra[-2:]))
    # The figures are the creator's, whichever page: the same on each.
    for figure in ("totals", "series", "rating", "lineage"):
        assert pages[0][figure] == pages[1][figure] == pages[2][figure]
    assert pages[0]["totals"]["opens"] == 2
    # Up to 100 at once, by default: the whole list, in the same order, and no cursor.
    whole = client.get(f"{API}/creators/alice/stats", headers=world.alice.headers).get_json()
    assert [row["id"] for row in whole["subagents"]] == listed and whole["next_cursor"] is None

    base = f"{API}/creators/alice/stats"
    for limit in (0, 101, -1, "x"):
        assert_problem(client.get(f"{base}?limit={limit}", headers=world.alice.headers), 422)
    assert_problem(client.get(f"{base}?cursor={'a' * 201}", headers=world.alice.headers), 422)
    # [1,2], ["x"] and [-5]: not a place in the list (a negative one sliced from its end).
    for cursor in ("not-a-cursor", "WzEsMl0", "WyJ4Il0", "Wy01XQ"):
        assert_problem(client.get(f"{base}?cursor={cursor}", headers=world.alice.headers), 400)
    # Past the end: no rows and no cursor, the figures still there.
    past = client.get(f"{base}?cursor=WzEwMF0", headers=world.alice.headers).get_json()  # [100]
    assert past["subagents"] == [] and past["next_cursor"] is None
    assert past["totals"] == whole["totals"] and past["subagents_total"] == 6


def test_lineage_figures_count_only_forks_the_creator_may_see(client, engine, world):
    """Bob's private and unlisted forks of Alice's work are invisible to her: no count, reach
    or credit may reveal them. His public fork, and a public fork of his private one, count."""
    carol = make_user(engine, "carol")
    hidden = fork(client, world.bob, world.public_id, "hidden", visibility="private")
    fork(client, world.bob, world.public_id, "unlisted", visibility="unlisted")
    shown = fork(client, world.bob, world.public_id, "shown")
    below_hidden = fork(client, world.bob, hidden["id"], "below")
    send(
        client,
        world,
        [
            event(world, subagent_id=hidden["id"], version_id=hidden["latest_version"]["id"],
                  user_id=world.bob.id),
            event(world, subagent_id=shown["id"], version_id=shown["latest_version"]["id"],
                  user_id=carol.id),
        ],
    )  # fmt: skip
    for url in (f"{API}/creators/alice/stats", stats_url(world.public_id)):
        lineage = client.get(url, headers=world.alice.headers).get_json()["lineage"]
        assert lineage["forks_by_others"] == 1
        assert lineage["descendants_by_others"] == 2  # shown, and the public one below hidden
        assert lineage["lineage_reach"] == 1  # carol on the public fork; bob's use is hidden
    # The same lineage seen by Bob, its author: his hidden forks count for him.
    bob_view = client.get(stats_url(hidden["id"]), headers=world.bob.headers).get_json()
    assert bob_view["lineage"]["descendants_by_others"] == 0  # below_hidden is his own
    assert below_hidden["parent_id"] == hidden["id"]


def test_lineage_reach_counts_a_person_once_and_credit_counts_each_forks_users(
    client, engine, world
):
    """Carol uses both of Bob's forks and the fork of a fork; Dave uses one fork. The lineage
    reached two people, not four; each fork's users still flow back as credit (a parent gets
    half of a fork's users, a grandparent a quarter)."""
    carol, dave = make_user(engine, "carol"), make_user(engine, "dave")
    first = fork(client, world.bob, world.public_id, "first")
    second = fork(client, world.bob, world.public_id, "second")
    below = fork(client, world.bob, first["id"], "below")

    def use(subagent, person):
        return event(
            world,
            subagent_id=subagent["id"],
            version_id=subagent["latest_version"]["id"],
            user_id=person.id,
        )

    uses = [use(first, carol), use(second, carol), use(below, carol), use(first, dave)]
    assert send(client, world, uses).status_code == 202
    creator = client.get(f"{API}/creators/alice/stats", headers=world.alice.headers).get_json()
    single = client.get(stats_url(world.public_id), headers=world.alice.headers).get_json()
    for lineage in (creator["lineage"], single["lineage"]):
        assert lineage["descendants_by_others"] == 3
        assert lineage["lineage_reach"] == 2
        # first: carol and dave (2 × 1/2), second: carol (1/2), below: carol (1/4).
        assert lineage["credit"] == {
            str(world.public_id): {"credit": 1.75, "descendant_users": 4, "share": 0.4375}
        }


@pytest.mark.parametrize("granularity", ["day", "week"])
def test_creator_actives_count_each_person_once_per_period_and_window(client, world, granularity):
    """Bob uses both sub-agents today and one of them yesterday; Alice uses one today:
    two people in the window, whatever the periods."""
    now = datetime.now(UTC)
    # A few minutes ago, but never before midnight: "today" must be today's date.
    today = max(now - timedelta(minutes=5), now.replace(hour=0, minute=0, second=0))
    yesterday = today - timedelta(days=1)
    mine = {"user_id": world.alice.id}
    private = {"subagent_id": world.private_id, "version_id": world.private_version}
    sent = send(
        client,
        world,
        [
            event(world, occurred_at=today.isoformat()),
            event(world, occurred_at=yesterday.isoformat()),
            event(world, occurred_at=today.isoformat(), **mine),
        ],
    )
    assert sent.status_code == 202, sent.get_json()
    # Only its author may use a private sub-agent: Alice's own event on it.
    assert send(client, world, [event(world, **private, **mine)]).status_code == 202
    body = client.get(
        f"{API}/creators/alice/stats?granularity={granularity}", headers=world.alice.headers
    ).get_json()
    assert body["totals"]["active_users"] == 2
    actives = {p["period_start"]: p["active_users"] for p in body["series"]}
    if granularity == "day":
        assert actives[today.date().isoformat()] == 2
        assert actives[yesterday.date().isoformat()] == 1
    else:
        assert max(actives.values()) == 2 and sum(actives.values()) in (2, 3)


@pytest.mark.parametrize("target", ["subagent", "creator"])
def test_window_validation(client, world, target):
    def get(**query):
        base = stats_url(world.public_id) if target == "subagent" else f"{API}/creators/alice/stats"
        params = "&".join(f"{k}={v}" for k, v in query.items())
        return client.get(f"{base}?{params}", headers=world.alice.headers)

    assert_problem(get(**{"from": "2026-03-02", "to": "2026-03-01"}), 400)
    # 402 days, both ends included (2026-02-06 is 401 days after 2025-01-01)
    assert_problem(get(**{"from": "2025-01-01", "to": "2026-02-06"}), 400)
    assert_problem(get(**{"from": "2026-02-30"}), 422)  # not a date: a validation error
    assert_problem(get(**{"from": "yesterday"}), 422)
    assert_problem(get(granularity="month"), 422)
    widest = get(**{"from": "2025-01-01", "to": "2026-02-04"})  # 400 days, both ends included
    assert widest.status_code == 200, widest.get_json()
    assert len(widest.get_json()["series"]) == 400
    assert get(**{"from": "2026-03-01", "to": "2026-03-01"}).status_code == 200
