"""Incremental rollups agree with a brute-force recount, on every backend.

A seeded simulation writes ~40 days of activity through the real write paths (``ingest_events``
with its rollup marks, ``Install`` rows plus ``log_install``, ``record_feedback``), runs
``run_rollup`` in rounds with more (and late) activity in between, and after every round
compares each ``daily_stats`` and ``retention_cohort`` row with ``feedback.rollup.daily_stats``
and ``feedback.rollup.retention`` computed from what the clients did. The raw rows are checked
against that ground truth too, so a disagreement points at the rollup, not at ingestion.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import event as sa_event
from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from sqlmodel import Session

from feedback import rollup
from market.catalog.models import Install, SubAgent, Version
from market.platform.db import make_engine
from market.usage.ingest import ingest_events, log_install
from market.usage.models import (
    DailyStats,
    Feedback,
    InstallLog,
    RetentionCohort,
    RollupDirty,
    UsageEvent,
)
from market.usage.ratings import record_feedback
from market.usage.rollups import run_rollup
from tests.factories import make_user, publish

BASE_DAY = date(2026, 3, 2)  # every time here is explicit: nothing depends on today
STAT_FIELDS = tuple(vars(rollup.DayStats()))


def at(day: date, seconds: int = 12 * 3600) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(seconds=seconds)


@dataclass
class Sim:
    """The seeded world and the ground truth of everything written so far."""

    engine: object
    rng: random.Random
    client_id: int
    users: list[int]
    targets: list[tuple[int, int]]  # (subagent_id, version_id)
    author: object = None  # the Actor who published the targets
    events: dict[uuid.UUID, tuple] = field(default_factory=dict)  # id → (s, u, kind, day, ms)
    first_install: dict[tuple[int, int], date] = field(default_factory=dict)  # (s, u) → day
    installed: set[tuple[int, int]] = field(default_factory=set)  # currently active (s, u)
    install_actions: list[tuple] = field(default_factory=list)  # (s, u, action, day)
    ratings: dict[tuple[int, int], tuple] = field(default_factory=dict)  # (u, v) → (s, sc, r, d)
    duplicates: int = 0

    # ---- writers ----------------------------------------------------------------------

    def emit_day(self, day: date, *, intensity: float = 1.0) -> None:
        """A day's events for random users of every sub-agent, in a few shuffled batches,
        some events sent twice (a client retry), then committed batch by batch."""
        rng = self.rng
        items = []
        for subagent_id, version_id in self.targets:
            active = rng.sample(
                self.users, k=rng.randint(0, max(1, int(len(self.users) * intensity)))
            )
            for user_id in active:
                for _ in range(rng.randint(1, 4)):
                    kind = rng.choices(
                        ("open", "action", "session_end", "error", "uninstall"),
                        weights=(5, 4, 3, 1, 0.3),
                    )[0]
                    body = {
                        "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                        "user_id": user_id,
                        "subagent_id": subagent_id,
                        "version_id": version_id,
                        "kind": kind,
                        "occurred_at": at(day, rng.randrange(86400)).isoformat(),
                    }
                    if kind == "session_end" and rng.random() < 0.9:
                        body["duration_ms"] = rng.randint(0, 3_600_000)
                    items.append(body)
        retried = [dict(item) for item in items if rng.random() < 0.1]
        stream = items + retried
        rng.shuffle(stream)
        now = at(day + timedelta(days=1), 3600)  # phones upload the next morning
        with Session(self.engine) as session:
            for start in range(0, len(stream), 97):
                batch = stream[start : start + 97]
                results = ingest_events(session, self.client_id, batch, now=now)
                session.commit()
                statuses = Counter(r["status"] for r in results)
                assert statuses["rejected"] == 0, results
                self.duplicates += statuses["duplicate"]
        for item in items:
            self.events[uuid.UUID(item["event_id"])] = (
                item["subagent_id"],
                item["user_id"],
                item["kind"],
                day,
                item.get("duration_ms"),
            )

    def install_day(self, day: date) -> None:
        """Random installs, uninstalls and re-installs on ``day`` (the API's write pattern:
        one Install row per user and sub-agent, every action logged)."""
        rng = self.rng
        with Session(self.engine) as session:
            for subagent_id, version_id in self.targets:
                for user_id in self.users:
                    key = (subagent_id, user_id)
                    when = at(day, rng.randrange(86400))
                    roll = rng.random()
                    if key not in self.first_install and roll < 0.12:
                        session.add(
                            Install(
                                user_id=user_id,
                                subagent_id=subagent_id,
                                version_id=version_id,
                                created_at=when,
                                updated_at=when,
                            )
                        )
                        session.flush()
                        log_install(session, user_id, subagent_id, "install", when)
                        self.first_install[key] = day
                        self.installed.add(key)
                        self.install_actions.append((subagent_id, user_id, "install", day))
                    elif key in self.installed and roll < 0.05:
                        row = self._install_row(session, key)
                        row.active, row.updated_at = False, when
                        session.add(row)
                        log_install(session, user_id, subagent_id, "uninstall", when)
                        self.installed.discard(key)
                        self.install_actions.append((subagent_id, user_id, "uninstall", day))
                    elif key in self.first_install and key not in self.installed and roll < 0.3:
                        row = self._install_row(session, key)
                        row.active, row.updated_at = True, when
                        session.add(row)
                        log_install(session, user_id, subagent_id, "install", when)
                        self.installed.add(key)
                        self.install_actions.append((subagent_id, user_id, "install", day))
            session.commit()

    @staticmethod
    def _install_row(session: Session, key: tuple[int, int]) -> Install:
        subagent_id, user_id = key
        return session.execute(
            select(Install).where(Install.subagent_id == subagent_id, Install.user_id == user_id)
        ).scalar_one()

    def rate_day(self, day: date, *, share: float = 0.08) -> None:
        """Random ratings on ``day``; a user who rated before replaces the rating. Each day runs
        in a fresh session, so a replaced rating is read back from the database."""
        rng = self.rng
        with Session(self.engine) as session:
            for subagent_id, version_id in self.targets:
                for user_id in self.users:
                    if rng.random() >= share:
                        continue
                    scale = rng.choice(("stars", "thumbs"))
                    rating = rng.randint(1, 5) if scale == "stars" else rng.randint(0, 1)
                    self.rate(session, user_id, subagent_id, version_id, scale, rating, day)
            session.commit()

    def rate(self, session, user_id, subagent_id, version_id, scale, rating, day) -> None:
        record_feedback(
            session,
            user_id=user_id,
            subagent=session.get(SubAgent, subagent_id),
            version=session.get(Version, version_id),
            scale=scale,
            rating=rating,
            comment=None,
            tags=[],
            exposure_id=None,
            client_id=None,
            now=at(day, self.rng.randrange(86400)),
        )
        self.ratings[(user_id, version_id)] = (subagent_id, scale, rating, day)

    # ---- the brute-force expectation ---------------------------------------------------

    def expected_days(self) -> dict[tuple[int, date], dict]:
        stats = rollup.daily_stats(
            self.events.values(),
            self.install_actions,
            [(s, scale, r, d) for s, scale, r, d in self.ratings.values()],
        )
        return {key: vars(value) for key, value in stats.items() if any(vars(value).values())}

    def expected_cohorts(self) -> dict[tuple[int, date], tuple]:
        active = {(s, u, d) for s, u, _kind, d, _ms in self.events.values()}
        cohorts = rollup.retention(dict(self.first_install), active)
        return {k: (c.cohort_size, c.day1, c.day7, c.day30) for k, c in cohorts.items()}


def rolled_days(engine) -> dict[tuple[int, date], dict]:
    with Session(engine) as session:
        return {
            (row.subagent_id, row.day): {name: getattr(row, name) for name in STAT_FIELDS}
            for row in session.execute(select(DailyStats)).scalars()
        }


def rolled_cohorts(engine) -> dict[tuple[int, date], tuple]:
    with Session(engine) as session:
        return {
            (row.subagent_id, row.install_day): (row.cohort_size, row.day1, row.day7, row.day30)
            for row in session.execute(select(RetentionCohort)).scalars()
        }


def roll(engine) -> dict:
    with Session(engine) as session:
        done = run_rollup(session)
        session.commit()
    return done


def assert_same(actual: dict, expected: dict, what: str) -> None:
    if actual == expected:
        return
    keys = sorted(set(actual) | set(expected))
    diffs = [
        f"{key}: rolled={actual.get(key)} brute={expected.get(key)}"
        for key in keys
        if actual.get(key) != expected.get(key)
    ]
    raise AssertionError(f"{what}: {len(diffs)} rows differ:\n" + "\n".join(diffs[:10]))


def assert_raw_rows_match(sim: Sim) -> None:
    """What ingestion and the feedback/install paths stored is what the clients did."""
    with Session(sim.engine) as session:
        stored = {
            row.event_id: (
                row.subagent_id,
                row.user_id,
                row.kind,
                row.occurred_day,
                row.duration_ms,
            )
            for row in session.execute(select(UsageEvent)).scalars()
        }
        feedback = {
            (row.user_id, row.version_id): (row.subagent_id, row.scale, row.rating, row.updated_day)
            for row in session.execute(select(Feedback)).scalars()
        }
        log = Counter(
            session.execute(
                select(
                    InstallLog.subagent_id, InstallLog.user_id, InstallLog.action, InstallLog.day
                )
            ).all()
        )
    assert stored == sim.events
    assert feedback == sim.ratings
    assert log == Counter(sim.install_actions)


def check(sim: Sim) -> None:
    assert_raw_rows_match(sim)
    assert_same(rolled_days(sim.engine), sim.expected_days(), "daily_stats")
    assert_same(rolled_cohorts(sim.engine), sim.expected_cohorts(), "retention_cohort")


def make_sim(client, engine, seed: int, n_subagents: int | None = None) -> Sim:
    rng = random.Random(seed)
    author = make_user(engine, "author")
    service = make_user(engine, "collector", kind="service", scopes=["events:write"])
    users = [author.id] + [
        make_user(engine, f"user{seed}x{i}").id for i in range(rng.randint(8, 14))
    ]
    targets = []
    for k in range(n_subagents or rng.randint(3, 5)):
        body = publish(client, author, title=f"Agent {seed}-{k}")
        targets.append((body["id"], body["latest_version"]["id"]))
    return Sim(
        engine=engine,
        rng=rng,
        client_id=service.id,
        users=users,
        targets=targets,
        author=author,
    )


# ---- the comparison -----------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_rollups_match_a_brute_force_recount(client, engine, seed):
    sim = make_sim(client, engine, seed)
    days = [BASE_DAY + timedelta(days=k) for k in range(41)]

    # round 1: the first 25 days
    for day in days[:25]:
        sim.install_day(day)
        sim.emit_day(day)
        sim.rate_day(day)
    first = roll(engine)
    assert first["marks"] > 0 and first.get("skipped") is None
    check(sim)

    # round 2: the rest, late uploads for old days, replaced ratings, and another pass of
    # installs on days already rolled up
    for day in days[25:]:
        sim.install_day(day)
        sim.emit_day(day)
        sim.rate_day(day)
    for day in sim.rng.sample(days[:25], 6):
        sim.emit_day(day, intensity=0.3)
    for (user_id, version_id), (subagent_id, *_rest) in list(sim.ratings.items()):
        if sim.rng.random() < 0.4:
            with Session(engine) as session:
                scale = sim.rng.choice(("stars", "thumbs"))
                rating = sim.rng.randint(1, 5) if scale == "stars" else sim.rng.randint(0, 1)
                sim.rate(session, user_id, subagent_id, version_id, scale, rating, days[-1])
                session.commit()
    second = roll(engine)
    assert second["marks"] > 0
    check(sim)
    assert sim.duplicates > 0  # retries happened and did not count twice

    # round 3: nothing dirty, nothing changes
    before = (rolled_days(engine), rolled_cohorts(engine))
    assert roll(engine) == {"marks": 0, "days": 0, "cohorts": 0}
    assert (rolled_days(engine), rolled_cohorts(engine)) == before

    # every figure the simulation can produce was exercised
    totals = Counter()
    for row in before[0].values():
        totals.update({k: v for k, v in row.items() if v})
    assert set(totals) == set(STAT_FIELDS), set(STAT_FIELDS) - set(totals)
    assert any(c[1] for c in before[1].values()) and any(c[2] for c in before[1].values())


def test_marks_written_while_a_rollup_runs_are_kept_for_the_next_run(client, engine, backend):
    if backend != "postgresql":
        pytest.skip("SQLite serializes writers: nothing commits while a rollup runs")
    sim = make_sim(client, engine, seed=7, n_subagents=3)
    for day in (BASE_DAY, BASE_DAY + timedelta(days=1)):
        sim.install_day(day)
        sim.emit_day(day)
        sim.rate_day(day, share=0.3)
    late_day = BASE_DAY + timedelta(days=3)  # not dirty when the rollup reads its marks
    fired = []

    def write_meanwhile(conn, cursor, statement, parameters, context, executemany):
        if fired or "rollup_dirty" not in statement or not statement.lstrip().startswith("DELETE"):
            return
        fired.append(statement)
        # another writer commits new events (and so new marks) right after the rollup took
        # its marks: one pair it is rolling up, one it is not
        sim.emit_day(late_day, intensity=0.5)
        sim.emit_day(BASE_DAY, intensity=0.3)

    before = set(sim.events)
    sa_event.listen(engine, "after_cursor_execute", write_meanwhile)
    try:
        first = roll(engine)
    finally:
        sa_event.remove(engine, "after_cursor_execute", write_meanwhile)
    assert fired and first["marks"] > 0
    meanwhile = {(sim.events[i][0], sim.events[i][3]) for i in set(sim.events) - before}
    assert any(d == late_day for _s, d in meanwhile) and any(d == BASE_DAY for _s, d in meanwhile)
    with Session(engine) as session:
        pending = set(session.execute(select(RollupDirty.subagent_id, RollupDirty.day)).all())
        pending_rows = session.execute(select(func.count()).select_from(RollupDirty)).scalar_one()
    # committed after the rollup read its marks: none of them was deleted with the others
    assert meanwhile <= pending
    assert not any(d == late_day for _s, d in rolled_days(engine))
    assert roll(engine)["marks"] == pending_rows
    check(sim)
    with Session(engine) as session:
        assert session.execute(select(func.count()).select_from(RollupDirty)).scalar_one() == 0


# ---- regressions: each was a bug these tests found ------------------------------


def test_a_busy_day_may_add_up_to_more_than_2_31_milliseconds(client, engine, backend, request):
    sim = make_sim(client, engine, seed=11, n_subagents=1)
    subagent_id, version_id = sim.targets[0]
    day = BASE_DAY
    items = [
        {
            "event_id": str(uuid.uuid4()),
            "user_id": sim.users[k % len(sim.users)],
            "subagent_id": subagent_id,
            "version_id": version_id,
            "kind": "session_end",
            "occurred_at": at(day, k).isoformat(),
            "duration_ms": 24 * 3600 * 1000,  # the largest a session may last
        }
        for k in range(30)
    ]
    with Session(engine) as session:
        assert {
            r["status"] for r in ingest_events(session, sim.client_id, items, now=at(day, 7200))
        } == {"stored"}
        session.commit()
    roll(engine)
    assert rolled_days(engine)[(subagent_id, day)]["time_spent_ms"] == 30 * 24 * 3600 * 1000


def test_replacing_a_rating_clears_its_old_day_whatever_the_server_time_zone(
    client, engine, backend, database_url
):
    if backend != "postgresql":
        pytest.skip("only PostgreSQL hands back timestamps in a session time zone")
    # a server (or role, or database) whose TimeZone is not UTC: psycopg then returns
    # timestamptz values in that zone
    url = make_url(database_url).update_query_dict({"options": "-c TimeZone=Pacific/Kiritimati"})
    east = make_engine(url.render_as_string(hide_password=False))
    try:
        sim = make_sim(client, engine, seed=13, n_subagents=1)
        subagent_id, version_id = sim.targets[0]
        user_id = sim.users[1]
        first_day, later_day = BASE_DAY, BASE_DAY + timedelta(days=2)
        with Session(east) as session:
            record_feedback(
                session,
                user_id=user_id,
                subagent=session.get(SubAgent, subagent_id),
                version=session.get(Version, version_id),
                scale="stars",
                rating=2,
                comment=None,
                tags=[],
                exposure_id=None,
                client_id=None,
                now=at(first_day, 15 * 3600),  # 15:00 UTC is already tomorrow at UTC+14
            )
            session.commit()
        roll(east)
        assert rolled_days(east)[(subagent_id, first_day)]["ratings"] == 1
        with Session(east) as session:  # a later request: the rating is read back
            record_feedback(
                session,
                user_id=user_id,
                subagent=session.get(SubAgent, subagent_id),
                version=session.get(Version, version_id),
                scale="stars",
                rating=5,
                comment=None,
                tags=[],
                exposure_id=None,
                client_id=None,
                now=at(later_day),
            )
            session.commit()
        roll(east)
        days = rolled_days(east)
        assert days[(subagent_id, later_day)]["stars_5"] == 1
        assert (subagent_id, first_day) not in days, days[(subagent_id, first_day)]
    finally:
        east.dispose()


def test_two_rollups_at_once_do_not_collide(client, engine, backend):
    """The advisory lock makes a second concurrent rollup yield (PostgreSQL)."""
    if backend != "postgresql":
        pytest.skip("SQLite serializes writers itself")
    sim = make_sim(client, engine, seed=17, n_subagents=2)
    sim.emit_day(BASE_DAY)
    with Session(engine) as first, Session(engine) as second:
        done = run_rollup(first)  # holds its transaction (and lock) open
        assert done["marks"] > 0
        assert run_rollup(second) == {"marks": 0, "days": 0, "cohorts": 0, "skipped": True}
        second.rollback()
        first.commit()
    check(sim)


def test_a_stats_request_rollup_excludes_other_rollups(app, client, engine, backend):
    """GET …/stats brings rollups up to date first (embedded default); it must hold the
    rollup lock for its whole run, so a Celery beat rollup meanwhile yields instead of
    colliding on daily_stats' primary key. (It once ran on the autocommit read engine, where
    the transaction-scoped lock was released as soon as it was taken.)"""
    if backend != "postgresql":
        pytest.skip("SQLite serializes writers itself")
    sim = make_sim(client, engine, seed=19, n_subagents=2)
    sim.emit_day(BASE_DAY)
    author = sim.author
    paused, resume = threading.Event(), threading.Event()
    outcome: dict = {}

    def hold_before_insert(conn, cursor, statement, parameters, context, executemany):
        if statement.startswith("INSERT INTO daily_stats") and not paused.is_set():
            paused.set()
            resume.wait(10)

    def stats_request():
        try:
            response = client.get(
                f"/api/v1/subagents/{sim.targets[0][0]}/stats?from={BASE_DAY.isoformat()}",
                headers=author.headers,
            )
            outcome["status"] = response.status_code
        except Exception as error:  # reported below
            outcome["error"] = error

    sa_event.listen(engine, "before_cursor_execute", hold_before_insert)
    worker = threading.Thread(target=stats_request)
    try:
        worker.start()
        assert paused.wait(10), "the stats request's rollup never reached its insert"
        outcome["beat"] = roll(engine)  # the Celery beat rollup, meanwhile
    finally:
        resume.set()
        worker.join(20)
        sa_event.remove(engine, "before_cursor_execute", hold_before_insert)
    assert outcome.get("status") == 200, outcome
    assert "error" not in outcome, repr(outcome.get("error"))[:300]
    assert outcome["beat"].get("skipped")
    check(sim)
