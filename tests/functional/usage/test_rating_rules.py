"""Who may rate, on every backend: only people who installed or used a sub-agent, never its
author; a service only on a person's behalf with ``feedback:on-behalf``, and the rating says
so. Ratings stored before the rules that break them stop counting everywhere (migration 0009).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select, update

from market.catalog.models import Version
from market.exports.services import load_feedback
from market.identity.models import User
from market.platform.db import session_scope
from market.platform.migrate import downgrade, upgrade
from market.platform.time import utcnow
from market.ranking.services import load_inputs, watermark
from market.usage.models import Feedback
from market.usage.ratings import may_rate
from tests.factories import Actor, make_user, publish

API = "/api/v1"
FEEDBACK = f"{API}/feedback"


@pytest.fixture
def water(client, engine) -> dict:
    author = make_user(engine, "author")
    made = publish(client, author)
    return {"author": author, "id": made["id"], "version": made["latest_version"]["id"]}


def rate(client, actor: Actor, version_id: int, **fields):
    body = {"version_id": version_id, "stars": 4, **fields}
    return client.post(FEEDBACK, json=body, headers=actor.headers)


def install(client, actor: Actor, subagent_id: int) -> None:
    response = client.post(f"{API}/subagents/{subagent_id}/install", json={}, headers=actor.headers)
    assert response.status_code in (200, 201), response.get_json()


def stored_ratings(engine) -> list[Feedback]:
    with session_scope(engine) as session:
        rows = list(session.execute(select(Feedback).order_by(Feedback.id)).scalars())
        session.expunge_all()
        return rows


def test_the_author_may_not_rate_their_own_sub_agent(client, engine, water):
    install(client, water["author"], water["id"])  # even having installed it
    response = rate(client, water["author"], water["version"], stars=5)
    assert response.status_code == 403
    assert response.headers["Content-Type"] == "application/problem+json"
    assert "own" in response.get_json()["detail"]
    assert stored_ratings(engine) == []


def test_a_stranger_may_not_rate(client, engine, water):
    stranger = make_user(engine, "stranger")
    response = rate(client, stranger, water["version"])
    assert response.status_code == 403
    assert "installed or used" in response.get_json()["detail"]
    assert stored_ratings(engine) == []


def test_a_person_who_installed_may_rate_even_after_uninstalling(client, engine, water):
    person = make_user(engine, "installer")
    install(client, person, water["id"])
    first = rate(client, person, water["version"], stars=5)
    assert first.status_code == 201, first.get_json()
    assert first.get_json()["rated_by_service_id"] is None
    assert client.delete(
        f"{API}/subagents/{water['id']}/install", headers=person.headers
    ).status_code in (200, 204)
    again = rate(client, person, water["version"], stars=3)
    assert again.status_code == 200, again.get_json()
    assert [(r.user_id, r.rating) for r in stored_ratings(engine)] == [(person.id, 3)]


def test_a_person_whose_agent_reported_usage_may_rate(client, engine, water):
    person = make_user(engine, "user-with-events")
    collector = make_user(engine, "collector", kind="service", scopes=["events:write"])
    event = {
        "event_id": str(uuid.uuid4()),
        "user_id": person.id,
        "subagent_id": water["id"],
        "version_id": water["version"],
        "kind": "open",
        "occurred_at": (datetime.now(UTC) - timedelta(minutes=5)).isoformat(),
    }
    sent = client.post(f"{API}/events", json={"events": [event]}, headers=collector.headers)
    assert sent.get_json()["stored"] == 1
    response = rate(client, person, water["version"])
    assert response.status_code == 201, response.get_json()


def test_a_service_needs_the_on_behalf_scope(client, engine, water):
    person = make_user(engine, "person")
    install(client, person, water["id"])
    collector = make_user(engine, "collector", kind="service", scopes=["events:write"])
    response = rate(client, collector, water["version"], user_id=person.id)
    assert response.status_code == 403
    assert "feedback:on-behalf" in response.get_json()["detail"]
    assert stored_ratings(engine) == []


def test_a_service_with_the_scope_rates_for_a_user_and_the_rating_says_so(client, engine, water):
    person = make_user(engine, "person")
    install(client, person, water["id"])
    agent = make_user(engine, "agent", kind="service", scopes=["feedback:on-behalf"])
    response = rate(client, agent, water["version"], user_id=person.id, stars=2)
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert (body["user_id"], body["rated_by_service_id"]) == (person.id, agent.id)
    [row] = stored_ratings(engine)
    assert (row.user_id, row.client_id, row.rating) == (person.id, agent.id, 2)
    # The person rating again themselves makes the rating theirs alone.
    mine = rate(client, person, water["version"], stars=4).get_json()
    assert mine["rated_by_service_id"] is None


def test_a_service_follows_the_same_rules_for_the_person(client, engine, water):
    agent = make_user(engine, "agent", kind="service", scopes=["feedback:on-behalf"])
    stranger = make_user(engine, "stranger")
    for user_id in (stranger.id, water["author"].id):
        response = rate(client, agent, water["version"], user_id=user_id)
        assert response.status_code == 403, response.get_json()
    other_service = make_user(engine, "other-agent", kind="service", scopes=["events:write"])
    assert rate(client, agent, water["version"], user_id=other_service.id).status_code == 404
    assert stored_ratings(engine) == []


def test_may_rate_answers_the_pages_with_a_reason(client, engine, water):
    person, stranger = make_user(engine, "person"), make_user(engine, "stranger")
    install(client, person, water["id"])
    with session_scope(engine) as session:
        version = session.get(Version, water["version"])
        assert may_rate(session, person.id, version) is None
        assert "installed or used" in may_rate(session, stranger.id, version)
        assert "own" in may_rate(session, water["author"].id, version)


def test_ratings_that_broke_the_rules_before_stop_counting(
    app, client, engine, database_url, water
):
    """Rows written before the rules (an author's 5, a stranger's 5) are flagged by the
    migration and left out of stats, ranking and exports; a fair rating still counts."""
    fan, stranger = make_user(engine, "fan"), make_user(engine, "stranger")
    install(client, fan, water["id"])
    assert rate(client, fan, water["version"], stars=2).status_code == 201
    now = utcnow()
    with session_scope(engine) as session:
        for user_id in (water["author"].id, stranger.id):
            session.execute(
                insert(Feedback).values(
                    user_id=user_id,
                    subagent_id=water["id"],
                    version_id=water["version"],
                    scale="stars",
                    rating=5,
                    tags=[],
                    created_at=now,
                    updated_at=now,
                    updated_day=now.date(),
                )
            )
        session.commit()
    engine.dispose()
    downgrade(database_url, "0008")
    upgrade(database_url)
    flags = {r.user_id: r.excluded_reason for r in stored_ratings(engine)}
    assert flags == {fan.id: None, water["author"].id: "author", stranger.id: "not a user"}

    stats = client.get(f"{API}/subagents/{water['id']}/stats").get_json()
    assert (stats["rating"]["stars_count"], stats["rating"]["stars_average"]) == (1, 2.0)
    with session_scope(engine) as session:
        inputs = load_inputs(session, utcnow(), watermark(session))
        assert inputs.ratings.value.tolist() == [2.0]
        session.execute(update(User).values(share_feedback_for_training=True))
        exported = load_feedback(session, utcnow())
        assert exported.user_id.tolist() == [fan.id]
