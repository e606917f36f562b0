"""Usage events into the database (and the install log). Commit once, at the caller's boundary.

Ingestion design: each batch is one transaction that inserts the events with
``ON CONFLICT … DO NOTHING RETURNING event_id`` and marks their (sub-agent, day) as
dirty for the rollup. A 202 is sent only after that commit, so an accepted event is on disk in
PostgreSQL (fsync) before the client hears about it: it survives a ``kill -9`` of any Sprig
process, and Redis is not on the path at all, so a Redis restart cannot lose or stall it.
Retries in any order, whole or in part, store each event once because the primary key is the
client's event id (on PostgreSQL with the event's own day, the partition key: a retry carries
the same day, see ``market.usage.partitions``). A Redis stream in front would answer sooner
but could lose what it had acknowledged (AOF fsyncs once a second) and would need a consumer,
acks and dead-lettering; one PostgreSQL statement per batch already keeps up with the clients.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import orjson
from sqlalchemy import insert as generic_insert
from sqlalchemy import select
from sqlmodel import Session

from feedback.ingest import EventRow, parse_batch
from market.catalog.models import SubAgent, Version
from market.identity.access import may_use
from market.identity.models import User
from market.platform.db import PerDatabase, in_bound_ids
from market.platform.time import utcnow
from market.usage.models import InstallLog
from market.usage.rollups import mark_dirty


def _lookups(dialect: str):
    """The three reference lookups, built once per dialect (``in_bound_ids``: one array
    parameter on PostgreSQL instead of a thousand bound values)."""
    return (
        select(SubAgent.id, SubAgent.author_id, SubAgent.visibility).where(
            in_bound_ids(dialect, SubAgent.id, "ids")
        ),
        select(Version.id, Version.subagent_id).where(in_bound_ids(dialect, Version.id, "ids")),
        select(User.id).where(in_bound_ids(dialect, User.id, "ids")),
    )


_lookups_of = PerDatabase(_lookups)


def _references(session: Session, events: list[EventRow]):
    subagent_query, version_query, user_query = _lookups_of(session)
    subagent_ids = sorted({e.subagent_id for e in events})
    version_ids = sorted({e.version_id for e in events})
    user_ids = sorted({e.user_id for e in events})
    subagents = {row.id: row for row in session.execute(subagent_query, {"ids": subagent_ids})}
    versions = dict(session.execute(version_query, {"ids": version_ids}).all())
    users = set(session.execute(user_query, {"ids": user_ids}).scalars())
    return subagents, versions, users


def _reference_problem(event: EventRow, subagents, versions, users) -> str | None:
    subagent = subagents.get(event.subagent_id)
    # Anything else is treated exactly like an unknown id: the answer reveals nothing.
    if subagent is None or not may_use(event.user_id, subagent.author_id, subagent.visibility):
        return "unknown sub-agent"
    if versions.get(event.version_id) != event.subagent_id:
        return "version does not belong to the sub-agent"
    if event.user_id not in users:
        return "unknown user"
    return None


def ingest_events(
    session: Session, client_id: int, items: list, *, now: datetime | None = None
) -> list[dict]:
    """Store a batch; return one result per item, in order:
    ``{"index", "event_id", "status": "stored"|"duplicate"|"rejected", "reason"?}``."""
    now = now or utcnow()
    accepted, rejected = parse_batch(items, now)
    results: list[dict | None] = [None] * len(items)
    for r in rejected:
        results[r.index] = {
            "index": r.index,
            "event_id": r.event_id,
            "status": "rejected",
            "reason": r.reason,
        }
    if accepted:
        if session.get_bind().dialect.name == "postgresql":
            storable, stored_ids = _store_postgres(session, client_id, accepted, now)
        else:
            storable, stored_ids = _store_checked(session, client_id, accepted, now)
        if len(storable) < len(accepted):
            valid = {index for index, _ in storable}
            invalid = [(index, event) for index, event in accepted if index not in valid]
            subagents, versions, users = _references(session, [e for _, e in invalid])
            for index, event in invalid:
                results[index] = {
                    "index": index,
                    "event_id": event.event_id,
                    "status": "rejected",
                    "reason": _reference_problem(event, subagents, versions, users)
                    or "unknown reference",
                }
        # stored_ids holds each id this call inserted; the first position that carries it is
        # "stored", any other (a copy within the batch, or a retry) is "duplicate".
        for index, event in storable:
            event_id = event.event_id
            if event_id in stored_ids:
                stored_ids.discard(event_id)
                status = "stored"
            else:
                status = "duplicate"
            results[index] = {"index": index, "event_id": event_id, "status": status}
    return results


def _store_checked(session, client_id, accepted, now):
    """Check references, insert what passes, mark its days dirty (the portable path)."""
    subagents, versions, users = _references(session, [e for _, e in accepted])
    storable = [
        (index, event)
        for index, event in accepted
        if _reference_problem(event, subagents, versions, users) is None
    ]
    stored_ids = _insert_events(session, client_id, [e for _, e in storable], now)
    mark_dirty(session, ((e.subagent_id, e.occurred_at.date()) for _, e in storable))
    return storable, stored_ids


# PostgreSQL does the whole batch in one statement: it parses the events from one JSON
# parameter (in C), keeps those whose references hold (the same rules as
# _reference_problem: market.identity.access.may_use, in SQL), inserts them skipping known ids, and
# marks their days dirty. Python only serializes the validated batch; a rejected reference
# is explained afterwards.
_INGEST_POSTGRES = """
WITH incoming AS (
    SELECT * FROM json_to_recordset(%(events)s::json) AS e(
        idx int, event_id uuid, user_id int, subagent_id int, version_id int, kind varchar,
        occurred_at timestamptz, duration_ms int, properties json, exposure_id uuid)
), valid AS (
    SELECT e.* FROM incoming e
    JOIN subagent s ON s.id = e.subagent_id
        AND (s.visibility <> 'private' OR s.author_id = e.user_id)
    JOIN subagent_version v ON v.id = e.version_id AND v.subagent_id = e.subagent_id
    JOIN user_account u ON u.id = e.user_id
), inserted AS (
    INSERT INTO usage_event (event_id, client_id, user_id, subagent_id, version_id, kind,
        occurred_at, occurred_day, duration_ms, properties, exposure_id, received_at)
    SELECT event_id, %(client)s, user_id, subagent_id, version_id, kind, occurred_at,
        (occurred_at AT TIME ZONE 'UTC')::date, duration_ms, properties, exposure_id, %(now)s
    FROM valid
    -- Every batch takes row locks in the same (id) order, so two concurrent batches that
    -- share ids wait for each other instead of deadlocking.
    ORDER BY event_id
    -- The table is partitioned by the event's day, and a retry carries the same day: this key
    -- is the event id's uniqueness (market.usage.partitions explains it).
    ON CONFLICT (event_id, occurred_day) DO NOTHING
    RETURNING event_id
), marked AS (
    INSERT INTO rollup_dirty (subagent_id, day)
    SELECT DISTINCT subagent_id, (occurred_at AT TIME ZONE 'UTC')::date FROM valid
)
-- Two arrays, not a row per event: fetching and decoding 2,000 rows of UUIDs cost more
-- than the insert. (Joining `inserted` back to `valid` for positions is a nested loop: the
-- planner cannot estimate json_to_recordset.)
SELECT
    (SELECT coalesce(array_agg(idx), '{}') FROM valid),
    (SELECT coalesce(array_agg(event_id::text), '{}') FROM inserted)
"""


def _store_postgres(session, client_id, accepted, now):
    payload = orjson.dumps(
        [
            {
                "idx": index,
                "event_id": e.event_id,
                "user_id": e.user_id,
                "subagent_id": e.subagent_id,
                "version_id": e.version_id,
                "kind": e.kind,
                "occurred_at": e.occurred_at,
                "duration_ms": e.duration_ms,
                "properties": e.properties,
                "exposure_id": e.exposure_id,
            }
            for index, e in accepted
        ]
    ).decode()
    # Through SQLAlchemy's connection: driver errors become SQLAlchemy errors (a lost
    # database is a 503, and the pool drops the broken connection).
    valid_idx, stored_text = (
        session.connection()
        .exec_driver_sql(_INGEST_POSTGRES, {"events": payload, "client": client_id, "now": now})
        .one()
    )
    if len(valid_idx) == len(accepted):
        storable = accepted
    else:
        valid = set(valid_idx)
        storable = [(index, event) for index, event in accepted if index in valid]
    return storable, set(stored_text)


_EVENT_COLUMNS = (
    "event_id",
    "client_id",
    "user_id",
    "subagent_id",
    "version_id",
    "kind",
    "occurred_at",
    "occurred_day",
    "duration_ms",
    "properties",
    "exposure_id",
    "received_at",
)


def _event_tuples(client_id: int, events: list[EventRow], now: datetime) -> list[tuple]:
    return [
        (
            e.event_id,
            client_id,
            e.user_id,
            e.subagent_id,
            e.version_id,
            e.kind,
            e.occurred_at,
            e.occurred_at.date(),
            e.duration_ms,
            json.dumps(e.properties),
            e.exposure_id,
            now,
        )
        for e in events
    ]


def _insert_events(
    session: Session, client_id: int, events: list[EventRow], now: datetime
) -> set[str]:
    """Insert, skipping ids already stored; return the ids this call stored (SQLite).

    Compiling a 1,000-row INSERT through SQLAlchemy costs ~0.7 s of CPU (11,000 bind
    parameters), so this goes to the driver: one prepared ``INSERT … ON CONFLICT DO NOTHING
    RETURNING`` per row, in the caller's transaction.
    """
    if not events:
        return set()
    return _insert_events_sqlite(session.connection(), client_id, events, now)


def _insert_events_sqlite(connection, client_id, events, now) -> set[str]:
    raw = connection.connection.dbapi_connection
    placeholders = ", ".join("?" for _ in _EVENT_COLUMNS)
    statement = (
        f"INSERT INTO usage_event ({', '.join(_EVENT_COLUMNS)}) VALUES ({placeholders}) "  # noqa: S608 - fixed column names
        "ON CONFLICT (event_id) DO NOTHING RETURNING event_id"
    )
    stored = set()
    cursor = raw.cursor()
    try:
        for row in _event_tuples(client_id, events, now):
            # SQLAlchemy stores UUIDs on SQLite as 32 hex digits and datetimes as naive UTC
            # text; write them the same way so ORM reads and these rows agree.
            values = (
                row[0].replace("-", ""),
                *row[1:6],
                row[6].astimezone(UTC).replace(tzinfo=None).isoformat(sep=" "),
                row[7].isoformat(),
                row[8],
                row[9],
                row[10].replace("-", "") if row[10] else None,
                row[11].astimezone(UTC).replace(tzinfo=None).isoformat(sep=" "),
            )
            if cursor.execute(statement, values).fetchone() is not None:
                stored.add(row[0])
    finally:
        cursor.close()
    return stored


def log_install(session: Session, user_id: int, subagent_id: int, action: str, at=None) -> None:
    log_installs(session, [(user_id, subagent_id, action, at or utcnow())])


def log_installs(session: Session, entries: list[tuple[int, int, str, datetime]]) -> None:
    """Log many (user, sub-agent, action, at) at once: one executemany per table instead of
    two round trips each (the demo loads ten thousand)."""
    if not entries:
        return
    session.execute(
        _LOG_INSTALL,
        [
            {"user_id": u, "subagent_id": s, "action": action, "at": at, "day": at.date()}
            for u, s, action, at in entries
        ],
    )
    mark_dirty(session, [(s, at.date()) for _, s, _, at in entries])


_LOG_INSTALL = generic_insert(InstallLog)
