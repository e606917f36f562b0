"""Monthly partitions of the raw event table on PostgreSQL: created ahead, dropped when expired.

Layout. ``usage_event`` is range-partitioned by ``occurred_day`` (the event's own UTC day), one
partition a month (``usage_event_y2026m12``), plus ``usage_event_default`` for a day no
partition covers yet, so an insert never fails for want of one. Monthly, not daily: ingest
only ever writes the current month (events are accepted at most ``MAX_EVENT_AGE`` back), so a
partition's indexes stay the size of one month whatever the table holds; a month is a fine
enough step for retention; and a year is a dozen partitions, not 365 for the planner to weigh
on every query that cannot prune (the ranking's 180-day read would span 180 of them).

Exactly-once across partitions. PostgreSQL allows a unique index on a partitioned table only
if it includes the partition key, so the key is ``(event_id, occurred_day)``. That keeps the
rule "a retried event is stored once" exactly, because the partition key comes from the
event, never from its arrival: a retry is the same event, with the same ``occurred_at``, so
it carries the same ``occurred_day``, goes to the same partition, meets the same unique
index, and ``ON CONFLICT (event_id, occurred_day) DO NOTHING`` skips it (or waits for the
in-flight insert of a concurrent copy, then skips it), whether the retry comes a second or
six days later, after midnight or after the month changed. Partitioning by the receipt time
would have broken this: a retry received after midnight on the last day of a month would land
in the next partition, where no index knows the id. What the key no longer forbids is one id
sent again with a different ``occurred_at``: that is not a retry but a second event under a
reused id, and it is kept as such (a client makes a fresh UUID per event). SQLite keeps its
plain table with ``event_id`` alone as the key.

The BRIN rule holds per partition: ``ix_usage_event_day_brin`` is declared on the parent,
so every partition has its own BRIN on ``occurred_day``, and a month's rows arrive in time
order. The rollup's one-day reads prune to one partition first.

Retention drops whole partitions (no ``DELETE``, no vacuum debt), never the rollups
(``daily_stats``, ``retention_cohort``, ``install_log``). A month goes only when (1) it ended
at least ``SPRIG_EVENT_RETENTION_DAYS`` ago, and (2) no rollup mark still needs it: a mark on
day d recomputes day d and the retention cohorts up to 30 days before d, which read events
back to d - 29, so any mark before the month's end + 30 days keeps it. No new mark can
appear for such a month: an event older than ``MAX_EVENT_AGE`` is rejected at ingest, and the
retention is at least ``MIN_RETENTION_DAYS`` (which also covers the ranking's 180-day window
of raw events). Distinct-user figures over a period older than the retention are then read
from nothing; the per-day figures stay in ``daily_stats``.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from sqlalchemy import text
from sqlmodel import Session

from feedback.ingest import MAX_EVENT_AGE
from feedback.rollup import RETENTION_OFFSETS
from market.platform.db import Lock, wait_for_lock

TABLE = "usage_event"
DEFAULT_PARTITION = "usage_event_default"
# The current month and this many after it always exist (beat checks daily, so a missed
# day or two changes nothing).
MONTHS_AHEAD = 3
# How far back a rollup mark reads raw events (its day's cohorts, up to 30 days earlier).
ROLLUP_READ_BACK = timedelta(days=max(RETENTION_OFFSETS))
# The ranking reads 180 days of raw events (market.ranking.services.USAGE_WINDOW_DAYS), and
# a late event plus its cohorts reach back MAX_EVENT_AGE + 30 days: keep well above both.
MIN_RETENTION_DAYS = 200
# Making or dropping a partition locks the whole table for a moment. Behind a long reader
# (the ranking's 180-day read) that lock would wait, and every ingest would queue behind it:
# give up after this long instead; the task is retried later.
LOCK_TIMEOUT_MS = 3000

_BOUNDS = re.compile(r"FOR VALUES FROM \('(\d{4}-\d{2}-\d{2})'\) TO \('(\d{4}-\d{2}-\d{2})'\)")


def month_start(day: date) -> date:
    return day.replace(day=1)


def next_month(month: date) -> date:
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1)


def partition_name(month: date) -> str:
    return f"{TABLE}_y{month.year:04d}m{month.month:02d}"


_PARTITION_NAME = re.compile(rf"{TABLE}_(?:y\d{{4}}m\d{{2}}|default)")


def is_partition(table_name: str) -> bool:
    """Whether ``table_name`` is one of the event table's partitions: made and dropped by the
    beat tasks here, not by migrations, so the schema check leaves them out."""
    return _PARTITION_NAME.fullmatch(table_name) is not None


def months_to_keep_ready(today: date, months_ahead: int = MONTHS_AHEAD) -> list[date]:
    """First days of the months that must have a partition: every month an event may still be
    accepted for (back to ``MAX_EVENT_AGE``), the current one, and ``months_ahead`` more."""
    month = month_start(today - MAX_EVENT_AGE)
    last = month_start(today)
    for _ in range(months_ahead):
        last = next_month(last)
    months = []
    while month <= last:
        months.append(month)
        month = next_month(month)
    return months


def is_partitioned(session: Session) -> bool:
    if session.get_bind().dialect.name != "postgresql":
        return False
    kind = session.execute(
        text("SELECT relkind FROM pg_class WHERE oid = to_regclass(:name)"), {"name": TABLE}
    ).scalar()
    return kind == "p"


def month_partitions(session: Session) -> dict[date, tuple[str, date]]:
    """Each month partition: its first day → (name, first day after it)."""
    rows = session.execute(
        text(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(:name)"
        ),
        {"name": TABLE},
    )
    found = {}
    for name, bound in rows:
        match = _BOUNDS.fullmatch(bound)
        if match:  # the default partition has no bounds
            found[date.fromisoformat(match[1])] = (name, date.fromisoformat(match[2]))
    return found


def _lock(session: Session) -> None:
    """Two workers (or a worker and a migration) change partitions one at a time; held to the
    end of the transaction. Waiting, not skipping: the second then finds the work done. The
    table locks that follow wait at most ``LOCK_TIMEOUT_MS``."""
    wait_for_lock(session, Lock.PARTITIONS)
    session.execute(text(f"SET LOCAL lock_timeout = {int(LOCK_TIMEOUT_MS)}"))


def create_partitions_ahead(
    session: Session, today: date, months_ahead: int = MONTHS_AHEAD
) -> list[str]:
    """Create the missing month partitions of :func:`months_to_keep_ready`, and of every month
    the default partition holds events of; return their names.

    Idempotent and race-safe: under the partition lock, a month that exists is skipped. Events
    that went to the default partition because their month had none yet are moved into it, so
    the default partition is empty after each run (and cheap to scan at the next). Nothing on
    SQLite (one plain table)."""
    if not is_partitioned(session):
        return []
    _lock(session)
    existing = month_partitions(session)
    stranded = session.execute(
        text(f"SELECT DISTINCT date_trunc('month', occurred_day)::date FROM {DEFAULT_PARTITION}")  # noqa: S608
    ).scalars()
    created = []
    for month in sorted({*months_to_keep_ready(today, months_ahead), *stranded}):
        if month not in existing:
            _create_month(session, month)
            created.append(partition_name(month))
    return created


def _create_month(session: Session, month: date) -> None:
    name, end = partition_name(month), next_month(month)
    bounds = {"start": month, "end": end}
    # PostgreSQL refuses a new partition while the default one holds rows of its range: move
    # them out first, in this transaction, and back in through the parent once it exists.
    session.execute(text(f"CREATE TEMPORARY TABLE usage_event_moving (LIKE {TABLE})"))
    session.execute(
        text(
            f"WITH moved AS (DELETE FROM {DEFAULT_PARTITION} "  # noqa: S608 - constant names
            "WHERE occurred_day >= :start AND occurred_day < :end RETURNING *) "
            "INSERT INTO usage_event_moving SELECT * FROM moved"
        ),
        bounds,
    )
    session.execute(
        text(
            f"CREATE TABLE {name} PARTITION OF {TABLE} "
            f"FOR VALUES FROM ('{month.isoformat()}') TO ('{end.isoformat()}')"
        )
    )
    session.execute(text(f"INSERT INTO {TABLE} SELECT * FROM usage_event_moving"))  # noqa: S608
    session.execute(text("DROP TABLE usage_event_moving"))


def expired_months(
    partitions: dict[date, tuple[str, date]],
    today: date,
    retention_days: int,
    earliest_mark: date | None,
) -> list[date]:
    """The month partitions retention may drop: ended ``retention_days`` ago or more, and no
    rollup mark (the earliest is ``earliest_mark``) reads back into them."""
    cutoff = today - timedelta(days=retention_days)
    expired = []
    for month, (_name, end) in sorted(partitions.items()):
        still_read = earliest_mark is not None and earliest_mark - ROLLUP_READ_BACK < end
        if end <= cutoff and not still_read:
            expired.append(month)
    return expired


def drop_expired_partitions(session: Session, today: date, retention_days: int) -> list[str]:
    """Drop the raw events of every expired month (see the module's docstring); the rollups
    built from them stay. ``retention_days`` 0 keeps everything. Return the dropped names."""
    if retention_days == 0:
        return []
    if retention_days < MIN_RETENTION_DAYS:
        raise ValueError(
            f"SPRIG_EVENT_RETENTION_DAYS must be 0 (keep every event) or at least "
            f"{MIN_RETENTION_DAYS}, not {retention_days}"
        )
    if not is_partitioned(session):
        return []
    _lock(session)
    earliest_mark = session.execute(text("SELECT min(day) FROM rollup_dirty")).scalar()
    partitions = month_partitions(session)
    dropped = []
    for month in expired_months(partitions, today, retention_days, earliest_mark):
        name = partitions[month][0]
        session.execute(text(f"DROP TABLE {name}"))
        dropped.append(name)
    return dropped
