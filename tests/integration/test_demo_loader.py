"""The demo community loads through the real publish paths and behaves like real data."""

from __future__ import annotations

from sqlmodel import func, select

from market.catalog.models import SubAgent
from market.demo.loader import demo_tokens, is_empty
from market.platform.db import session_scope


def test_is_empty_tells_a_new_database_from_a_loaded_one(engine, demo_app):
    assert is_empty(engine)
    assert not is_empty(demo_app.engine)


def test_demo_loads_a_believable_community(demo_app):
    # The run's demo template was loaded by load_demo into an empty database
    # (tests/conftest.py); this module reads a copy of it rather than loading it again.
    stats, engine, client = demo_app.template.stats, demo_app.engine, demo_app.app.test_client()
    assert stats["users"] >= 1000 and stats["sub-agents"] >= 300
    with session_scope(engine) as session:
        deepest = session.exec(select(func.max(SubAgent.depth))).one()
        categories = session.exec(select(func.count(func.distinct(SubAgent.category)))).one()
        private = session.exec(select(SubAgent.id).where(SubAgent.visibility == "private")).first()
    assert deepest >= 6 and categories >= 8

    tokens = {label: token for label, _handle, token in demo_tokens(engine)}
    creator = {"Authorization": f"Bearer {tokens['creator']}"}
    service = {"Authorization": f"Bearer {tokens['service']}"}
    assert client.get("/api/v1/me", headers=creator).get_json()["kind"] == "person"
    assert "suggest" in client.get("/api/v1/me", headers=service).get_json()["scopes"]

    # A private demo sub-agent is as invisible as any other.
    assert client.get(f"/api/v1/subagents/{private}").status_code == 404
    page = client.get("/api/v1/subagents?limit=100").get_json()
    assert private not in {card["id"] for card in page["items"]}

    # Lineages from the demo end at their roots, and stats exist for the creators.
    deep = client.get("/api/v1/subagents?sort=new&limit=100").get_json()["items"]
    some_fork = next(card for card in deep if card["depth"] >= 2)
    lineage = client.get(f"/api/v1/subagents/{some_fork['id']}/lineage").get_json()
    assert len(lineage["ancestors"]) == some_fork["depth"]
    assert client.get("/api/v1/subagents?q=water").get_json()["items"]


def test_the_load_tells_the_person_waiting_what_it_is_doing(demo_app):
    """``make run``'s first load takes minutes: ``sprig demo`` prints these lines as it goes
    (the run's template was loaded with them collected)."""
    lines = demo_app.template.progress
    stats = demo_app.template.stats
    assert lines[0].startswith(
        f"Loading the demo community: {stats['users']} people, {stats['sub-agents']} sub-agents"
    )
    assert "minutes" in lines[0]
    assert (
        lines[1] == f"  published {stats['sub-agents']} sub-agents; writing their usage and ratings"
    )
    days = [line for line in lines if line.startswith("  day ")]
    assert [line.split()[1] for line in days] == ["15", "30", "45", "60", "75", "90"]
    assert days[-1] == (
        f"  day 90 of 90: {stats['usage events']} events, {stats['ratings']} ratings"
    )
    assert lines[-1] == "  ranking the catalog"
