"""The event rollup (``run_rollup``: daily stats and retention cohorts) over R events, against
one SQL aggregate of the same daily figures, same run.

COPYs R events over the last 30 days (in time order) and every sub-agent, with one dirty mark
per (sub-agent, day), into a throwaway PostgreSQL; times ``run_rollup`` and its commit, and
checks daily_stats against SQL. The baseline is a single ``GROUP BY subagent_id, occurred_day``
computing the same five daily figures and writing nothing (nor any cohort): a floor for the
daily part, run after the rollup, on the same warm tables. The last line is JSON.

    python bench/rollup.py [--quick] [--events R] [--seed S]

Without SPRIG_TEST_POSTGRES_URL (or SPRIG_BENCH_DATABASE_URL) it re-runs itself under
scripts/test-services.sh, which starts a throwaway PostgreSQL and Redis on loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ingest_harness import (  # noqa: E402
    EVENT_COLUMNS,
    KIND_TABLE,
    NULL,
    add_world_arguments,
    code_version,
    database_dsn,
    print_load,
    setup,
    take_checks,
    truncate,
)
from bench.servers import database_url_or_rerun_with_servers  # noqa: E402

DAILY_FIGURES = (
    "count(*) FILTER (WHERE kind = 'open'), count(DISTINCT user_id), "
    "count(*) FILTER (WHERE kind = 'session_end'), "
    "coalesce(sum(duration_ms) FILTER (WHERE kind = 'session_end'), 0), "
    "count(*) FILTER (WHERE kind = 'error')"
)


class SqlTimer:
    """Wall time of every SQL statement run through ``engine`` (cursor events, cheap enough to
    leave on), grouped as "VERB table"."""

    def __init__(self, engine):
        self.engine = engine
        self.by_statement: dict[str, list] = {}

    @staticmethod
    def label(statement: str) -> str:
        words = statement.split()
        verb = words[0].upper() if words else "?"
        table = "?"
        for marker in ("FROM", "INTO", "UPDATE"):
            if marker in words:
                table = words[words.index(marker) + 1]
                break
        if verb == "SELECT" and len(words) > 1 and words[1].upper() == "DISTINCT":
            verb = "SELECT DISTINCT"
        return f"{verb} {table.split('(')[0]}"

    def _before(self, conn, cursor, statement, parameters, context, executemany):
        conn.info["bench_sql_started"] = time.perf_counter()

    def _after(self, conn, cursor, statement, parameters, context, executemany):
        seconds = time.perf_counter() - conn.info.pop("bench_sql_started")
        entry = self.by_statement.setdefault(self.label(statement), [0, 0.0])
        entry[0] += 1
        entry[1] += seconds

    @property
    def seconds(self) -> float:
        return sum(s for _, s in self.by_statement.values())

    def __enter__(self):
        from sqlalchemy import event

        event.listen(self.engine, "before_cursor_execute", self._before)
        event.listen(self.engine, "after_cursor_execute", self._after)
        return self

    def __exit__(self, *exc):
        from sqlalchemy import event

        event.remove(self.engine, "before_cursor_execute", self._before)
        event.remove(self.engine, "after_cursor_execute", self._after)

    def top(self, k: int = 6) -> list[dict]:
        ranked = sorted(self.by_statement.items(), key=lambda kv: -kv[1][1])[:k]
        return [{"sql": name, "calls": c, "seconds": round(s, 2)} for name, (c, s) in ranked]


def the_last_30_days() -> list:
    today = datetime.now(UTC).date()
    return [today - timedelta(days=k) for k in range(1, 31)]  # whole days, none in the future


def load_events(url: str, data: dict, r: int, days: list, rng: random.Random) -> float:
    """COPY R events over ``days`` and every sub-agent, one dirty mark per (sub-agent, day);
    then what autovacuum would have done by the time a real rollup runs. The seconds taken."""
    import psycopg

    truncate(url, "usage_event", "rollup_dirty", "daily_stats", "retention_cohort")
    day_text = [d.isoformat() for d in days]
    users, targets, client_id = data["users"], data["targets"], data["client_id"]
    received = datetime.now(UTC).isoformat()
    loaded = time.perf_counter()
    with psycopg.connect(database_dsn(url)) as conn:
        try:  # the rows are valid by construction: skip the foreign-key triggers for the load
            conn.execute("SET session_replication_role = replica")
        except psycopg.Error:  # not a superuser: load with the checks, just slower
            conn.rollback()
        with conn.cursor() as cur:
            with cur.copy(f"COPY usage_event ({EVENT_COLUMNS}) FROM STDIN") as copy:
                lines = []
                # Day by day, oldest first, in time order within the day: the heap is laid out
                # as events arriving over 30 days would leave it.
                for d in reversed(range(30)):
                    per_day = r // 30 + (1 if d < r % 30 else 0)
                    for i in range(per_day):
                        subagent_id, version_id = targets[rng.randrange(len(targets))]
                        kind = KIND_TABLE[rng.randrange(20)]
                        t = i * 86_400 // per_day
                        lines.append(
                            f"{rng.getrandbits(128):032x}\t{client_id}\t"
                            f"{users[rng.randrange(len(users))]}\t{subagent_id}\t{version_id}\t"
                            f"{kind}\t{day_text[d]} {t // 3600:02d}:{t // 60 % 60:02d}:"
                            f"{t % 60:02d}+00\t{day_text[d]}\t"
                            f"{rng.randrange(1000, 3_600_000) if kind == 'session_end' else NULL}"
                            f"\t{{}}\t{NULL}\t{received}\n"
                        )
                        if len(lines) == 10_000:
                            copy.write("".join(lines))
                            lines = []
                if lines:
                    copy.write("".join(lines))
            with cur.copy("COPY rollup_dirty (subagent_id, day) FROM STDIN") as copy:
                for subagent_id in subagent_ids(data):
                    for d in days:
                        copy.write_row((subagent_id, d))
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE usage_event")
        conn.execute("ANALYZE rollup_dirty")
    return time.perf_counter() - loaded


def subagent_ids(data: dict) -> list[int]:
    return sorted({s for s, _ in data["targets"]})


def rollup(url: str, data: dict, r: int, seed: int) -> dict:
    """Load R events (``load_events``), then time ``run_rollup`` (and its commit) and check
    daily_stats against SQL."""
    from sqlmodel import Session

    from market.platform.db import make_engine
    from market.usage.rollups import run_rollup

    rng = random.Random(seed + 11)
    days = the_last_30_days()
    load_seconds = load_events(url, data, r, days, rng)
    engine = make_engine(url)
    with Session(engine) as session, SqlTimer(engine) as sql:
        started = time.perf_counter()
        outcome = run_rollup(session)
        committed = time.perf_counter()
        session.commit()
        seconds = time.perf_counter() - started
        commit_seconds = time.perf_counter() - committed
    engine.dispose()
    return {
        "events": r,
        "seconds": round(seconds, 3),
        "events_per_s": round(r / seconds, 1),
        "load_seconds": round(load_seconds, 1),
        "marks": outcome["marks"],
        "days": outcome["days"],
        "cohorts": outcome["cohorts"],
        "skipped": bool(outcome.get("skipped")),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "sql_seconds": round(sql.seconds, 2),
        "commit_seconds": round(commit_seconds, 2),
        "python_seconds": round(seconds - sql.seconds - commit_seconds, 2),
        "top_sql": sql.top(),
        "checks": {"ran": not outcome.get("skipped"), **check_daily_stats(url, data, days, rng)},
    }


def check_daily_stats(url: str, data: dict, days: list, rng: random.Random) -> dict:
    """daily_stats against the events: a row for every (sub-agent, day) with events, no mark
    left, the opens' total, and three sampled rows figure for figure."""
    import psycopg

    subagents = subagent_ids(data)
    with psycopg.connect(database_dsn(url), autocommit=True) as conn:
        stats_rows = conn.execute("SELECT count(*) FROM daily_stats").fetchone()[0]
        # A pair that drew no event has nothing to report and gets no row.
        pairs_with_events = conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT subagent_id, occurred_day FROM usage_event) p"
        ).fetchone()[0]
        marks_left = conn.execute("SELECT count(*) FROM rollup_dirty").fetchone()[0]
        total = conn.execute("SELECT coalesce(sum(opens), 0) FROM daily_stats").fetchone()[0]
        opens = conn.execute("SELECT count(*) FROM usage_event WHERE kind = 'open'").fetchone()[0]
        samples_ok = []
        for _ in range(3):
            subagent_id, day = rng.choice(subagents), rng.choice(days)
            direct = conn.execute(
                f"SELECT {DAILY_FIGURES} FROM usage_event "  # noqa: S608 - constant SQL
                "WHERE subagent_id = %s AND occurred_day = %s",
                (subagent_id, day),
            ).fetchone()
            rolled = conn.execute(
                "SELECT opens, active_users, sessions, time_spent_ms, errors FROM daily_stats "
                "WHERE subagent_id = %s AND day = %s",
                (subagent_id, day),
            ).fetchone()
            samples_ok.append(tuple(int(v) for v in direct) == tuple(rolled or ()))
    return {
        "every_pair_with_events_has_a_row": stats_rows == pairs_with_events,
        "marks_consumed": marks_left == 0,
        "total_opens_match": int(total) == opens,
        "sampled_rows_match_sql": all(samples_ok),
    }


def group_by_baseline(url: str, r: int) -> dict:
    """The five daily figures of every (sub-agent, day) in one aggregate over the same
    events, counted on the server (no rows fetched, nothing written)."""
    import psycopg

    with psycopg.connect(database_dsn(url), autocommit=True) as conn:
        stats_rows = conn.execute("SELECT count(*) FROM daily_stats").fetchone()[0]
        started = time.perf_counter()
        groups = conn.execute(
            f"SELECT count(*) FROM (SELECT subagent_id, occurred_day, {DAILY_FIGURES} "  # noqa: S608
            "FROM usage_event GROUP BY subagent_id, occurred_day) g"
        ).fetchone()[0]
        seconds = time.perf_counter() - started
    return {
        "events": r,
        "seconds": round(seconds, 3),
        "events_per_s": round(r / seconds, 1),
        "groups": groups,
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "checks": {"as_many_groups_as_daily_stats_rows": groups == stats_rows},
    }


# --------------------------------------------------------------------------- report
def print_report(data: dict, rolled: dict, baseline: dict, code: str) -> list[str]:
    print(
        f"\nrollup bench ({code}): PostgreSQL, {len(data['users']):,} users, "
        f"{len(data['targets']):,} sub-agents, {os.cpu_count()} CPUs; setup "
        f"{data['load_seconds']}s, rollup load {rolled['load_seconds']}s\n"
    )
    header = f"{'phase':<30} {'events':>11} {'seconds':>8} {'events/s':>10} {'vs GROUP BY':>12}"
    print(header)
    print("-" * len(header))
    for name, figures in (("run_rollup (+ commit)", rolled), ("one GROUP BY (baseline)", baseline)):
        vs = figures["events_per_s"] / baseline["events_per_s"]
        print(
            f"{name:<30} {figures['events']:>11,} {figures['seconds']:>8.2f} "
            f"{figures['events_per_s']:>10,.0f} {vs:>12.3f}"
        )
    print()
    print(
        f"rollup: {rolled['days']:,} (sub-agent, day) pairs, {rolled['cohorts']:,} cohort "
        f"pairs in {rolled['seconds']:.1f}s: SQL (incl. psycopg query prep) "
        f"{rolled['sql_seconds']}s, other Python {rolled['python_seconds']}s, commit "
        f"{rolled['commit_seconds']}s; slowest SQL: "
        + ", ".join(f"{t['sql']} {t['seconds']}s/{t['calls']}" for t in rolled["top_sql"][:4])
    )
    print(
        f"baseline: {baseline['groups']:,} groups of the daily figures only (no cohorts, nothing "
        "written), on tables the rollup has just read"
    )
    phases = {"rollup": rolled, "group_by": baseline}
    print_load(phases)
    return take_checks(phases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="R=300k instead of 10M")
    parser.add_argument("--events", type=int, default=None, help="events under the rollup")
    add_world_arguments(parser)
    args = parser.parse_args()
    url = database_url_or_rerun_with_servers()
    r = args.events or (300_000 if args.quick else 10_000_000)
    began = time.perf_counter()
    # test-services.sh stops us with SIGTERM: unwind so the connections are closed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    data = setup(url, args.users, args.subagents, args.seed)
    rolled = rollup(url, data, r, args.seed)
    baseline = group_by_baseline(url, r)
    code = code_version()
    failed = print_report(data, rolled, baseline, code)
    print(f"\ntotal bench time {time.perf_counter() - began:.0f}s")
    summary = {
        "bench": "rollup",
        "code": code,
        "events": r,
        "cpus": os.cpu_count(),
        "rollup": rolled,
        "group_by": baseline,
        "ratio_to_group_by": round(rolled["events_per_s"] / baseline["events_per_s"], 4),
        "checks_passed": not failed,
        "failed_checks": failed,
        "total_seconds": round(time.perf_counter() - began, 1),
    }
    print(json.dumps(summary))
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
