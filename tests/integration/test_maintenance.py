"""The nightly recount repairs drifted counters from the source rows, and only those."""

from __future__ import annotations

from sqlalchemy import update

from market.db import session_scope
from market.maintenance import recount_counters
from market.models import SubAgent
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
