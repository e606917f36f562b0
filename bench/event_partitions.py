"""Event ingestion with 1M and with 100M events already stored, in one run, interleaved.

The event table is partitioned by month (``market.usage.partitions``), so what an ingest
writes (the current month's heap and indexes, the unique (event_id, day) probe) should not
depend on how many older events are kept. This bench checks that claim. It migrates a
throwaway PostgreSQL, loads people and sub-agents, then builds two histories of the same
``--months`` months before the current one, as standalone tables filled server-side with
``INSERT … SELECT generate_series`` (indexed once, after the fill): a small one holding
``--small`` events and a large one holding ``--stored`` events. Each history is attached as
the month partitions in turn (a CHECK constraint per table makes ``ATTACH`` skip its scan, and
the indexes built at the first attach are kept, so a swap takes a moment), and the same
ingest (``market.usage.ingest.ingest_events``, 1,000-event batches with about 5% retried
copies, in-process on one connection) is timed on each in alternating slices: small, large,
small, large … The current month is emptied before every slice, so both sides write into the
same live partition, and a noisy neighbour lands on both sides alike. The ratio reported is
the median of the per-pair ratios (large / small events per second), with its quartiles; a
run whose quartiles lie far apart is called too noisy to judge.

    python bench/event_partitions.py [--quick] [--stored N] [--small N] [--months M]
        [--pairs P] [--batches B] [--keep]

The data is dropped at the end unless --keep. Without SPRIG_TEST_POSTGRES_URL (or
SPRIG_BENCH_DATABASE_URL) it re-runs itself under scripts/test-services.sh. The last line is
JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ingest_harness import (  # noqa: E402
    BATCH,
    DUPLICATE_SHARE,
    EventMaker,
    build_batches,
    code_version,
    database_dsn,
    setup,
)
from bench.servers import database_url_or_rerun_with_servers  # noqa: E402
from market.usage.partitions import month_start, next_month, partition_name  # noqa: E402

# Pair ratios whose interquartile range exceeds this share of their median: other load
# moved the slices more than the claim could be judged by, and the run says so.
NOISY_SPREAD = 0.25
# Large must reach this share of small to count as "no slower" (slices vary by a few %).
NO_SLOWER = 0.9


def history_months(today: date, months: int) -> list[date]:
    first = month_start(today)
    for _ in range(months):
        first = (first - timedelta(days=1)).replace(day=1)
    found, month = [], first
    while month < month_start(today):
        found.append(month)
        month = next_month(month)
    return found


_FILL = """
INSERT INTO {table} (event_id, client_id, user_id, subagent_id, version_id, kind, occurred_at,
    occurred_day, duration_ms, properties, exposure_id, received_at)
SELECT gen_random_uuid(), %(client)s,
    (%(users)s::int[])[1 + (g * 7919) %% %(n_users)s],
    (%(subagents)s::int[])[1 + (g * 104729) %% %(n_targets)s],
    (%(versions)s::int[])[1 + (g * 104729) %% %(n_targets)s],
    (ARRAY['open','open','open','open','open','open','open','open','action','action',
           'action','action','action','action','action','session_end','session_end',
           'session_end','session_end','error'])[1 + g %% 20],
    at, (at AT TIME ZONE 'UTC')::date,
    CASE WHEN g %% 20 BETWEEN 15 AND 18 THEN 1000 + (g * 31) %% 3600000 END,
    '{{}}'::json, NULL, at + interval '1 second'
FROM generate_series(1::bigint, %(rows)s) AS g,
    LATERAL (SELECT %(start)s::timestamptz + (g - 1) * %(step)s * interval '1 microsecond' AS at) t
"""


def build_history(conn, world: dict, prefix: str, months: list[date], total: int) -> int:
    """One standalone table per month holding ``total`` events in all, in time order, with
    the CHECK that lets ATTACH skip its scan, analyzed once. Returns the rows stored."""
    started = time.perf_counter()
    stored = 0
    per_month = total // len(months)
    subagents = [s for s, _ in world["targets"]]
    versions = [v for _, v in world["targets"]]
    for month in months:
        table = f"{prefix}_{partition_name(month)}"
        end = next_month(month)
        # Unlogged: history is only read here, and skipping its WAL fills it faster. Never
        # autovacuumed: it does not change, and a vacuum of millions of rows in the middle
        # of the slices would be noise on one side.
        conn.execute(
            f"CREATE UNLOGGED TABLE {table} (LIKE usage_event INCLUDING DEFAULTS) "
            "WITH (autovacuum_enabled = false)"
        )
        span_us = (end - month).days * 86_400_000_000
        stored += conn.execute(
            _FILL.format(table=table),
            {
                "client": world["client_id"],
                "users": world["users"],
                "n_users": len(world["users"]),
                "subagents": subagents,
                "versions": versions,
                "n_targets": len(subagents),
                "rows": per_month,
                "start": datetime(month.year, month.month, 1, tzinfo=UTC),
                "step": span_us // per_month,
            },
        ).rowcount
        conn.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {table}_in_month "
            f"CHECK (occurred_day >= '{month}' AND occurred_day < '{end}')"
        )
        conn.execute(f"ANALYZE {table}")
        print(f"  {table}: {per_month:,} rows ({time.perf_counter() - started:.0f} s)", flush=True)
    return stored


def attach(conn, prefix: str, months: list[date]) -> None:
    for month in months:
        conn.execute(
            f"ALTER TABLE usage_event ATTACH PARTITION {prefix}_{partition_name(month)} "
            f"FOR VALUES FROM ('{month}') TO ('{next_month(month)}')"
        )


def detach(conn, prefix: str, months: list[date]) -> None:
    for month in months:
        conn.execute(f"ALTER TABLE usage_event DETACH PARTITION {prefix}_{partition_name(month)}")


def ingest_slice(engine, world: dict, bodies: list[bytes]) -> tuple[float, int]:
    """Ingest the batches one after the other; return (events per second, events stored)."""
    from sqlmodel import Session

    from market.usage.ingest import ingest_events

    batches = [json.loads(body)["events"] for body in bodies]
    stored = 0
    started = time.perf_counter()
    with Session(engine) as session:
        for items in batches:
            results = ingest_events(session, world["client_id"], items)
            session.commit()
            stored += sum(1 for r in results if r["status"] == "stored")
    elapsed = time.perf_counter() - started
    return sum(len(b) for b in batches) / elapsed, stored


def measure_slice(conn, engine, world: dict, live: str, batches: int, seed: int):
    """Empty the live month, ingest ``batches`` fresh batches into it, check that every event
    reported stored is there; return (events per second, events stored)."""
    conn.execute(f"TRUNCATE {live}, rollup_dirty")
    maker = EventMaker(seed, world["users"], world["targets"], 3600)
    bodies = [
        body for body, _, _ in build_batches(maker, batches * BATCH, DUPLICATE_SHARE, BATCH)[0]
    ]
    rate, stored = ingest_slice(engine, world, bodies)
    counted = f"SELECT count(*) FROM {live}"  # noqa: S608 - a partition's name
    in_live = conn.execute(counted).fetchone()[0]
    if in_live != stored:
        raise SystemExit(f"{stored} events reported stored, {in_live} in {live}")
    return rate, stored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1M against 10k, 4 short pairs")
    parser.add_argument("--stored", type=int, default=100_000_000)
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--months", type=int, default=24)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--batches", type=int, default=30, help="1,000-event batches a slice")
    parser.add_argument("--keep", action="store_true", help="leave the data in place")
    args = parser.parse_args()
    if args.quick:
        args.stored, args.small, args.pairs, args.batches = 1_000_000, 10_000, 4, 10
    url = database_url_or_rerun_with_servers()

    import psycopg

    from market.platform.db import make_engine

    print(f"code {code_version()}: ingest with {args.small:,} vs {args.stored:,} events stored")
    world = setup(url, n_users=10_000, n_subagents=2_000, seed=1)
    today = datetime.now(UTC).date()
    months = history_months(today, args.months)
    live = partition_name(month_start(today))
    dsn = database_dsn(url)
    engine = make_engine(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        # History is ours: the migration's (empty) partitions for those months go.
        for month in months:
            conn.execute(f"DROP TABLE IF EXISTS {partition_name(month)}")
        print(f"filling {len(months)} months: small history", flush=True)
        started = time.perf_counter()
        counts = {"small": build_history(conn, world, "small", months, args.small)}
        print("large history", flush=True)
        started_large = time.perf_counter()
        counts["large"] = build_history(conn, world, "large", months, args.stored)
        fill_seconds = time.perf_counter() - started_large
        both_fills_seconds = time.perf_counter() - started
        print(f"filled {counts['large']:,} rows in {fill_seconds:.0f} s "
              f"({counts['large'] / fill_seconds:,.0f} rows/s)", flush=True)  # fmt: skip
        # A side's first attach builds its indexes (minutes at 100M): done here, off the
        # clock; then one slice, not counted, warms the pools and caches.
        for side in ("small", "large"):
            index_started = time.perf_counter()
            attach(conn, side, months)
            detach(conn, side, months)
            print(f"{side} history indexed in {time.perf_counter() - index_started:.0f} s")
        # What a stored event costs on disk, heap and every index together: the capacity plan
        # (docs/capacity.md) multiplies it by the events a year brings.
        large_bytes = sum(
            conn.execute(
                "SELECT pg_total_relation_size(%s)", (f"large_{partition_name(m)}",)
            ).fetchone()[0]
            for m in months
        )
        bytes_per_event = large_bytes / counts["large"]
        print(f"large history: {large_bytes / 2**30:.2f} GiB, {bytes_per_event:.0f} bytes/event")
        attach(conn, "small", months)
        attached = "small"
        measure_slice(conn, engine, world, live, args.batches, seed=999)
        sides = {"small": [], "large": []}
        for pair in range(args.pairs):
            # Alternate which side goes first, so neither always runs on a warmer cache.
            for side in ("small", "large") if pair % 2 == 0 else ("large", "small"):
                swap_started = time.perf_counter()
                detach(conn, attached, months)
                attach(conn, side, months)
                attached = side
                swap_seconds = time.perf_counter() - swap_started
                rate, stored = measure_slice(conn, engine, world, live, args.batches, 1000 + pair)
                sides[side].append(rate)
                print(f"  pair {pair + 1} {side:5} ({counts[side]:>13,} stored, swapped in "
                      f"{swap_seconds:.1f} s): {rate:8,.0f} events/s, {stored:,} stored",
                      flush=True)  # fmt: skip
        if not args.keep:
            detach(conn, attached, months)
            for prefix in ("small", "large"):
                for month in months:
                    conn.execute(f"DROP TABLE {prefix}_{partition_name(month)}")
            conn.execute(f"TRUNCATE {live}, rollup_dirty")
    engine.dispose()

    ratios = [large / small for small, large in zip(sides["small"], sides["large"], strict=True)]
    ratio = statistics.median(ratios)
    low, _, high = statistics.quantiles(ratios, n=4)
    noisy = (high - low) / ratio > NOISY_SPREAD
    verdict = "too noisy to judge" if noisy else ("no slower" if ratio >= NO_SLOWER else "SLOWER")
    print()
    print(f"{'stored events':>15} {'median events/s':>16} {'slices':>7}")
    for side in ("small", "large"):
        print(f"{counts[side]:>15,} {statistics.median(sides[side]):>16,.0f} {len(sides[side]):>7}")
    print(f"large/small: median {ratio:.2f} over {len(ratios)} pairs "
          f"(quartiles {low:.2f}–{high:.2f}, min {min(ratios):.2f}, max {max(ratios):.2f}): "
          f"{verdict}")  # fmt: skip
    print(
        json.dumps(
            {
                "bench": "event_partitions",
                "code": code_version(),
                "stored_small": counts["small"],
                "stored_large": counts["large"],
                "months": len(months),
                "events_per_slice": args.batches * BATCH,
                "small_events_per_s": round(statistics.median(sides["small"])),
                "large_events_per_s": round(statistics.median(sides["large"])),
                "ratio_median": round(ratio, 3),
                "ratio_q1": round(low, 3),
                "ratio_q3": round(high, 3),
                "ratio_min": round(min(ratios), 3),
                "ratio_max": round(max(ratios), 3),
                "fill_seconds": round(both_fills_seconds),
                "bytes_per_event": round(bytes_per_event),
                "verdict": verdict,
            }
        )
    )


if __name__ == "__main__":
    main()
