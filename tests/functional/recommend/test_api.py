"""POST /recommendations through the HTTP API, on every backend: the slate, its logged
exposures and propensities, the young share, relevance, what is never shown, bad input, and
events and feedback that cite the exposures.

Scores are written straight into ``subagent_score`` (what a ranking run would leave there).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import func, select

from evolution.explore import POLICY_VERSION, SD_SCALE
from market.platform.db import session_scope
from market.ranking.models import RankingRun, SubAgentScore
from market.recommend import services as recommendations
from market.recommend.models import Exposure
from market.usage.models import Feedback, UsageEvent
from tests.factories import Actor, bundle, fork, make_user, publish

API = "/api/v1"
RECOMMEND = f"{API}/recommendations"
PROBLEM = "application/problem+json"


@dataclass
class World:
    alice: Actor  # the author of the catalog
    bob: Actor  # the person recommendations are for
    agent: Actor  # main agent: recommend + events:write
    collector: Actor  # a service with events:write only
    established: list[dict]  # hydration, well known and good
    young: list[dict]  # hydration, young forks with wide posteriors
    sleep: list[dict]  # another category, well known


def score(engine, subagent_id: int, quality: float, sd: float, young: bool) -> None:
    with session_scope(engine) as session:
        row = session.get(SubAgentScore, subagent_id) or SubAgentScore(subagent_id=subagent_id)
        row.quality, row.quality_sd, row.young = quality, sd, young
        row.display, row.branch_value = quality - 1.64 * sd, quality
        session.add(row)


def publish_scored(client, engine, actor, title, quality, sd, young, **extra) -> dict:
    subagent = publish(client, actor, title=title, bundle=bundle(title), **extra)
    score(engine, subagent["id"], quality, sd, young)
    return subagent


@pytest.fixture
def world(client, engine) -> World:
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    agent = make_user(
        engine,
        "agent",
        kind="service",
        scopes=["recommend", "events:write", "feedback:on-behalf"],
    )
    collector = make_user(engine, "collector", kind="service", scopes=["events:write"])
    established = [
        publish_scored(client, engine, alice, f"Water Log {i}", 1.0 + 0.1 * i, 0.3, False)
        for i in range(5)
    ]
    young = [
        publish_scored(client, engine, alice, f"Water Fork {i}", 0.5, 0.8, True) for i in range(4)
    ]
    sleep = [
        publish_scored(
            client,
            engine,
            alice,
            f"Sleep Diary {i}",
            1.2,
            0.3,
            False,
            category="sleep",
            summary="Note when you went to bed and how rested you woke.",
            story="I never knew how badly I slept until I wrote it down.",
            tags=["sleep", "bedtime"],
        )
        for i in range(3)
    ]
    return World(alice, bob, agent, collector, established, young, sleep)


def ask(client, actor: Actor, **body):
    return client.post(RECOMMEND, json=body, headers=actor.headers)


def ok(response) -> dict:
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response.get_json()


def exposures(engine, decision_id: str | None = None) -> list[Exposure]:
    with session_scope(engine) as session:
        statement = select(Exposure).order_by(Exposure.created_at, Exposure.slot)
        if decision_id is not None:
            statement = statement.where(Exposure.decision_id == uuid.UUID(decision_id))
        return list(session.execute(statement).scalars())


def exposure_count(engine) -> int:
    with session_scope(engine) as session:
        return session.execute(select(func.count()).select_from(Exposure)).scalar_one()


def ids(subagents: list[dict]) -> set[int]:
    return {s["id"] for s in subagents}


# ---- the slate and its log -------------------------------------------------------------


def test_every_slot_is_logged_with_a_propensity_and_a_distribution_summing_to_one(
    client, engine, world
):
    body = ok(ask(client, world.agent, user_id=world.bob.id, k=4, seed=7))
    assert body["policy_version"] == POLICY_VERSION
    assert body["user_id"] == world.bob.id and body["seed"] == 7
    assert body["candidates"] == 12  # every public hydration and sleep sub-agent
    items = body["items"]
    assert [item["slot"] for item in items] == [0, 1, 2, 3]
    assert len({item["subagent_id"] for item in items}) == 4
    rows = exposures(engine, body["decision_id"])
    assert [row.slot for row in rows] == [0, 1, 2, 3]
    catalog = ids(world.established) | ids(world.young) | ids(world.sleep)
    for item, row in zip(items, rows, strict=True):
        assert str(row.id) == item["exposure_id"]
        assert (row.subagent_id, row.version_id) == (item["subagent_id"], item["version_id"])
        assert row.user_id == world.bob.id and row.client_id == world.agent.id
        assert row.policy_version == POLICY_VERSION
        # What the version's Thompson draws were made with, so a decision replays exactly.
        assert (row.context["young_share"], row.context["sd_scale"]) == (0.15, SD_SCALE)
        assert row.young_slot == item["young_slot"]
        assert row.propensity == pytest.approx(item["propensity"])
        # The slot's distribution sums to one, and the shown item's entry is its propensity.
        distribution = {int(key): p for key, p in row.slot_distribution.items()}
        assert sum(distribution.values()) == pytest.approx(1.0, abs=1e-9)
        assert set(distribution) <= catalog
        assert distribution[row.subagent_id] == pytest.approx(row.propensity)
        assert 0 < row.propensity <= 1
        assert row.context["seed"] == 7 and row.context["k"] == 4
        assert row.context["pool"] == {
            "established": recommendations.ESTABLISHED_POOL,
            "young": recommendations.YOUNG_POOL,
            "text_top": recommendations.TEXT_TOP,
            "prune_z": recommendations.PRUNE_Z,
            "matching": None,
        }
        assert row.context["candidates"] == 12
    # A sub-agent placed in an earlier slot cannot be shown again.
    for later in range(1, 4):
        earlier = {row.subagent_id for row in rows[:later]}
        assert not earlier & {int(key) for key in rows[later].slot_distribution}
    version_of = {s["id"]: s["latest_version"]["id"] for s in world.established + world.young}
    version_of |= {s["id"]: s["latest_version"]["id"] for s in world.sleep}
    assert all(item["version_id"] == version_of[item["subagent_id"]] for item in items)


def test_the_same_seed_gives_the_same_slate_and_propensities(client, engine, world):
    first = ok(ask(client, world.agent, user_id=world.bob.id, k=5, seed=123))
    again = ok(ask(client, world.agent, user_id=world.bob.id, k=5, seed=123))

    def slate(body):
        return [(i["subagent_id"], i["propensity"], i["young_slot"]) for i in body["items"]]

    assert slate(first) == slate(again)
    assert first["decision_id"] != again["decision_id"]
    assert {i["exposure_id"] for i in first["items"]}.isdisjoint(
        i["exposure_id"] for i in again["items"]
    )
    assert [r.slot_distribution for r in exposures(engine, first["decision_id"])] == [
        r.slot_distribution for r in exposures(engine, again["decision_id"])
    ]
    others = [
        slate(ok(ask(client, world.agent, user_id=world.bob.id, k=5, seed=s))) for s in (1, 2, 3)
    ]
    assert any(other != slate(first) for other in others)  # the seed does matter


def test_without_a_seed_a_fresh_one_is_used_and_logged(client, engine, world):
    seeds = {ok(ask(client, world.agent, user_id=world.bob.id))["seed"] for _ in range(3)}
    assert len(seeds) == 3
    logged = {row.context["seed"] for row in exposures(engine)}
    assert logged == seeds


def test_young_forks_get_their_share_over_many_decisions(client, engine, world):
    # Established sub-agents far above the young ones: the young are shown only in the slots
    # reserved for them, which come, per slate of 5, to 0.75 slots on average (15%).
    for subagent in world.established + world.sleep:
        score(engine, subagent["id"], 3.0, 0.1, False)
    decisions = 200
    young_ids = ids(world.young)
    slots = young_slots = young_shown = 0
    for seed in range(decisions):
        items = ok(ask(client, world.agent, user_id=world.bob.id, k=5, seed=seed))["items"]
        slots += len(items)
        young_slots += sum(item["young_slot"] for item in items)
        young_shown += sum(item["subagent_id"] in young_ids for item in items)
        for item in items:
            if item["young_slot"]:
                assert item["subagent_id"] in young_ids
                assert item["slot"] == 4  # reserved slots are the last ones
    assert slots == 5 * decisions
    assert young_slots / slots == pytest.approx(0.15, abs=0.03)
    assert young_shown / slots == pytest.approx(0.15, abs=0.03)
    assert exposure_count(engine) == slots


def test_unscored_subagents_are_young_with_a_wide_prior(client, engine, world):
    fresh = publish(client, world.alice, title="Fresh Water Fork", bundle=bundle("fresh"))
    body = ok(ask(client, world.agent, user_id=world.bob.id, k=12, seed=3))
    rows = exposures(engine, body["decision_id"])
    assert rows[0].context["young_candidates"] == 5  # the four scored young ones and this
    assert any(str(fresh["id"]) in row.slot_distribution for row in rows)


# ---- relevance and what is never shown ---------------------------------------------------


def test_category_keeps_the_slate_in_that_category(client, engine, world):
    for seed in range(5):
        body = ok(ask(client, world.agent, user_id=world.bob.id, category="sleep", k=5, seed=seed))
        assert body["candidates"] == 3
        assert {item["subagent_id"] for item in body["items"]} == ids(world.sleep)
        assert {item["category"] for item in body["items"]} == {"sleep"}
        for row in exposures(engine, body["decision_id"]):
            assert {int(key) for key in row.slot_distribution} <= ids(world.sleep)
    empty = ok(ask(client, world.agent, user_id=world.bob.id, category="finance", seed=1))
    assert empty["items"] == [] and empty["candidates"] == 0
    assert len(exposures(engine)) == 5 * 3  # the empty slate wrote nothing


def test_context_text_picks_the_matching_subagents(client, engine, world):
    body = ok(
        ask(client, world.agent, user_id=world.bob.id, context="I go to bed too late", seed=2)
    )
    assert {item["subagent_id"] for item in body["items"]} == ids(world.sleep)
    assert exposures(engine, body["decision_id"])[0].context["context"] == "I go to bed too late"
    water = ok(ask(client, world.agent, user_id=world.bob.id, context="glass of water", k=20))
    assert {item["subagent_id"] for item in water["items"]} == ids(world.established) | ids(
        world.young
    )
    nothing = ok(ask(client, world.agent, user_id=world.bob.id, context="violin practice"))
    assert nothing["items"] == []
    # Context without any word cannot judge relevance: it is ignored.
    punctuation = ok(ask(client, world.agent, user_id=world.bob.id, context="?!", seed=1))
    assert punctuation["candidates"] == 12


def test_private_unlisted_yanked_and_quarantined_are_never_recommended(client, engine, world):
    mod = make_user(engine, "mod", role="moderator")
    best = {"quality": 9.0, "sd": 0.01, "young": False}
    hidden = [
        publish_scored(client, engine, world.alice, "Private Water", **best, visibility="private"),
        publish_scored(
            client, engine, world.alice, "Unlisted Water", **best, visibility="unlisted"
        ),
        publish_scored(client, engine, world.alice, "Yanked Water", **best),
        publish_scored(client, engine, world.alice, "Yanked Version", **best),
        publish_scored(client, engine, world.alice, "Quarantined Water", **best),
    ]
    by = {s["title"]: s for s in hidden}
    yank = f"{API}/subagents/{by['Yanked Water']['id']}/yank"
    assert (
        client.post(yank, json={"reason": "broken"}, headers=world.alice.headers).status_code == 200
    )
    yanked_version = by["Yanked Version"]
    response = client.post(
        f"{API}/subagents/{yanked_version['id']}/yank",
        json={"reason": "leaks data", "version_id": yanked_version["latest_version"]["id"]},
        headers=world.alice.headers,
    )
    assert response.status_code == 200, response.get_json()
    response = client.post(
        f"{API}/subagents/{by['Quarantined Water']['id']}/quarantine",
        json={"reason": "privacy"},
        headers=mod.headers,
    )
    assert response.status_code == 200, response.get_json()
    never = ids(hidden)
    for asker, user in ((world.agent, world.bob), (world.alice, world.alice)):
        for seed in range(3):
            body = ok(ask(client, asker, user_id=user.id, k=20, seed=seed))
            assert not never & {item["subagent_id"] for item in body["items"]}
            for row in exposures(engine, body["decision_id"]):
                assert not never & {int(key) for key in row.slot_distribution}


def test_what_the_user_installed_or_wrote_is_skipped_unless_too_few_remain(client, engine, world):
    installed = world.sleep[0]
    response = client.post(
        f"{API}/subagents/{installed['id']}/install", json={}, headers=world.bob.headers
    )
    assert response.status_code == 201, response.get_json()
    own = publish_scored(
        client, engine, world.bob, "Bob's Sleep", 5.0, 0.1, False, category="sleep"
    )
    plenty = ok(ask(client, world.agent, user_id=world.bob.id, category="sleep", k=2, seed=4))
    assert plenty["candidates"] == 2
    assert {item["subagent_id"] for item in plenty["items"]} == ids(world.sleep[1:])
    row = exposures(engine, plenty["decision_id"])[0]
    assert row.context["owned_included"] is False
    # Asking for more than the others: everything relevant competes again.
    few = ok(ask(client, world.agent, user_id=world.bob.id, category="sleep", k=5, seed=4))
    assert {item["subagent_id"] for item in few["items"]} == ids(world.sleep) | {own["id"]}
    assert exposures(engine, few["decision_id"])[0].context["owned_included"] is True
    # An uninstall makes it eligible again.
    client.delete(f"{API}/subagents/{installed['id']}/install", headers=world.bob.headers)
    again = ok(ask(client, world.agent, user_id=world.bob.id, category="sleep", k=3, seed=4))
    assert {item["subagent_id"] for item in again["items"]} == ids(world.sleep)


# ---- who may ask, and bad input --------------------------------------------------------


def test_a_person_asks_for_themselves(client, engine, world):
    body = ok(ask(client, world.bob, user_id=world.bob.id, k=3, seed=1))
    assert len(body["items"]) == 3
    assert {row.client_id for row in exposures(engine)} == {None}


@pytest.mark.parametrize(
    ("who", "body", "status"),
    [
        ("anonymous", {"user_id": "bob"}, 401),
        ("collector", {"user_id": "bob"}, 403),  # events:write is not recommend
        ("bob", {"user_id": "alice"}, 403),  # people ask for themselves only
        ("agent", {"user_id": 999_999}, 404),
        ("agent", {"user_id": "collector"}, 404),  # services are not recommended to
        ("agent", {"user_id": "bob", "k": 0}, 422),
        ("agent", {"user_id": "bob", "k": 21}, 422),
        ("agent", {"user_id": "bob", "k": "5"}, 422),
        ("agent", {"user_id": "bob", "k": True}, 422),
        ("agent", {"user_id": "bob", "category": "astrology"}, 422),
        ("agent", {"user_id": "bob", "context": "x" * 501}, 422),
        ("agent", {"user_id": "bob", "context": "nul\x00"}, 422),
        ("agent", {"user_id": "bob", "seed": -1}, 422),
        ("agent", {"user_id": "bob", "seed": 2**63}, 422),
        ("agent", {"user_id": "bob", "colour": "red"}, 422),
        ("agent", {"k": 3}, 422),
        ("agent", {"user_id": 0}, 422),
        ("agent", {"user_id": 2**31}, 422),
    ],
)
def test_bad_requests_are_4xx_and_write_nothing(client, engine, world, who, body, status):
    actors = {"bob": world.bob, "alice": world.alice, "agent": world.agent}
    actors["collector"] = world.collector
    if isinstance(body.get("user_id"), str):
        body = {**body, "user_id": actors[body["user_id"]].id}
    headers = {} if who == "anonymous" else actors[who].headers
    response = client.post(RECOMMEND, json=body, headers=headers)
    assert response.status_code == status, response.get_json()
    assert response.mimetype == PROBLEM
    assert exposure_count(engine) == 0


def test_a_body_that_is_not_json_is_4xx(client, engine, world):
    response = client.post(
        RECOMMEND, data="{nope", content_type="application/json", headers=world.agent.headers
    )
    assert 400 <= response.status_code < 500
    assert exposure_count(engine) == 0


# ---- events and feedback cite the exposures ----------------------------------------------


def install(client, person, item: dict) -> None:
    """``person`` installs a recommended item (only people who installed something rate it)."""
    url = f"{API}/subagents/{item['subagent_id']}/install"
    response = client.post(url, json={"version_id": item["version_id"]}, headers=person.headers)
    assert response.status_code in (200, 201), response.get_json()


def test_events_and_feedback_cite_exposures_and_join_back_to_them(client, engine, world):
    body = ok(ask(client, world.agent, user_id=world.bob.id, k=3, seed=11))
    first, second = body["items"][0], body["items"][1]
    for item in body["items"][1:]:
        install(client, world.bob, item)
    event = {
        "event_id": str(uuid.uuid4()),
        "user_id": world.bob.id,
        "subagent_id": first["subagent_id"],
        "version_id": first["version_id"],
        "kind": "open",
        "occurred_at": (datetime.now(UTC) - timedelta(minutes=1)).isoformat(),
        "exposure_id": first["exposure_id"],
    }
    sent = client.post(f"{API}/events", json={"events": [event]}, headers=world.agent.headers)
    assert sent.status_code == 202 and sent.get_json()["stored"] == 1, sent.get_json()
    rated = client.post(
        f"{API}/feedback",
        json={
            "user_id": world.bob.id,
            "version_id": second["version_id"],
            "stars": 5,
            "exposure_id": second["exposure_id"],
        },
        headers=world.agent.headers,
    )
    assert rated.status_code == 201, rated.get_json()
    # A person rating for themselves cites the exposure too (without dashes, also a UUID).
    third = body["items"][2]
    own = client.post(
        f"{API}/feedback",
        json={
            "version_id": third["version_id"],
            "thumbs": "up",
            "exposure_id": uuid.UUID(third["exposure_id"]).hex,
        },
        headers=world.bob.headers,
    )
    assert own.status_code == 201, own.get_json()
    with session_scope(engine) as session:
        feedback = session.execute(
            select(Feedback.subagent_id, Feedback.rating, Exposure.slot, Exposure.propensity)
            .join(Exposure, Exposure.id == Feedback.exposure_id)
            .where(Exposure.decision_id == uuid.UUID(body["decision_id"]))
            .order_by(Exposure.slot)
        ).all()
        events = session.execute(
            select(UsageEvent.subagent_id, Exposure.slot, Exposure.propensity).join(
                Exposure, Exposure.id == UsageEvent.exposure_id
            )
        ).all()
    assert [(f.subagent_id, f.rating, f.slot) for f in feedback] == [
        (second["subagent_id"], 5, 1),
        (third["subagent_id"], 1, 2),
    ]
    assert feedback[0].propensity == pytest.approx(second["propensity"])
    assert [(e.subagent_id, e.slot) for e in events] == [(first["subagent_id"], 0)]
    assert events[0].propensity == pytest.approx(first["propensity"])


def test_feedback_must_cite_an_exposure_of_that_subagent_to_that_user(client, engine, world):
    body = ok(ask(client, world.agent, user_id=world.bob.id, k=2, seed=5))
    shown, other = body["items"]
    carol = make_user(engine, "carol")
    for_carol = ok(ask(client, world.agent, user_id=carol.id, k=1, seed=5))["items"][0]
    for item in (shown, for_carol):
        install(client, world.bob, item)

    def rate(exposure_id, version_id=shown["version_id"], user_id=world.bob.id):
        return client.post(
            f"{API}/feedback",
            json={
                "user_id": user_id,
                "version_id": version_id,
                "stars": 4,
                "exposure_id": exposure_id,
            },
            headers=world.agent.headers,
        )

    for bad in (
        str(uuid.uuid4()),  # no such exposure
        other["exposure_id"],  # another sub-agent's
        for_carol["exposure_id"] if for_carol["subagent_id"] == shown["subagent_id"] else None,
    ):
        if bad is None:
            continue
        response = rate(bad)
        assert response.status_code == 404, response.get_json()
        assert response.mimetype == PROBLEM
    # Carol's exposure cited for bob, on the sub-agent carol was shown.
    response = rate(for_carol["exposure_id"], version_id=for_carol["version_id"])
    assert response.status_code == 404, response.get_json()
    # A malformed id is a 422, never a 500.
    assert rate("-" * 36).status_code == 422
    with session_scope(engine) as session:
        assert session.execute(select(func.count()).select_from(Feedback)).scalar_one() == 0
    assert rate(shown["exposure_id"]).status_code == 201


# ---- the pool's pruning, by hand -----------------------------------------------------------


def test_pruning_drops_only_candidates_that_almost_surely_lose():
    mean = np.array([0.0, 0.1, -5.0, 3.0])
    sd = np.full(4, 0.1)
    nobody_young = np.zeros(4, bool)
    # k = 1: the best lower bound is 3 − 0.4 = 2.6; only item 3 reaches it.
    assert recommendations.prune_sure_losers(mean, sd, nobody_young, 1).tolist() == [
        False,
        False,
        False,
        True,
    ]
    # k = 2: the second best lower bound is 0.1 − 0.4 = −0.3; item 2 (upper −4.6) is out.
    assert recommendations.prune_sure_losers(mean, sd, nobody_young, 2).tolist() == [
        True,
        True,
        False,
        True,
    ]
    # A young candidate competes with the young for the reserved slots: kept.
    young = np.array([False, False, True, False])
    assert recommendations.prune_sure_losers(mean, sd, young, 1).tolist() == [
        False,
        False,
        True,
        True,
    ]
    # No more candidates than slots: nothing is dropped.
    assert recommendations.prune_sure_losers(mean[:2], sd[:2], nobody_young[:2], 2).all()


def test_the_pool_keeps_the_best_established_and_the_newest_young(
    client, engine, world, monkeypatch
):
    # Small caps, so both PostgreSQL's index walk and the exact query are exercised.
    monkeypatch.setattr(recommendations, "ESTABLISHED_POOL", 3)
    monkeypatch.setattr(recommendations, "YOUNG_POOL", 2)
    sleep_best = world.sleep[1]
    score(engine, sleep_best["id"], 5.0, 0.1, False)  # the best of all, but another category
    with session_scope(engine) as session:
        pool = recommendations.candidate_pool(
            session, world.bob.id, category="hydration", include_owned=False
        )
        everywhere = recommendations.candidate_pool(
            session, world.bob.id, category=None, include_owned=False
        )
        # What the engine matched for a context, best first: only those are candidates.
        matching = recommendations.candidate_pool(
            session,
            world.bob.id,
            category=None,
            include_owned=False,
            matched=sorted(ids(world.sleep)),
        )
    best_three = {s["id"] for s in world.established[2:]}  # quality 1.2, 1.3, 1.4
    newest_two = {s["id"] for s in world.young[2:]}
    assert {c.subagent_id for c in pool} == best_three | newest_two
    assert [c.subagent_id for c in pool] == sorted(c.subagent_id for c in pool)
    assert all(c.young == (c.subagent_id in newest_two) for c in pool)
    # Without a category the sleep sub-agents (1.2) and the best one (5.0) compete too.
    established = {c.subagent_id for c in everywhere if not c.young}
    assert established == {sleep_best["id"], world.established[4]["id"], world.established[3]["id"]}
    assert {c.subagent_id for c in matching} == ids(world.sleep)


def test_a_fork_the_ranking_has_not_seen_starts_from_its_lineage(client, engine, world):
    parent = world.established[4]  # quality 1.4, sd 0.3
    child = fork(client, world.alice, parent["id"], "new child")
    grandchild = fork(client, world.alice, child["id"], "new grandchild")
    root = publish(client, world.alice, title="New Water Root", bundle=bundle("new root"))
    matched = [child["id"], grandchild["id"], root["id"]]  # what a context matched

    def priors():
        with session_scope(engine) as session:
            pool = recommendations.candidate_pool(
                session, world.bob.id, category=None, include_owned=False, matched=matched
            )
        return {c.subagent_id: (c.quality, c.quality_sd, c.young) for c in pool}

    before = priors()  # no ranking run yet: the default root prior for all of them
    assert {i: before[i] for i in (child["id"], grandchild["id"], root["id"])} == {
        child["id"]: (0.0, 1.0, True),
        grandchild["id"]: (0.0, 1.0, True),
        root["id"]: (0.0, 1.0, True),
    }
    prior = {"mu0": 0.5, "sigma0_sq": 0.8, "drift_mean": -0.1, "drift_var": 0.2}
    with session_scope(engine) as session:
        session.add(RankingRun(mode="full", parameters={"prior": prior}))
    after = priors()
    assert after[child["id"]] == pytest.approx((1.3, (0.09 + 0.2) ** 0.5, True))
    assert after[grandchild["id"]] == pytest.approx((1.2, (0.09 + 0.4) ** 0.5, True))
    assert after[root["id"]] == pytest.approx((0.5, 0.8**0.5, True))


def test_chinese_and_japanese_context_picks_the_matching_subagents(client, engine, world):
    """Chinese and Japanese are written without spaces: their context is cut into words by a
    segmenter and matched, with the words' English glosses, by the catalog's one relevance
    engine, on both databases."""
    water_zh = publish_scored(
        client,
        engine,
        world.alice,
        "每日喝水记录",
        1.0,
        0.3,
        False,
        summary="记录你每天喝了多少杯水，提醒你按时喝水。",
    )
    sleep_ja = publish_scored(
        client,
        engine,
        world.alice,
        "睡眠日記",
        1.0,
        0.3,
        False,
        category="sleep",
        summary="寝た時間と起きた時間を記録して、眠りの質を振り返ります。",
    )
    zh = ok(ask(client, world.agent, user_id=world.bob.id, context="我想记录每天喝水", seed=3))
    rows = exposures(engine, zh["decision_id"])
    assert rows[0].context["pool"]["matching"] == "text_index"
    # The Chinese water log is a candidate, and through "喝水"'s gloss (drink water) so are
    # the English water logs.
    candidates = {int(key) for row in rows for key in row.slot_distribution}
    assert water_zh["id"] in candidates
    assert candidates & ids(world.established)
    assert sleep_ja["id"] not in {item["subagent_id"] for item in zh["items"]}
    ja = ok(ask(client, world.agent, user_id=world.bob.id, context="毎晩の睡眠を記録したい", k=1))
    # The Japanese sleep diary and, through "睡眠"'s gloss (sleep), the English ones compete;
    # the English water logs do not (the Chinese one shares "记录", a record).
    candidates = {
        int(key) for row in exposures(engine, ja["decision_id"]) for key in row.slot_distribution
    }
    assert sleep_ja["id"] in candidates and candidates & ids(world.sleep)
    assert not candidates & (ids(world.established) | ids(world.young))
    # Nothing written in those characters: nothing relevant, as for an English context.
    none = ok(ask(client, world.agent, user_id=world.bob.id, context="バイオリンの練習"))
    assert none["items"] == []


# ---- personal scores --------------------------------------------------------------------


def test_a_persons_taste_moves_what_they_are_shown_and_no_one_elses(client, engine, world):
    """A person the ranking learned a taste of (rater_taste) gets each candidate's score
    moved by their taste for it: Water Log 0, the weakest for everyone, suits them so well
    that it leads their slates, while Bob, with no taste stored, keeps everyone's order. The
    logged pool belief is the score the slate was drawn from, so a replay uses it too."""
    from market.ranking.models import RaterTaste, SubAgentTaste

    fan = make_user(engine, "fan")
    liked, others = world.established[0], world.established[1:]
    with session_scope(engine) as session:
        session.add(RaterTaste(user_id=fan.id, factors=[1.0, 0.0]))
        session.add(SubAgentTaste(subagent_id=liked["id"], factors=[3.0, 0.5]))
        for other in others:
            session.add(SubAgentTaste(subagent_id=other["id"], factors=[-0.5, 2.0]))
    firsts = {fan.id: [], world.bob.id: []}
    for seed in range(20):
        for person in (fan, world.bob):
            answer = ok(
                ask(client, world.agent, user_id=person.id, k=1, category="hydration", seed=seed)
            )
            assert answer["personal"] is (person is fan)
            firsts[person.id].append(answer["items"][0]["subagent_id"])
    assert firsts[fan.id].count(liked["id"]) >= 18
    assert firsts[world.bob.id].count(liked["id"]) <= 2
    (first_slot,) = [e for e in exposures(engine) if e.user_id == fan.id][:1]
    assert first_slot.context["personal"] is True
    assert first_slot.pool_belief[str(liked["id"])][0] == pytest.approx(1.0 + 3.0)
    # A young fork the taste knows nothing about keeps everyone's score; the others, which
    # this person is expected to like less, almost surely lose now and were pruned.
    assert first_slot.pool_belief[str(world.young[0]["id"])][0] == pytest.approx(0.5)
    assert not {str(o["id"]) for o in others} & set(first_slot.pool_belief)
