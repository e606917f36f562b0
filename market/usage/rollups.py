"""The rollup: daily stats and retention cohorts recomputed from the raw rows, for the
(sub-agent, day) pairs marked dirty by whatever changed them (an event batch, an install, a
rating). Commit once, at the caller's boundary."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import delete, distinct, func, select
from sqlalchemy import insert as generic_insert
from sqlmodel import Session

from feedback import rollup
from market.catalog.models import Install
from market.platform import metrics
from market.platform.db import Lock, pairs_in, try_lock
from market.usage.models import (
    COUNTED_RATING,
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
    started = time.perf_counter()
    if not _rollup_lock(session):
        return {"marks": 0, "days": 0, "cohorts": 0, "skipped": True}
    oldest = select(RollupDirty.id).order_by(RollupDirty.id).limit(max_marks)
    marks = session.execute(
        delete(RollupDirty)
        .where(RollupDirty.id.in_(oldest.scalar_subquery()))
        .returning(RollupDirty.subagent_id, RollupDirty.day)
    ).all()
    if not marks:
        metrics.record_rollup(time.perf_counter() - started, 0)
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
    metrics.record_rollup(time.perf_counter() - started, len(marks))
    return {"marks": len(marks), "days": len(pairs), "cohorts": len(cohort_pairs)}


def _rollup_lock(session: Session) -> bool:
    """One rollup at a time: two would race to rewrite the same days. The PostgreSQL lock is
    released with the transaction; a run that finds it taken yields to the other. SQLite has a
    single writer already."""
    if session.get_bind().dialect.name != "postgresql":
        return True
    return try_lock(session, Lock.ROLLUP)


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
        .where(f.updated_day == day, f.subagent_id.in_(subagent_ids), COUNTED_RATING)
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
            pairs_in(session, RetentionCohort.subagent_id, RetentionCohort.install_day, pairs)
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
