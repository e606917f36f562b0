"""Events and feedback in and out of the database. Commit once, at the caller's boundary.

Ingestion design: each batch is one transaction that inserts the events with
``ON CONFLICT (event_id) DO NOTHING RETURNING event_id`` and marks their (sub-agent, day) as
dirty for the rollup. A 202 is sent only after that commit, so an accepted event is on disk in
PostgreSQL (fsync) before the client hears about it: it survives a ``kill -9`` of any Sprig
process, and Redis is not on the path at all, so a Redis restart cannot lose or stall it.
Retries in any order, whole or in part, store each event once because the primary key is the
client's event id. See the events issue notes for why this beats a Redis stream here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

import orjson
from sqlalchemy import ARRAY, Integer, any_, bindparam, delete, distinct, func, select, text, tuple_
from sqlalchemy import insert as generic_insert
from sqlmodel import Session

from feedback import credit, rollup
from feedback.ingest import EventRow, parse_batch
from market.catalog.models import Install, SubAgent, Version
from market.identity.access import counted_fork_clause, may_use, tree_visible
from market.identity.models import User
from market.platform.db import id_in, insert_unless_exists
from market.platform.time import utcnow
from market.usage.models import (
    DailyStats,
    Feedback,
    InstallLog,
    RetentionCohort,
    RollupDirty,
    UsageEvent,
)


def mark_dirty(session: Session, pairs: Iterable[tuple[int, date]]) -> None:
    rows = [{"subagent_id": s, "day": d} for s, d in sorted(set(pairs))]
    if rows:
        # executemany of one small statement: a multi-row VALUES would be compiled anew
        # for every batch size, which costs more than the insert itself.
        session.execute(_MARK_DIRTY, rows)


_MARK_DIRTY = generic_insert(RollupDirty)


def _lookups(dialect: str):
    """The three reference lookups, built once per dialect. PostgreSQL gets one array
    parameter (``= ANY(:ids)``) instead of a thousand bound values."""
    if dialect == "postgresql":

        def among(column, name):
            return column == any_(bindparam(name, type_=ARRAY(Integer)))

    else:

        def among(column, name):
            return column.in_(bindparam(name, expanding=True))

    return (
        select(SubAgent.id, SubAgent.author_id, SubAgent.visibility).where(
            among(SubAgent.id, "ids")
        ),
        select(Version.id, Version.subagent_id).where(among(Version.id, "ids")),
        select(User.id).where(among(User.id, "ids")),
    )


_LOOKUPS = {name: _lookups(name) for name in ("postgresql", "sqlite")}


def _references(session: Session, events: list[EventRow]):
    subagent_query, version_query, user_query = _LOOKUPS[session.get_bind().dialect.name]
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
    ON CONFLICT (event_id) DO NOTHING
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


# ---- feedback -------------------------------------------------------------------------


def record_feedback(
    session: Session,
    *,
    user_id: int,
    subagent: SubAgent,
    version: Version,
    scale: str,
    rating: int,
    comment: str | None,
    tags: list[str],
    exposure_id: uuid.UUID | None,
    client_id: int | None,
    now: datetime | None = None,
) -> tuple[Feedback, bool]:
    """One rating per user and version; rating again replaces it. Returns (row, created)."""
    now = now or utcnow()
    existing = _rating_of(session, user_id, version.id)
    if existing is None:
        row, created = insert_unless_exists(
            session,
            Feedback(
                user_id=user_id,
                subagent_id=subagent.id,
                version_id=version.id,
                client_id=client_id,
                scale=scale,
                rating=rating,
                comment=comment,
                tags=tags,
                exposure_id=exposure_id,
                created_at=now,
                updated_at=now,
                updated_day=now.date(),
            ),
            lambda: _rating_of(session, user_id, version.id),
        )
        if created:
            mark_dirty(session, [(subagent.id, now.date())])
            return row, True
        existing = row  # a concurrent first rating won: this one replaces it, as a retry would
    mark_dirty(session, [(subagent.id, existing.updated_day), (subagent.id, now.date())])
    existing.scale, existing.rating = scale, rating
    existing.comment, existing.tags = comment, tags
    existing.exposure_id = exposure_id or existing.exposure_id
    existing.client_id = client_id
    existing.updated_at = now
    existing.updated_day = now.date()
    session.add(existing)
    return existing, False


def _rating_of(session: Session, user_id: int, version_id: int) -> Feedback | None:
    return session.execute(
        select(Feedback)
        .where(Feedback.user_id == user_id, Feedback.version_id == version_id)
        .execution_options(populate_existing=True)
    ).scalar_one_or_none()


def log_install(session: Session, user_id: int, subagent_id: int, action: str, at=None) -> None:
    at = at or utcnow()
    session.execute(
        generic_insert(InstallLog).values(
            user_id=user_id, subagent_id=subagent_id, action=action, at=at, day=at.date()
        )
    )
    mark_dirty(session, [(subagent_id, at.date())])


# ---- rollups --------------------------------------------------------------------------

_ROLLUP_LOCK = 0x5B816  # any constant; names the rollup's advisory lock
_CHUNK = 400  # (sub-agent, day) pairs per aggregate query: keeps IN lists and plans small


def _chunks(items: list, size: int = _CHUNK):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def rollup_pending(session: Session) -> bool:
    """Whether any (sub-agent, day) waits for the rollup: one read of the marks' first row,
    so a reader that wants fresh figures opens no write transaction when nothing changed."""
    return (
        session.execute(select(RollupDirty.id).order_by(RollupDirty.id).limit(1)).first()
        is not None
    )


def run_rollup(session: Session, *, max_marks: int = 200_000) -> dict:
    """Recompute daily stats and retention cohorts for the touched (sub-agent, day) pairs.

    Idempotent and incremental: only pairs marked dirty are recomputed, each from the raw rows.
    The marks are consumed with ``DELETE … RETURNING`` in this transaction: a mark committed
    meanwhile is either seen (and its events, committed with it, are counted) or left for the
    next run; if this run fails, its deletions roll back with it.
    """
    if not _rollup_lock(session):
        return {"marks": 0, "days": 0, "cohorts": 0, "skipped": True}
    oldest = select(RollupDirty.id).order_by(RollupDirty.id).limit(max_marks)
    marks = session.execute(
        delete(RollupDirty)
        .where(RollupDirty.id.in_(oldest.scalar_subquery()))
        .returning(RollupDirty.subagent_id, RollupDirty.day)
    ).all()
    if not marks:
        return {"marks": 0, "days": 0, "cohorts": 0}
    pairs = sorted({(subagent_id, day) for subagent_id, day in marks})
    by_day: dict[date, list[int]] = {}
    for subagent_id, day in pairs:
        by_day.setdefault(day, []).append(subagent_id)
    for day, subagent_ids in sorted(by_day.items()):
        _rollup_day(session, day, subagent_ids)
    cohort_pairs = sorted({(s, c) for s, d in pairs for c in rollup.cohort_days_touched_by(d)})
    for chunk in _chunks(cohort_pairs):
        _rollup_cohorts(session, chunk)
    return {"marks": len(marks), "days": len(pairs), "cohorts": len(cohort_pairs)}


def _rollup_lock(session: Session) -> bool:
    """One rollup at a time: two would race to rewrite the same days. The PostgreSQL lock is
    released with the transaction; a run that finds it taken yields to the other. SQLite has a
    single writer already."""
    if session.get_bind().dialect.name != "postgresql":
        return True
    statement = text("SELECT pg_try_advisory_xact_lock(:key)")
    return bool(session.execute(statement, {"key": _ROLLUP_LOCK}).scalar())


def _rollup_day(session: Session, day: date, subagent_ids: list[int]) -> None:
    """Stats of one UTC day for the given sub-agents, each query a single pass over that day.

    With few sub-agents the (sub-agent, day) index finds their events; with many, the whole
    day is read once (a BRIN index on the day keeps that to the day's own pages) and the
    rows for other sub-agents are dropped here.
    """
    wanted = set(subagent_ids)
    stats = {subagent_id: rollup.DayStats() for subagent_id in subagent_ids}

    def restrict(subagent_column):
        return [subagent_column.in_(subagent_ids)] if len(subagent_ids) <= _CHUNK else []

    e = UsageEvent
    aggregate = (
        select(
            e.subagent_id,
            func.count().filter(e.kind == "open"),
            func.count(distinct(e.user_id)),
            func.count().filter(e.kind == "session_end"),
            func.coalesce(func.sum(e.duration_ms).filter(e.kind == "session_end"), 0),
            func.count().filter(e.kind == "error"),
        )
        .where(e.occurred_day == day, *restrict(e.subagent_id))
        .group_by(e.subagent_id)
    )
    for subagent_id, opens, active, sessions, spent, errors in session.execute(aggregate):
        if subagent_id in wanted:
            row = stats[subagent_id]
            row.opens, row.active_users, row.sessions = opens, active, sessions
            row.time_spent_ms, row.errors = int(spent), errors

    installers: dict[int, set] = {s: set() for s in subagent_ids}
    uninstallers: dict[int, set] = {s: set() for s in subagent_ids}
    for subagent_id, user_id in session.execute(
        select(e.subagent_id, e.user_id)
        .where(e.occurred_day == day, e.kind == "uninstall", *restrict(e.subagent_id))
        .distinct()
    ):
        if subagent_id in wanted:
            uninstallers[subagent_id].add(user_id)
    log = InstallLog
    for subagent_id, user_id, action in session.execute(
        select(log.subagent_id, log.user_id, log.action)
        .where(log.day == day, log.subagent_id.in_(subagent_ids))
        .distinct()
    ):
        (installers if action == "install" else uninstallers)[subagent_id].add(user_id)
    for subagent_id in subagent_ids:
        stats[subagent_id].installs = len(installers[subagent_id])
        stats[subagent_id].uninstalls = len(uninstallers[subagent_id])

    f = Feedback
    for subagent_id, scale, rating, count in session.execute(
        select(f.subagent_id, f.scale, f.rating, func.count())
        .where(f.updated_day == day, f.subagent_id.in_(subagent_ids))
        .group_by(f.subagent_id, f.scale, f.rating)
    ):
        row = stats[subagent_id]
        row.ratings += count
        name = rollup.rating_fields(scale, rating)
        setattr(row, name, getattr(row, name) + count)

    for chunk in _chunks(subagent_ids, 5000):
        session.execute(
            delete(DailyStats).where(DailyStats.day == day, DailyStats.subagent_id.in_(chunk))
        )
    rows = [
        {"subagent_id": s, "day": day, **vars(v)} for s, v in stats.items() if any(vars(v).values())
    ]
    if rows:
        # executemany of one statement: a multi-row VALUES costs more to build than to run.
        session.execute(_INSERT_DAILY_STATS, rows)


_INSERT_DAILY_STATS = generic_insert(DailyStats)
_INSERT_COHORT = generic_insert(RetentionCohort)


def _rollup_cohorts(session: Session, pairs: list[tuple[int, date]]) -> None:
    """Cohort figures for (sub-agent, install day) pairs, from first installs and events."""
    subagent_ids = sorted({s for s, _ in pairs})
    wanted = set(pairs)
    low = min(d for _, d in pairs)
    high = max(d for _, d in pairs) + timedelta(days=1)
    first_install: dict[tuple[int, int], date] = {}
    for subagent_id, user_id, created_at in session.execute(
        select(Install.subagent_id, Install.user_id, Install.created_at).where(
            Install.subagent_id.in_(subagent_ids),
            Install.created_at >= _day_start(low),
            Install.created_at < _day_start(high),
        )
    ):
        day = _as_utc(created_at).date()
        if (subagent_id, day) in wanted:
            first_install[(subagent_id, user_id)] = day
    active: set[tuple[int, int, date]] = set()
    if first_install:
        days = sorted(
            {
                d + timedelta(days=k)
                for d in set(first_install.values())
                for k in rollup.RETENTION_OFFSETS
            }
        )
        users = sorted({u for _, u in first_install})
        for user_chunk in _chunks(users, 1000):
            active.update(
                session.execute(
                    select(UsageEvent.subagent_id, UsageEvent.user_id, UsageEvent.occurred_day)
                    .where(
                        UsageEvent.subagent_id.in_(subagent_ids),
                        UsageEvent.occurred_day.in_(days),
                        UsageEvent.user_id.in_(user_chunk),
                    )
                    .distinct()
                ).all()
            )
    cohorts = rollup.retention(first_install, active)
    session.execute(
        delete(RetentionCohort).where(
            tuple_(RetentionCohort.subagent_id, RetentionCohort.install_day).in_(pairs)
        )
    )
    rows = [
        {
            "subagent_id": s,
            "install_day": d,
            "cohort_size": c.cohort_size,
            "day1": c.day1,
            "day7": c.day7,
            "day30": c.day30,
        }
        for (s, d), c in cohorts.items()
    ]
    if rows:
        session.execute(_INSERT_COHORT, rows)


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _as_utc(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes (stored in UTC); PostgreSQL aware ones.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# ---- creator stats --------------------------------------------------------------------

SUM_FIELDS = (
    "opens",
    "sessions",
    "time_spent_ms",
    "installs",
    "uninstalls",
    "errors",
    "ratings",
    *rollup.STAR_FIELDS,
    "thumbs_up",
    "thumbs_down",
)


def period_start(day: date, granularity: str) -> date:
    return day - timedelta(days=day.weekday()) if granularity == "week" else day


def _distinct_users(session: Session, subagent_ids: list[int], start: date, end: date) -> int:
    if not subagent_ids:
        return 0
    return session.execute(
        select(func.count(distinct(UsageEvent.user_id))).where(
            id_in(session, UsageEvent.subagent_id, subagent_ids),
            UsageEvent.occurred_day >= start,
            UsageEvent.occurred_day <= end,
        )
    ).scalar_one()


def _active_users(
    session: Session, subagent_ids: list[int], start: date, end: date, granularity: str
) -> tuple[dict[date, int], int]:
    """Distinct users per period (a week's actives are not the sum of its days'), and over
    the whole window. Where the periods are read from the events, the window's figure is the
    union of theirs, so it costs no second read."""
    if not subagent_ids:
        return {}, 0
    if granularity == "day" and len(subagent_ids) == 1:
        rows = session.execute(
            select(DailyStats.day, func.sum(DailyStats.active_users))
            .where(
                id_in(session, DailyStats.subagent_id, subagent_ids),
                DailyStats.day >= start,
                DailyStats.day <= end,
            )
            .group_by(DailyStats.day)
        )
        per_day = {day: int(users) for day, users in rows}
        return per_day, _distinct_users(session, subagent_ids, start, end)
    users: dict[date, set] = {}
    for day, user_id in session.execute(
        select(UsageEvent.occurred_day, UsageEvent.user_id)
        .where(
            id_in(session, UsageEvent.subagent_id, subagent_ids),
            UsageEvent.occurred_day >= start,
            UsageEvent.occurred_day <= end,
        )
        .distinct()
    ):
        users.setdefault(period_start(day, granularity), set()).add(user_id)
    everyone = set().union(*users.values())
    return {period: len(members) for period, members in users.items()}, len(everyone)


def usage_stats(
    session: Session, subagent_ids: list[int], start: date, end: date, granularity: str
) -> dict:
    """Series, totals and retention over [start, end] for one or several sub-agents."""
    totals = dict.fromkeys(SUM_FIELDS, 0)
    series: dict[date, dict] = {}
    if subagent_ids:
        # Summed per day in the database: a row per day instead of one per sub-agent and day.
        for day, *sums in session.execute(
            select(DailyStats.day, *(func.sum(getattr(DailyStats, name)) for name in SUM_FIELDS))
            .where(
                id_in(session, DailyStats.subagent_id, subagent_ids),
                DailyStats.day >= start,
                DailyStats.day <= end,
            )
            .group_by(DailyStats.day)
        ):
            bucket = series.setdefault(period_start(day, granularity), dict.fromkeys(SUM_FIELDS, 0))
            for name, value in zip(SUM_FIELDS, sums, strict=True):
                value = int(value)  # PostgreSQL sums a bigint column as numeric
                bucket[name] += value
                totals[name] += value
    active, window_users = _active_users(session, subagent_ids, start, end, granularity)
    points = []
    cursor = period_start(start, granularity)
    step = timedelta(days=7 if granularity == "week" else 1)
    while cursor <= end:
        bucket = series.get(cursor, dict.fromkeys(SUM_FIELDS, 0))
        points.append(
            {"period_start": cursor.isoformat(), "active_users": active.get(cursor, 0), **bucket}
        )
        cursor += step
    cohorts = _retention(session, subagent_ids, start, end, granularity)
    histogram = {name: totals[name] for name in (*rollup.STAR_FIELDS, "thumbs_up", "thumbs_down")}
    return {
        "totals": {
            **{
                k: totals[k]
                for k in ("installs", "uninstalls", "opens", "sessions", "time_spent_ms", "errors")
            },
            "active_users": window_users,
            "error_rate": round(totals["errors"] / totals["opens"], 4) if totals["opens"] else 0.0,
            "ratings": {"count": totals["ratings"], "histogram": histogram},
        },
        "series": points,
        "retention": cohorts,
    }


def _retention(session, subagent_ids, start, end, granularity) -> list[dict]:
    if not subagent_ids:
        return []
    grouped: dict[date, dict] = {}
    for row in session.execute(
        select(RetentionCohort).where(
            id_in(session, RetentionCohort.subagent_id, subagent_ids),
            RetentionCohort.install_day >= start,
            RetentionCohort.install_day <= end,
        )
    ).scalars():
        bucket = grouped.setdefault(
            period_start(row.install_day, granularity),
            {"cohort_size": 0, "day1": 0, "day7": 0, "day30": 0},
        )
        for name in bucket:
            bucket[name] += getattr(row, name)
    today = utcnow().date()
    curves = []
    for period, bucket in sorted(grouped.items()):
        size = bucket["cohort_size"]
        curve = {"cohort_start": period.isoformat(), **bucket}
        for offset in rollup.RETENTION_OFFSETS:
            # A cohort too young to have reached day N has no figure yet, not a zero.
            matured = period + timedelta(days=offset) <= today
            curve[f"day{offset}_rate"] = (
                round(bucket[f"day{offset}"] / size, 4) if size and matured else None
            )
        curves.append(curve)
    return curves


def rating_summary(session: Session, subagent_ids: list[int]) -> dict:
    """The current ratings (one per user and version), all time."""
    stars_count, stars_avg, up, down = 0, None, 0, 0
    if subagent_ids:
        for scale, count, average, positive in session.execute(
            select(
                Feedback.scale, func.count(), func.avg(Feedback.rating), func.sum(Feedback.rating)
            )
            .where(Feedback.subagent_id.in_(subagent_ids))
            .group_by(Feedback.scale)
        ):
            if scale == "stars":
                stars_count, stars_avg = count, round(float(average), 2)
            else:
                up, down = int(positive or 0), count - int(positive or 0)
    return {
        "stars_count": stars_count,
        "stars_average": stars_avg,
        "thumbs_up": up,
        "thumbs_down": down,
        "count": stars_count + up + down,
    }


def descendants(
    session: Session, subagent_ids: list[int], *, visible_to: int | None = None
) -> dict[int, tuple[str, int]]:
    """Every descendant of the given sub-agents: id → (ancestry, author_id). With
    ``visible_to``, only those that person may see listed (their own, and public ones that are
    active or yanked): a count of someone else's private or unlisted forks would tell that
    they exist. The walk still passes through hidden ones to reach what lies below them.

    One recursive query down the parent links (the parent index), so the cost follows the
    number of descendants, not the size of the lineages they sit in: a popular root's
    lineage can hold thousands of sub-agents of which a creator's fork has a handful.
    UNION (not UNION ALL) keeps a node once when it sits below two of the given ones."""
    if not subagent_ids:
        return {}
    columns = (
        SubAgent.id,
        SubAgent.ancestry,
        SubAgent.author_id,
        SubAgent.visibility,
        SubAgent.status,
    )
    # The columns travel in the recursion: joining the result back to the table by id makes
    # PostgreSQL guess thousands of rows and hash the whole table instead.
    below = (
        select(*columns)
        .where(id_in(session, SubAgent.parent_id, subagent_ids))
        .cte("below", recursive=True)
    )
    below = below.union(select(*columns).join(below, SubAgent.parent_id == below.c.id))
    found = select(below.c.id, below.c.ancestry, below.c.author_id)
    if visible_to is not None:
        found = found.where(tree_visible(below.c, visible_to))
    rows = session.execute(found)
    return {node_id: (ancestry, author_id) for node_id, ancestry, author_id in rows}


def lineage_stats(
    session: Session, own_ids: list[int], author_id: int, start: date, end: date, viewer_id: int
) -> dict:
    """Forks of a creator's work, the reach of its lineage and the credit flowing back, over
    the forks the viewer sees in the tree (for the creator, others' private and unlisted ones
    are not counted; for a moderator, nor are the creator's own)."""
    below = descendants(session, own_ids, visible_to=viewer_id)
    others = {node: ancestry for node, (ancestry, author) in below.items() if author != author_id}
    usage = {}
    if below:
        usage = dict(
            session.execute(
                select(UsageEvent.subagent_id, func.count(distinct(UsageEvent.user_id)))
                .where(
                    id_in(session, UsageEvent.subagent_id, list(below)),
                    UsageEvent.occurred_day >= start,
                    UsageEvent.occurred_day <= end,
                )
                .group_by(UsageEvent.subagent_id)
            ).all()
        )
    direct_forks = 0
    if own_ids:
        direct_forks = session.execute(
            select(func.count(SubAgent.id)).where(
                id_in(session, SubAgent.parent_id, own_ids),
                SubAgent.author_id != author_id,
                counted_fork_clause(SubAgent),
            )
        ).scalar_one()
    flows = credit.credit_to_ancestors({n: a for n, (a, _) in below.items()}, usage)
    return {
        "forks_by_others": direct_forks,
        "descendants_by_others": len(others),
        "lineage_reach": _distinct_users(session, list(below), start, end),
        "credit": {str(k): v for k, v in flows.items() if k in set(own_ids)},
        "credit_decay": credit.DECAY,
    }


def per_subagent_summary(session: Session, subagents: list, start: date, end: date) -> list[dict]:
    """One row per sub-agent for a creator's table: window totals and a daily sparkline."""
    ids = [s.id for s in subagents]
    days = (end - start).days + 1
    lines = {s.id: [0] * days for s in subagents}
    totals = {s.id: {"installs": 0, "opens": 0, "errors": 0} for s in subagents}
    if ids:
        for subagent_id, day, active_users, installs, opens, errors in session.execute(
            select(
                DailyStats.subagent_id,
                DailyStats.day,
                DailyStats.active_users,
                DailyStats.installs,
                DailyStats.opens,
                DailyStats.errors,
            ).where(
                id_in(session, DailyStats.subagent_id, ids),
                DailyStats.day >= start,
                DailyStats.day <= end,
            )
        ):
            lines[subagent_id][(day - start).days] = active_users
            row_totals = totals[subagent_id]
            row_totals["installs"] += installs
            row_totals["opens"] += opens
            row_totals["errors"] += errors
    return [
        {
            "id": s.id,
            "title": s.title,
            "visibility": s.visibility,
            "status": s.status,
            "install_count": s.install_count,
            "fork_count": s.fork_count,
            **totals[s.id],
            "daily_active_users": lines[s.id],
        }
        for s in subagents
    ]
