"""Ninety days of believable usage for the demo community, written through the real paths.

``simulate_activity(engine, seed)`` reads the loaded community (people, the fork forest,
versions, installs) and replays a few months of its life: people open the sub-agents they
installed, use them, hit errors, drift away or uninstall, and rate what they used. Every
event goes through :func:`market.usage.ingest.ingest_events` in day-sized batches, as the main
agent would send them at the end of each day; ratings go through ``record_feedback`` (those
of the months before the window first, at their moments), and
uninstalls send an ``uninstall`` event and make the writes of ``DELETE
/subagents/<id>/install`` (the row goes inactive, the install log records it). The creator
stats API then shows what the product really computes, rollups included.

What happens is planned first, purely, in :mod:`market.demo.activity_plan`; this module reads
the community the plan starts from and writes the plan.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import Engine, bindparam, update
from sqlmodel import Session, select

from feedback.ingest import MAX_BATCH_EVENTS
from market.catalog.maintenance import recount_counters
from market.catalog.models import Install, SubAgent, Version
from market.demo.activity_plan import (
    DAY,
    CInstall,
    Community,
    CSubAgent,
    CUser,
    CVersion,
    PlannedEvent,
    PlannedRating,
    PlannedUninstall,
    as_utc,
    day_start,
    plan_activity,
)
from market.identity.models import User
from market.platform.db import UnitOfWork
from market.platform.time import utcnow
from market.usage.ingest import ingest_events, log_installs
from market.usage.ratings import record_feedback
from market.usage.rollups import run_rollup

__all__ = ["read_community", "simulate_activity"]

SERVICE_HANDLE = "main-agent"


def read_community(session: Session) -> Community:
    users = tuple(
        CUser(u.id, u.handle, u.kind, u.locale)
        for u in session.exec(select(User).order_by(User.id))
    )
    service = next((u for u in users if u.handle == SERVICE_HANDLE), None)
    service = service or next((u for u in users if u.kind == "service"), None)
    if service is None:
        raise RuntimeError("the demo has no service user to send events as")
    subagents = tuple(
        CSubAgent(
            s.id, s.author_id, s.parent_id, s.depth, s.category, s.visibility, tuple(s.tags or ())
        )
        for s in session.exec(select(SubAgent).order_by(SubAgent.id))
    )
    versions = tuple(
        CVersion(v.id, v.subagent_id, as_utc(v.created_at))
        for v in session.exec(select(Version).order_by(Version.id))
    )
    installs = tuple(
        CInstall(i.id, i.user_id, i.subagent_id, as_utc(i.created_at))
        for i in session.exec(select(Install).order_by(Install.id))
    )
    return Community(users, subagents, versions, installs, service.id)


# --------------------------------------------------------------------------- writing


def _batches(items: list, size: int = MAX_BATCH_EVENTS):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _payload(event: PlannedEvent) -> dict:
    at, event_id, user_id, subagent_id, version_id, kind, duration_ms, props = event
    item = {
        "event_id": str(event_id),
        "user_id": user_id,
        "subagent_id": subagent_id,
        "version_id": version_id,
        "kind": kind,
        "occurred_at": at.isoformat(),
    }
    if duration_ms is not None:
        item["duration_ms"] = duration_ms
    if props:
        item["properties"] = props
    return item


_UNINSTALL = (
    update(Install.__table__)
    .where(Install.__table__.c.id == bindparam("install_id"), Install.__table__.c.active)
    .values(active=False, updated_at=bindparam("at"))
)
_UNCOUNT = (
    update(SubAgent.__table__)
    .where(SubAgent.__table__.c.id == bindparam("subagent_id"))
    .values(install_count=SubAgent.__table__.c.install_count - bindparam("n"))
)


def _uninstall(session: Session, planned: list[PlannedUninstall]) -> None:
    """What ``DELETE /subagents/<id>/install`` does (row inactive, counter down, install
    log), at the simulated moments; one executemany per statement, not a round trip each."""
    if not planned:
        return
    session.execute(_UNINSTALL, [{"install_id": p.install_id, "at": p.at} for p in planned])
    per_subagent = Counter(p.subagent_id for p in planned)
    session.execute(_UNCOUNT, [{"subagent_id": s, "n": n} for s, n in sorted(per_subagent.items())])
    log_installs(session, [(p.user_id, p.subagent_id, "uninstall", p.at) for p in planned])


# How much of the community's life the demo shows.
DEMO_DAYS = 90
# A line for the person waiting on a load (``market.demo.loader.load_demo``).
Progress = Callable[[str], None]
# How often the writing of the activity reports how far it has got.
PROGRESS_EVERY_DAYS = 15


def no_progress(_line: str) -> None:
    """No progress lines: a load called from code, not by a person waiting at a terminal."""


def simulate_activity(
    engine: Engine,
    seed: int,
    *,
    days: int = DEMO_DAYS,
    now: datetime | None = None,
    progress: Progress = no_progress,
) -> dict[str, int]:
    """Plan ``days`` of usage for the loaded demo community and write it day by day, telling
    ``progress`` every PROGRESS_EVERY_DAYS days (and at the last)."""
    now = as_utc(now) if now is not None else utcnow()
    with UnitOfWork(engine) as unit:
        session = unit.session
        community = read_community(session)
        plan = plan_activity(community, seed, now=now, days=days)
        subagents = {s.id: s for s in session.exec(select(SubAgent))}
        versions = {v.id: v for v in session.exec(select(Version))}
        _uninstall(session, plan.early_uninstalls)
        unit.commit()

        def rate(planned: list[PlannedRating]) -> int:
            """Write ratings in time order; how many were new (the rest changed a rating)."""
            created_count = 0
            for rating in sorted(planned, key=lambda r: (r.at, r.user_id)):
                _, created = record_feedback(
                    session,
                    user_id=rating.user_id,
                    subagent=subagents[rating.subagent_id],
                    version=versions[rating.version_id],
                    scale=rating.scale,
                    rating=rating.rating,
                    comment=rating.comment,
                    tags=list(rating.tags),
                    exposure_id=None,
                    client_id=community.client_id,
                    now=rating.at,
                )
                created_count += created
            return created_count

        ratings = rate(plan.early_ratings)
        changes = len(plan.early_ratings) - ratings
        unit.commit()
        stored = 0
        for offset in range(days):
            day = plan.first_day + timedelta(days=offset)
            # The main agent reports at the end of each day (today: right now).
            sent_at = min(day_start(day) + DAY - timedelta(microseconds=1), now)
            todays = sorted(plan.events.get(day, ()), key=lambda e: (e[0], e[1]))
            for batch in _batches(todays):
                items = [_payload(e) for e in batch]
                results = ingest_events(session, community.client_id, items, now=sent_at)
                problems = Counter(
                    r.get("reason", r["status"]) for r in results if r["status"] != "stored"
                )
                if problems:  # the plan follows every ingestion rule: this is a bug
                    raise RuntimeError(f"demo activity on {day}: not stored {dict(problems)}")
                stored += len(results)
            todays_ratings = plan.ratings.get(day, [])
            created = rate(todays_ratings)
            ratings += created
            changes += len(todays_ratings) - created
            _uninstall(session, plan.uninstalls.get(day, []))
            unit.commit()  # one day's batches, as the agent's 202s would have it
            written = offset + 1
            if written % PROGRESS_EVERY_DAYS == 0 or written == days:
                progress(f"  day {written} of {days}: {stored} events, {ratings} ratings")

        while run_rollup(session)["marks"]:
            unit.commit()
        recount_counters(session)
        unit.commit()
    return {
        "usage events": stored,
        "ratings": ratings,
        "rating changes": changes,
        "uninstalls": plan.uninstall_count(),
        "days of usage": days,
    }
