"""The event table's month partitions (PostgreSQL) and what must hold on both databases: the
migration keeps every row, partitions are made ahead (idempotently, by racing workers too), an
event no partition covers still goes in, retention drops only expired months the rollup is done
with, and an event id is stored once across a month boundary and under concurrent copies."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from market.platform.celery_app import celery_config
from market.platform.config import Settings
from market.platform.migrate import downgrade, upgrade
from market.platform.state import app_state
from market.usage import partitions
from market.usage.ingest import ingest_events
from market.usage.models import DailyStats, RollupDirty, UsageEvent
from market.usage.partitions import (
    MIN_RETENTION_DAYS,
    create_partitions_ahead,
    drop_expired_partitions,
    month_partitions,
    months_to_keep_ready,
    partition_name,
)
from market.usage.rollups import run_rollup
from tests.factories import make_user, publish


@dataclass(frozen=True)
class World:
    client_id: int
    user_ids: tuple[int, int]
    subagent_id: int
    version_id: int


@pytest.fixture
def world(client, engine) -> World:
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    service = make_user(engine, "collector", kind="service", scopes=["events:write"])
    body = publish(client, alice, title="Water Tracker")
    return World(service.id, (alice.id, bob.id), body["id"], body["latest_version"]["id"])


def event(world: World, at: datetime, event_id: str | None = None, kind: str = "open") -> dict:
    return {
        "event_id": event_id or str(uuid.uuid4()),
        "user_id": world.user_ids[0],
        "subagent_id": world.subagent_id,
        "version_id": world.version_id,
        "kind": kind,
        "occurred_at": at.isoformat(),
    }


def ingest(engine, world: World, items: list[dict], now: datetime) -> list[str]:
    with Session(engine) as session:
        results = ingest_events(session, world.client_id, items, now=now)
        session.commit()
    return [r["status"] for r in results]


def rows_with_id(engine, event_id: str) -> int:
    with Session(engine) as session:
        return session.execute(
            select(func.count()).where(UsageEvent.event_id == uuid.UUID(event_id))
        ).scalar_one()


def where_stored(engine, event_id: str) -> str:
    with engine.connect() as connection:
        return connection.execute(
            text("SELECT tableoid::regclass::text FROM usage_event WHERE event_id = :id"),
            {"id": event_id},
        ).scalar_one()


def make_ready(engine, today: date) -> list[str]:
    with Session(engine) as session:
        created = create_partitions_ahead(session, today)
        session.commit()
    return created


def test_partitions_are_made_ahead_once_even_by_two_workers_at_a_time(engine, backend):
    today = date(2031, 3, 4)
    expected = {partition_name(m) for m in months_to_keep_ready(today)}
    assert {"usage_event_y2031m02", "usage_event_y2031m03", "usage_event_y2031m06"} <= expected
    barrier = threading.Barrier(2)
    made: list[list[str]] = []
    errors: list[BaseException] = []

    def worker() -> None:
        with Session(engine) as session:
            try:
                barrier.wait(10)
                made.append(create_partitions_ahead(session, today))
                session.commit()
            except Exception as error:
                errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    if backend == "sqlite":  # one plain table: nothing to make
        assert made == [[], []]
        return
    # One worker made them all (the other waited on the lock, then found them made).
    assert sorted(made, key=len) == [[], sorted(expected)]
    with Session(engine) as session:
        assert expected <= {name for name, _end in month_partitions(session).values()}
    assert make_ready(engine, today) == []


def test_an_event_in_a_month_without_a_partition_is_stored_and_later_moved_into_it(
    engine, world, backend
):
    now = datetime(2032, 7, 9, 12, tzinfo=UTC)  # no partition covers 2032 yet
    item = event(world, now - timedelta(hours=1))
    assert ingest(engine, world, [item], now) == ["stored"]
    if backend == "postgresql":
        assert where_stored(engine, item["event_id"]) == "usage_event_default"
        # The nightly run makes a month for whatever the default partition holds.
        assert "usage_event_y2032m07" in make_ready(engine, datetime.now(UTC).date())
        assert make_ready(engine, datetime.now(UTC).date()) == []
        assert where_stored(engine, item["event_id"]) == "usage_event_y2032m07"
    assert ingest(engine, world, [item], now) == ["duplicate"]
    assert rows_with_id(engine, item["event_id"]) == 1


def test_a_retry_across_the_month_boundary_is_stored_once(engine, world, backend):
    """The retry arrives in the next month (even the next year): the partition follows the
    event's own time, so it meets the first copy's unique index."""
    make_ready(engine, date(2033, 12, 31))
    last_moment = datetime(2033, 12, 31, 23, 59, 59, 900_000, tzinfo=UTC)
    item = event(world, last_moment)
    assert ingest(engine, world, [item], last_moment + timedelta(milliseconds=50)) == ["stored"]
    for later in (timedelta(seconds=1), timedelta(days=6)):
        assert ingest(engine, world, [item], last_moment + later) == ["duplicate"]
    assert rows_with_id(engine, item["event_id"]) == 1
    if backend == "postgresql":
        assert where_stored(engine, item["event_id"]) == "usage_event_y2033m12"


def test_concurrent_copies_of_a_batch_store_each_event_once(engine, world):
    """Eight clients send the same batch at the same moment (a retry storm after a timeout):
    every id is stored exactly once and reported "stored" exactly once."""
    now = datetime.now(UTC)
    batch = [event(world, now - timedelta(seconds=k)) for k in range(300)]
    statuses: Counter = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def client_thread() -> None:
        barrier.wait(10)
        for _attempt in range(20):  # SQLite's single writer may say "locked": retry
            try:
                with Session(engine) as session:
                    results = ingest_events(session, world.client_id, batch, now=now)
                    session.commit()
                break
            except OperationalError:
                continue
        with lock:
            statuses.update((r["event_id"], r["status"]) for r in results)

    threads = [threading.Thread(target=client_thread) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    ids = [item["event_id"] for item in batch]
    assert all(statuses[(i, "stored")] == 1 and statuses[(i, "duplicate")] == 7 for i in ids)
    with Session(engine) as session:
        assert session.execute(select(func.count()).select_from(UsageEvent)).scalar_one() == 300


def test_retention_drops_only_expired_months_the_rollup_is_done_with(engine, world, backend):
    today = datetime.now(UTC).date()
    # Far enough apart that the late mark below (on `old`) no longer reads `older`'s month.
    old, older = (
        today - timedelta(days=d) for d in (MIN_RETENTION_DAYS + 60, MIN_RETENTION_DAYS + 150)
    )
    for day in (older, old):
        make_ready(engine, day)
        moment = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
        assert ingest(engine, world, [event(world, moment)], moment) == ["stored"]
    with Session(engine) as session:
        run_rollup(session)  # both days rolled up
        session.commit()
        # A late mark on the newer old day: the rollup still has to read that month.
        session.add(RollupDirty(subagent_id=world.subagent_id, day=old))
        session.commit()
        with pytest.raises(ValueError, match="at least"):
            drop_expired_partitions(session, today, MIN_RETENTION_DAYS - 1)
        session.rollback()
        assert drop_expired_partitions(session, today, 0) == []
        dropped = drop_expired_partitions(session, today, MIN_RETENTION_DAYS)
        session.commit()
    with Session(engine) as session:
        left = session.execute(select(UsageEvent.occurred_day)).scalars().all()
        stats = session.execute(select(DailyStats.day)).scalars().all()
    assert set(stats) == {older, old}  # the rollups stay
    if backend == "sqlite":
        assert dropped == [] and set(left) == {older, old}
        return
    cutoff = today - timedelta(days=MIN_RETENTION_DAYS)
    assert partition_name(older.replace(day=1)) in dropped
    assert partition_name(old.replace(day=1)) not in dropped  # its mark is still pending
    assert all(name < partition_name(cutoff.replace(day=1)) for name in dropped)
    assert left == [old]
    with Session(engine) as session:
        run_rollup(session)  # the mark is consumed: now that month may go too
        session.commit()
        assert partition_name(old.replace(day=1)) in drop_expired_partitions(
            session, today, MIN_RETENTION_DAYS
        )
        session.commit()
        assert session.execute(select(func.count()).select_from(UsageEvent)).scalar_one() == 0
        assert len(session.execute(select(DailyStats.day)).scalars().all()) == 2


def test_dropping_gives_up_instead_of_queueing_ingest_behind_a_long_reader(
    engine, world, backend, monkeypatch
):
    if backend == "sqlite":
        pytest.skip("one plain table: nothing is dropped")
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT_MS", 200)
    today = datetime.now(UTC).date()
    long_ago = today - timedelta(days=MIN_RETENTION_DAYS + 150)
    make_ready(engine, long_ago)
    with engine.connect() as reader:
        reader.execute(text("SELECT count(*) FROM usage_event"))  # holds its read lock
        with Session(engine) as session, pytest.raises(OperationalError, match="lock timeout"):
            drop_expired_partitions(session, today, MIN_RETENTION_DAYS)
        reader.rollback()
    with Session(engine) as session:
        assert partition_name(long_ago.replace(day=1)) in drop_expired_partitions(
            session, today, MIN_RETENTION_DAYS
        )
        session.commit()


def test_the_migration_converts_a_populated_table_without_losing_a_row(
    engine, world, database_url, backend
):
    now = datetime.now(UTC)
    items = [event(world, now - timedelta(days=k, minutes=k)) for k in range(7)]
    assert ingest(engine, world, items, now) == ["stored"] * 7
    engine.dispose()
    downgrade(database_url, "0010")
    if backend == "postgresql":
        with engine.connect() as connection:
            kind = connection.execute(
                text("SELECT relkind FROM pg_class WHERE relname = 'usage_event'")
            ).scalar()
        assert kind == "r"  # a plain table again
    long_ago = now - timedelta(days=400)
    with Session(engine) as session:  # a row written under the old schema, a year back
        session.add(
            UsageEvent(
                event_id=uuid.uuid4(),
                client_id=world.client_id,
                user_id=world.user_ids[1],
                subagent_id=world.subagent_id,
                version_id=world.version_id,
                kind="open",
                occurred_at=long_ago,
                occurred_day=long_ago.date(),
                received_at=long_ago,
            )
        )
        session.commit()
    before = _event_rows(engine)
    upgrade(database_url)
    engine.dispose()
    assert _event_rows(engine) == before and len(before) == 8
    if backend == "postgresql":
        with Session(engine) as session:
            months = set(month_partitions(session))
        assert {date.fromisoformat(day).replace(day=1) for _, day in before} <= months
        # Each month carries the parent's indexes: its own BRIN on the day, and the unique
        # (event_id, occurred_day) that makes a retry a conflict.
        with engine.connect() as connection:
            indexes = connection.execute(
                text(
                    "SELECT am.amname, i.indisunique, pg_get_indexdef(i.indexrelid) "
                    "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "JOIN pg_am am ON am.oid = c.relam WHERE i.indrelid = to_regclass(:name)"
                ),
                {"name": partition_name(now.date().replace(day=1))},
            ).all()
        assert any(method == "brin" and "(occurred_day)" in ddl for method, _, ddl in indexes)
        assert any(unique and "(event_id, occurred_day)" in ddl for _, unique, ddl in indexes)
    assert ingest(engine, world, items[:1], now) == ["duplicate"]


def _event_rows(engine) -> list[tuple]:
    with engine.connect() as connection:
        return sorted(
            (str(event_id), str(day))
            for event_id, day in connection.execute(
                text("SELECT event_id, occurred_day FROM usage_event")
            )
        )


def test_beat_runs_both_partition_tasks_in_the_app(app, backend):
    schedule = celery_config(Settings())["beat_schedule"]
    assert schedule["create-event-partitions"]["task"] == "sprig.create_event_partitions"
    assert schedule["drop-expired-events"]["task"] == "sprig.drop_expired_events"
    celery = app_state(app).celery
    celery.loader.import_default_modules()
    # The migration made this month and the ones ahead already (SQLite: no partitions at all).
    assert celery.tasks["sprig.create_event_partitions"].delay().get() == {"created": []}
    if backend == "postgresql":
        with Session(app_state(app).engine) as session:
            months = set(month_partitions(session))
        assert set(months_to_keep_ready(datetime.now(UTC).date())) <= months
    assert celery.tasks["sprig.drop_expired_events"].delay().get() == {"dropped": []}
