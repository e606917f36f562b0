"""Lineage runs (item 3b of issue 18): between full runs, a ranking run recomputes only the
root families that changed since the last run's watermark, with the last full run's global
fit, and each recomputed family gets exactly the figures a whole-catalog run with that fit
gives it; every other row stays as it was. Two workers racing never double-count."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import make_url, select

from market.catalog.models import Install
from market.platform.db import make_engine, session_scope
from market.platform.time import utcnow
from market.ranking.models import RankingRun, RaterOffset, SubAgentScore
from market.ranking.services import (
    SCORE_COLUMNS,
    StoredFit,
    compute,
    load_inputs,
    score_rows,
    watermark,
)
from market.usage.models import COUNTED_RATING, Feedback
from tests.factories import fork, make_user, publish
from tests.integration.ranking.test_services import rank, rate, scores, version

# Everything here happens within seconds; with no lookback, a run sees exactly what changed
# since the previous one.
NO_LOOKBACK = timedelta(0)

API = "/api/v1"


@pytest.fixture
def families(client, engine):
    return two_families(client, engine)


def two_families(client, engine) -> dict:
    """Two families (a root with two forks each), a rating and events service, 12 raters who
    installed and rated everything once."""
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    service = make_user(
        engine, "agent", kind="service", scopes=["feedback:on-behalf", "events:write"]
    )
    water = publish(client, alice, title="Water Tracker")
    meals = publish(client, bob, title="Meal Planner")
    nodes = {
        "water": water,
        "water_a": fork(client, bob, water["id"], note="reminders"),
        "water_b": fork(client, bob, water["id"], note="dark mode"),
        "meals": meals,
        "meals_a": fork(client, alice, meals["id"], note="vegan"),
        "meals_b": fork(client, alice, meals["id"], note="kids"),
    }
    raters = [make_user(engine, f"rater{i}").id for i in range(12)]
    # Written straight to the tables (the rating rules have their own tests): 72 ratings
    # through the API would be most of this file's time.
    with session_scope(engine) as session:
        for k, user_id in enumerate(raters):
            for j, node in enumerate(nodes.values()):
                session.add(
                    Install(user_id=user_id, subagent_id=node["id"], version_id=version(node))
                )
                session.add(
                    Feedback(
                        user_id=user_id,
                        subagent_id=node["id"],
                        version_id=version(node),
                        scale="stars",
                        rating=1 + (k + 2 * j) % 5,
                        updated_day=utcnow().date(),
                    )
                )
    return {"alice": alice, "bob": bob, "service": service, "raters": raters, **nodes}


def family_ids(families: dict, name: str) -> set[int]:
    return {families[key]["id"] for key in (name, f"{name}_a", f"{name}_b")}


def pinned_full_rows(engine, now: datetime) -> dict[int, tuple]:
    """Every sub-agent's row as a whole-catalog run with the last full run's fit gives it."""
    with session_scope(engine) as session:
        full = session.scalars(
            select(RankingRun).where(RankingRun.mode == "full").order_by(RankingRun.id.desc())
        ).first()
        inputs = load_inputs(session, now, watermark(session))
        offsets = dict(session.execute(select(RaterOffset.user_id, RaterOffset.leniency)).all())
        result = compute(inputs, offsets, fit=StoredFit.from_run(full))
        return {row[0]: row[1:] for row in score_rows(inputs, result)}


def stored_rows(engine) -> dict[int, tuple]:
    return {i: tuple(getattr(row, c) for c in SCORE_COLUMNS) for i, row in scores(engine).items()}


def test_a_lineage_run_equals_a_full_run_for_what_changed_and_leaves_the_rest(
    client, engine, families
):
    first = rank(engine)
    assert first.mode == "full"
    before = scores(engine)
    # New evidence in the water family: a new fork, and five 5-star ratings of one fork.
    newcomer = fork(client, families["bob"], families["water_a"]["id"], note="sync")
    for user_id in families["raters"][:5]:
        rate(client, families["service"], user_id, version(newcomer), 5)
    later = datetime.now(UTC) + timedelta(minutes=1)
    run = rank(engine, now=later, lookback=NO_LOOKBACK)
    assert run.mode == "incremental"
    assert run.trees_recomputed == 1 and run.subagents == 4
    assert run.parameters["fit_run_id"] == first.id

    after = scores(engine)
    water = family_ids(families, "water") | {newcomer["id"]}
    for subagent_id in family_ids(families, "meals"):  # untouched: the very same rows
        assert after[subagent_id].run_id == first.id
        assert after[subagent_id].computed_at == before[subagent_id].computed_at
    assert after[newcomer["id"]].rating_count == 5
    assert after[newcomer["id"]].quality > before[families["water_a"]["id"]].quality
    # The changed family's rows are the whole run's (same fit, same moment), every column.
    expected = pinned_full_rows(engine, later)
    got = stored_rows(engine)
    for subagent_id in water:
        assert got[subagent_id] == pytest.approx(expected[subagent_id], abs=1e-6, nan_ok=True)


def test_a_run_reads_the_catalog_numbered_level_by_level(client, engine, families):
    """A run's sub-agents are numbered roots first, then level by level (what keeps a full
    run at 1M under 5 s: market.ranking.services.numbered_by_level), and every rating still
    names its own sub-agent. A root published after the forks and a grandchild make that
    numbering differ from id order."""
    sleep = publish(client, families["alice"], title="Sleep Log")
    grandchild = fork(client, families["alice"], families["water_a"]["id"], note="sync")
    rate(client, families["service"], families["raters"][0], version(grandchild), 4)
    with session_scope(engine) as session:
        inputs = load_inputs(session, datetime.now(UTC), watermark(session))
        rated = list(
            session.execute(
                select(Feedback.subagent_id).where(COUNTED_RATING).order_by(Feedback.id)
            ).scalars()
        )
    forest = inputs.forest
    names = ["water", "meals", "water_a", "water_b", "meals_a", "meals_b"]
    by_level = [families[n]["id"] for n in names[:2]] + [sleep["id"]]
    by_level += [families[n]["id"] for n in names[2:]] + [grandchild["id"]]
    assert forest.ids.tolist() == by_level
    assert forest.order.tolist() == list(range(forest.n))
    assert forest.ids[inputs.ratings.item_idx].tolist() == rated


def test_the_watermark_finds_each_kind_of_change(client, engine, families):
    rank(engine)
    assert rank(engine).mode == "skipped"
    # A usage event received for a meals fork: only the meals family is recomputed.
    meals_a = families["meals_a"]
    event = {
        "event_id": str(uuid.uuid4()),
        "user_id": families["raters"][0],
        "subagent_id": meals_a["id"],
        "version_id": version(meals_a),
        "kind": "open",
        "occurred_at": (datetime.now(UTC) - timedelta(minutes=5)).isoformat(),
    }
    response = client.post(
        f"{API}/events", json={"events": [event]}, headers=families["service"].headers
    )
    assert response.status_code in (200, 202), response.get_json()
    run = rank(engine, lookback=NO_LOOKBACK)
    assert (run.mode, run.trees_recomputed, run.subagents) == ("incremental", 1, 3)
    assert scores(engine)[meals_a["id"]].active_users > 0
    # A visibility change in the water family: that family alone.
    listing = f"{API}/subagents/{families['water_b']['id']}"
    changed = client.patch(listing, json={"visibility": "private"}, headers=families["bob"].headers)
    assert changed.status_code == 200
    run = rank(engine, lookback=NO_LOOKBACK)
    assert (run.mode, run.trees_recomputed) == ("incremental", 1)
    assert scores(engine)[families["water"]["id"]].best_descendant_id != families["water_b"]["id"]
    assert rank(engine).mode == "skipped"


def test_a_forced_or_stale_run_is_full(client, engine, families):
    rank(engine)
    rate(client, families["service"], families["raters"][0], version(families["water"]), 5)
    assert rank(engine, force=True).mode == "full"
    rate(client, families["service"], families["raters"][1], version(families["water"]), 5)
    a_day_later = datetime.now(UTC) + timedelta(hours=25)
    run = rank(engine, now=a_day_later)
    assert run.mode == "full" and run.trees_recomputed == 2


def test_two_workers_racing_rank_once_and_never_double_count(client, engine, families):
    rank(engine)
    for k in range(3):
        newcomer = make_user(engine, f"newcomer{k}").id
        rate(client, families["service"], newcomer, version(families["meals_b"]), 5)
    moment = datetime.now(UTC) + timedelta(minutes=1)
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def worker() -> None:
        start.wait()
        outcomes.append(rank(engine, now=moment, lookback=NO_LOOKBACK).mode)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["incremental", "skipped"]  # the second waited, then saw it done
    with session_scope(engine) as session:
        modes = session.scalars(select(RankingRun.mode).order_by(RankingRun.id)).all()
        assert modes == ["full", "incremental"]
        counts = dict(
            session.execute(select(SubAgentScore.subagent_id, SubAgentScore.rating_count)).all()
        )
    assert counts[families["meals_b"]["id"]] == 15  # 12 + 3, counted once
    assert counts[families["water"]["id"]] == 12
    expected = pinned_full_rows(engine, moment)
    got = stored_rows(engine)
    for subagent_id in family_ids(families, "meals"):
        assert got[subagent_id] == pytest.approx(expected[subagent_id], abs=1e-6, nan_ok=True)


def test_a_run_on_sqlite_waits_out_a_writer_past_the_busy_timeout(database_url, backend, engine):
    """A run waits for SQLite's write lock as long as the writer holds it, as PostgreSQL's
    advisory lock waits: a loaded machine's run can hold it past the busy timeout."""
    if backend != "sqlite":
        pytest.skip("SQLite's write lock; PostgreSQL's advisory lock waits by itself")
    impatient = make_engine(database_url, busy_timeout_ms=100)
    writer = sqlite3.connect(make_url(database_url).database, check_same_thread=False)
    writer.isolation_level = None
    writer.execute("BEGIN IMMEDIATE")
    released = threading.Timer(1.0, writer.execute, ("COMMIT",))
    released.start()
    try:
        run = rank(impatient)
    finally:
        released.join()
        writer.close()
        impatient.dispose()
    assert run.mode == "full"
    with session_scope(engine) as session:
        assert session.scalars(select(RankingRun.mode)).all() == ["full"]
