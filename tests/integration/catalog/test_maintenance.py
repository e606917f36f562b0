"""The nightly jobs: the recount repairs drifted counters from the source rows, and only those;
old exposure context text is erased, and nothing else."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from market.catalog.maintenance import forget_old_contexts, recount_counters
from market.catalog.models import SubAgent
from market.platform.db import session_scope
from market.recommend.models import Exposure
from tests.factories import fork, make_user, publish


def test_recount_repairs_drift_and_is_a_no_op_otherwise(client, engine):
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    root = publish(client, alice)
    fork(client, bob, root["id"], "public")
    fork(client, bob, root["id"], "secret", visibility="private")
    client.post(f"/api/v1/subagents/{root['id']}/install", json={}, headers=bob.headers)
    with session_scope(engine) as session:
        assert recount_counters(session) == {"drifted": 0}
        session.execute(update(SubAgent).values(install_count=99, fork_count=99))
    with session_scope(engine) as session:
        assert recount_counters(session)["drifted"] >= 1
    detail = client.get(f"/api/v1/subagents/{root['id']}").get_json()
    # the private fork is not counted: a count must not reveal a private thing
    assert (detail["install_count"], detail["fork_count"]) == (1, 1)


def _exposure(session, created_at, context_text):
    exposure = Exposure(
        decision_id=uuid.uuid4(),
        slot=0,
        user_id=1,
        subagent_id=1,
        version_id=1,
        propensity=0.5,
        policy_version="test",
        context={"category": "diet", "context": context_text, "k": 3},
        created_at=created_at,
    )
    session.add(exposure)
    return exposure.id


def test_old_exposure_contexts_are_erased_and_nothing_else(engine):
    now = datetime(2026, 12, 1, 3, 47, tzinfo=UTC)
    with session_scope(engine) as session:
        old = _exposure(session, now - timedelta(days=31), "something for my pregnancy diet")
        edge = _exposure(session, now - timedelta(days=29, hours=23), "recent enough")
        new = _exposure(session, now - timedelta(hours=1), "a running log for my marathon")
        empty = _exposure(session, now - timedelta(days=90), None)
    with session_scope(engine) as session:
        assert forget_old_contexts(session, now, keep_days=30)["erased"] == 1
    with session_scope(engine) as session:
        context = {e: session.get(Exposure, e).context for e in (old, edge, new, empty)}
    assert context[old] == {"category": "diet", "context": None, "k": 3}
    assert context[edge]["context"] == "recent enough"
    assert context[new]["context"] == "a running log for my marathon"
    assert context[empty] == {"category": "diet", "context": None, "k": 3}
    with session_scope(engine) as session:  # a second run finds nothing left to erase
        assert forget_old_contexts(session, now, keep_days=30)["erased"] == 0
    with session_scope(engine) as session:
        assert forget_old_contexts(session, now + timedelta(days=1), keep_days=30)["erased"] == 1
        assert session.get(Exposure, edge).context["context"] is None


def test_the_nightly_erasure_is_scheduled():
    from market.platform.celery_app import celery_config
    from market.platform.config import Settings

    schedule = celery_config(Settings())["beat_schedule"]
    assert schedule["forget-old-exposure-contexts"]["task"] == "sprig.forget_old_contexts"
    assert schedule["delete-dead-web-sessions"]["task"] == "sprig.delete_dead_web_sessions"
