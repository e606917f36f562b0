"""Exactly-once ingestion as a property, on every backend.

Whatever a client does with a set of valid events — send some twice or three times, inside one
batch or across batches, in any order, split anywhere — the table ends up holding exactly the
set of unique event ids, and across all the answers each unique id is reported ``stored``
exactly once (every other copy ``duplicate``). Invalid items mixed in are rejected and never
stored, and every stored event has its (sub-agent, day) marked for the rollup.

``ingest_events`` is called directly with a session, committing after each batch as the API
does.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, select
from sqlmodel import Session

from market.usage.ingest import ingest_events
from market.usage.models import RollupDirty, UsageEvent
from tests.factories import make_user, publish


@dataclass(frozen=True)
class Seed:
    client_id: int
    user_ids: tuple[int, ...]
    targets: tuple[tuple[int, int], ...]  # (subagent_id, version_id)


@pytest.fixture
def seed(client, engine) -> Seed:
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    service = make_user(engine, "collector", kind="service", scopes=["events:write"])
    targets = []
    for title in ("Water Tracker", "Sleep Log"):
        body = publish(client, alice, title=title)
        targets.append((body["id"], body["latest_version"]["id"]))
    return Seed(service.id, (alice.id, bob.id), tuple(targets))


KINDS = ("open", "action", "session_end", "error", "uninstall")


@st.composite
def plans(draw):
    """(valid events, invalid events, batches): every valid event sent 1-3 times, invalid ones
    once, all shuffled together and cut into batches (empty batches included)."""
    n_valid = draw(st.integers(1, 25))
    n_invalid = draw(st.integers(0, 3))
    ids = draw(
        st.lists(
            st.uuids(), min_size=n_valid + n_invalid, max_size=n_valid + n_invalid, unique=True
        )
    )
    valid = []
    for event_id in ids[:n_valid]:
        valid.append(
            {
                "event_id": str(event_id),
                "user": draw(st.integers(0, 1)),
                "target": draw(st.integers(0, 1)),
                "kind": draw(st.sampled_from(KINDS)),
                # up to six days back: events land on several UTC days
                "minutes_ago": draw(st.integers(0, 6 * 24 * 60)),
                "duration_ms": draw(st.none() | st.integers(0, 3_600_000)),
            }
        )
    invalid = [{"event_id": str(i), "bad": True} for i in ids[n_valid:]]
    copies = draw(st.lists(st.integers(1, 3), min_size=n_valid, max_size=n_valid))
    stream = [e for e, c in zip(valid, copies, strict=True) for _ in range(c)] + invalid
    order = draw(st.permutations(range(len(stream))))
    stream = [stream[i] for i in order]
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    bounds = [0, *cuts, len(stream)]
    batches = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    return valid, invalid, batches


def wire(spec: dict, seed: Seed, now: datetime) -> dict:
    """The JSON a client sends for a planned event (a fresh dict for every copy)."""
    if spec.get("bad"):
        return {"event_id": spec["event_id"], "kind": "open"}  # no user, sub-agent, version
    subagent_id, version_id = seed.targets[spec["target"]]
    body = {
        "event_id": spec["event_id"],
        "user_id": seed.user_ids[spec["user"]],
        "subagent_id": subagent_id,
        "version_id": version_id,
        "kind": spec["kind"],
        "occurred_at": (now - timedelta(minutes=spec["minutes_ago"])).isoformat(),
    }
    if spec["duration_ms"] is not None:
        body["duration_ms"] = spec["duration_ms"]
    return body


# The `engine` and `seed` fixtures are function-scoped, so Hypothesis runs every example of one
# test against the same database (both backends come from the parametrized `database_url`).
# That is intended: the seed rows (users, sub-agents, versions) are read-only here, and each
# example first deletes the events and rollup marks an earlier example wrote, so examples do
# not share state. Hence the suppressed `function_scoped_fixture` health check.
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(plan=plans())
def test_any_duplication_split_and_order_stores_each_id_once(engine, seed, plan):
    valid, invalid, batches = plan
    now = datetime.now(UTC)
    with Session(engine) as session:
        session.execute(delete(UsageEvent))
        session.execute(delete(RollupDirty))
        session.commit()

    statuses: dict[str, Counter] = {}
    with Session(engine) as session:
        for batch in batches:
            items = [wire(spec, seed, now) for spec in batch]
            results = ingest_events(session, seed.client_id, items, now=now)
            session.commit()
            assert [r["index"] for r in results] == list(range(len(items)))
            for item, result in zip(items, results, strict=True):
                assert result["event_id"] == item["event_id"]
                statuses.setdefault(item["event_id"], Counter())[result["status"]] += 1

    with Session(engine) as session:
        rows = session.execute(
            select(
                UsageEvent.event_id,
                UsageEvent.kind,
                UsageEvent.user_id,
                UsageEvent.subagent_id,
                UsageEvent.occurred_day,
            )
        ).all()
        marks = set(session.execute(select(RollupDirty.subagent_id, RollupDirty.day)).all())

    unique_valid = {spec["event_id"] for spec in valid}
    stored = [str(row.event_id) for row in rows]
    assert len(stored) == len(set(stored))
    assert set(stored) == unique_valid

    for spec in valid:
        seen = statuses[spec["event_id"]]
        assert seen["stored"] == 1, (spec["event_id"], seen)
        assert seen["rejected"] == 0
        assert seen["duplicate"] == sum(seen.values()) - 1
    for spec in invalid:
        assert statuses[spec["event_id"]] == Counter(rejected=1)

    by_id = {str(row.event_id): row for row in rows}
    for spec in valid:
        row = by_id[spec["event_id"]]
        assert (row.kind, row.user_id) == (spec["kind"], seed.user_ids[spec["user"]])
        expected_day = (now - timedelta(minutes=spec["minutes_ago"])).date()
        assert row.occurred_day == expected_day
        assert (row.subagent_id, row.occurred_day) in marks


def test_the_same_id_with_different_content_keeps_the_first_stored_copy(engine, seed):
    now = datetime.now(UTC)
    event_id = str(uuid.uuid4())
    subagent_id, version_id = seed.targets[0]
    base = {
        "event_id": event_id,
        "user_id": seed.user_ids[0],
        "subagent_id": subagent_id,
        "version_id": version_id,
        "occurred_at": now.isoformat(),
    }
    with Session(engine) as session:
        first = ingest_events(session, seed.client_id, [dict(base, kind="open")], now=now)
        session.commit()
        second = ingest_events(
            session,
            seed.client_id,
            [dict(base, kind="error"), dict(base, kind="action", user_id=seed.user_ids[1])],
            now=now,
        )
        session.commit()
        assert [r["status"] for r in first + second] == ["stored", "duplicate", "duplicate"]
        row = session.get(UsageEvent, uuid.UUID(event_id))
        assert (row.kind, row.user_id) == ("open", seed.user_ids[0])


class ConcurrentBatchFailed(Exception):
    """A batch failed only because another batch was being stored at the same time."""


def test_concurrent_overlapping_batches_in_any_order_store_each_id_once(
    engine, seed, backend, request
):
    """Two clients (or a client and its own retry) send overlapping batches at the same time,
    in opposite orders. Each id must be stored once; neither batch should fail."""
    subagent_id, version_id = seed.targets[0]
    now = datetime.now(UTC)
    failures: list[BaseException] = []
    statuses: Counter = Counter()
    sent: set[str] = set()
    lock = threading.Lock()

    def store(batch: list[dict], barrier: threading.Barrier) -> None:
        barrier.wait(10)
        with Session(engine) as session:
            try:
                results = ingest_events(session, seed.client_id, batch, now=now)
                session.commit()
            except Exception as error:  # the client retries below, as a real one would
                session.rollback()
                with lock:
                    failures.append(error)
                return
        with lock:
            statuses.update((r["event_id"], r["status"]) for r in results)

    retries = []
    rounds = 0
    for _round in range(15):
        rounds += 1
        ids = [str(uuid.uuid4()) for _ in range(600)]
        sent.update(ids)
        events = [
            {
                "event_id": event_id,
                "user_id": seed.user_ids[k % 2],
                "subagent_id": subagent_id,
                "version_id": version_id,
                "kind": "open",
                "occurred_at": now.isoformat(),
            }
            for k, event_id in enumerate(ids)
        ]
        batches = [events, events[::-1]]
        barrier = threading.Barrier(len(batches))
        threads = [threading.Thread(target=store, args=(b, barrier)) for b in batches]
        before = len(failures)
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        retries.extend(batches[0] for _ in range(len(failures) - before))
        if failures:
            break  # shown once is enough (each deadlock costs deadlock_timeout, 1 s)
    for batch in retries:  # a failed batch is sent again, alone
        with Session(engine) as session:
            results = ingest_events(session, seed.client_id, batch, now=now)
            session.commit()
        statuses.update((r["event_id"], r["status"]) for r in results)

    with Session(engine) as session:
        stored = [str(i) for i in session.execute(select(UsageEvent.event_id)).scalars()]
    assert len(stored) == len(set(stored)) and set(stored) == sent
    assert all(statuses[(event_id, "stored")] == 1 for event_id in sent)
    if failures:
        raise ConcurrentBatchFailed(
            f"{len(failures)} of {2 * rounds} concurrent batches failed: {failures[0]!r:.300}"
        )
