"""Where the time of ``POST /api/v1/events`` goes: cProfile over the real endpoint in-process
(Flask test client, the same PostgreSQL and Redis), attributed to the stages of the path, beside
the same number of batches timed without the profiler in the same run.

    python bench/ingest_profile.py [--quick] [--batches B] [--seed S]

``bench/ingest.py`` runs this too when end to end misses its target. Without
SPRIG_TEST_POSTGRES_URL (or SPRIG_BENCH_DATABASE_URL) it re-runs itself under
scripts/test-services.sh. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ingest_harness import (  # noqa: E402
    BATCH,
    DUPLICATE_SHARE,
    PATH,
    EventMaker,
    add_world_arguments,
    build_batches,
    code_version,
    setup,
    truncate,
)
from bench.servers import database_url_or_rerun_with_servers  # noqa: E402


def profile_ingest(url: str, data: dict, batches: int, seed: int) -> dict:
    """cProfile the real endpoint in-process (Flask test client, same database) over
    ``batches`` batches and attribute the time to the stages of the path. Stages are found by
    function name, so the breakdown follows the service code as it changes; a stage the
    current code does not have shows as 0."""
    import cProfile
    import pstats

    from market.app import create_app

    truncate(url, "usage_event", "rollup_dirty")
    settings = {"database_url": url, "rate_limit_events": f"{10**9}/60", "read_cache_seconds": 0}
    redis_url = os.environ.get("SPRIG_BENCH_REDIS_URL") or os.environ.get("SPRIG_TEST_REDIS_URL")
    if redis_url:
        settings["redis_url"] = redis_url
    app = create_app(settings)
    client = app.test_client()
    headers = {"Authorization": f"Bearer {data['token']}", "Content-Type": "application/json"}
    maker = EventMaker(seed + 13, data["users"], data["targets"], 86_400)
    bodies, _ = build_batches(maker, (2 * batches + 5) * 950, DUPLICATE_SHARE, BATCH)
    for body, _, _ in bodies[:5]:  # warm: pools, statement caches
        assert client.post(PATH, data=body, headers=headers).status_code == 202
    plain, profiled = bodies[5 : 5 + batches], bodies[5 + batches : 5 + 2 * batches]

    started = time.perf_counter()
    for body, _, _ in plain:
        assert client.post(PATH, data=body, headers=headers).status_code == 202
    plain_ms = (time.perf_counter() - started) / len(plain) * 1000

    profiler = cProfile.Profile()
    profiler.enable()
    for body, _, _ in profiled:
        assert client.post(PATH, data=body, headers=headers).status_code == 202
    profiler.disable()
    table = pstats.Stats(profiler).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}
    total = sum(v[2] for v in table.values())

    def cum(where: str) -> float:
        path, name = where.split(":")
        return sum(v[3] for (f, _, fn), v in table.items() if fn == name and f.endswith(path))

    def under(outer: str, inner: str, direct: bool = False) -> float:
        return inside(table, *outer.split(":"), *inner.split(":"), direct=direct)

    ingest_module = "market/usage/ingest.py"
    ingest = cum(f"{ingest_module}:ingest_events")
    parse = cum("feedback/ingest.py:parse_batch")
    store = sum(
        cum(f"{ingest_module}:{name}")
        for name in ("_store_postgres", "_store_checked", "_store_copy", "_store")
    )
    references = cum(f"{ingest_module}:_references")
    if not store:  # the first version: references, INSERT and marks straight from ingest_events
        store = cum(f"{ingest_module}:_insert_events") + cum("market/usage/rollups.py:mark_dirty")
        references = cum(f"{ingest_module}:_references")
    stages = {
        "HTTP body -> JSON (orjson.loads)": cum("~:<orjson.loads>"),
        "pydantic EventBatchRead (parse_model)": cum("market/platform/api_deps.py:parse_model"),
        "validation: feedback/ingest.parse_batch": parse,
        "store (SQL build + execute + marks)": store,
        "  of which orjson.dumps of the payload": under(
            f"{ingest_module}:_store_postgres", "~:<orjson.dumps>", direct=True
        ),
        "  of which SQLAlchemy compile": under(
            f"{ingest_module}:ingest_events", "sqlalchemy/sql/elements.py:_compiler"
        ),
        "  of which psycopg execute (DB time)": under(
            f"{ingest_module}:ingest_events", "psycopg/cursor.py:execute"
        )
        + under(f"{ingest_module}:ingest_events", "psycopg/cursor.py:executemany")
        + under(f"{ingest_module}:ingest_events", "psycopg/cursor.py:copy"),
        "reference checks (_references)": references,
        "result dicts (rest of ingest_events)": max(0.0, ingest - parse - store - references),
        "token lookup (caller)": cum("market/identity/tokens.py:caller"),
        "rate limiter (Redis)": cum("market/platform/ratelimit.py:spend"),
        "commit": cum("market/platform/api_deps.py:commit"),
        "response JSON (orjson.dumps in the view)": under(
            "market/usage/api.py:post_events", "~:<orjson.dumps>", direct=True
        ),
    }
    view = cum("market/usage/api.py:post_events")
    stages["Flask/Werkzeug around the view"] = max(0.0, total - view)
    top = sorted(table.items(), key=lambda kv: -kv[1][2])[:10]
    n = len(profiled)
    return {
        "batches": n,
        "ms_per_batch_unprofiled": round(plain_ms, 2),
        "profiled_ms_per_batch": round(total / n * 1000, 2),
        "stages_ms_per_batch": {k: round(v / n * 1000, 2) for k, v in stages.items()},
        "top_self_time": [
            {
                "function": f"{Path(f).parent.name}/{Path(f).name}:{fn}",
                "ms_per_batch": round(v[2] / n * 1000, 2),
                "calls_per_batch": round(v[1] / n),
            }
            for (f, _, fn), v in top
        ],
    }


def inside(
    table, outer_path: str, outer: str, inner_path: str, inner: str, direct: bool = False
) -> float:
    """Cumulative time of ``inner`` on call paths that start in ``outer`` (walks callers), or
    only where ``outer`` calls it ``direct``-ly."""
    memo: dict = {}

    def reaches(key, depth=0) -> bool:
        if key in memo:
            return memo[key]
        memo[key] = False
        f, _, fn = key
        if fn == outer and f.endswith(outer_path):
            memo[key] = True
            return True
        if direct or depth > 40 or key not in table:
            return False
        memo[key] = any(reaches(caller, depth + 1) for caller in table[key][4])
        return memo[key]

    seconds = 0.0
    for key, v in table.items():
        f, _, fn = key
        if fn == inner and f.endswith(inner_path):
            for caller, cv in v[4].items():
                if reaches(caller):
                    seconds += cv[3]
    return seconds


def print_profile(profile: dict) -> None:
    print(
        f"\nprofile of POST {PATH} in-process (Flask test client, {profile['batches']} "
        f"batches of {BATCH}): {profile['ms_per_batch_unprofiled']} ms/batch unprofiled, "
        f"{profile['profiled_ms_per_batch']} ms/batch under cProfile"
    )
    for label, ms in profile["stages_ms_per_batch"].items():
        share = ms / profile["profiled_ms_per_batch"] if profile["profiled_ms_per_batch"] else 0
        print(f"  {label:<44} {ms:>8.2f} ms  {share:>5.0%}")
    print("  top self time:")
    for item in profile["top_self_time"]:
        print(
            f"    {item['function']:<58} {item['ms_per_batch']:>7.2f} ms "
            f"{item['calls_per_batch']:>7} calls"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 batches instead of 40")
    parser.add_argument("--batches", type=int, default=None, help="batches timed each way")
    add_world_arguments(parser)
    args = parser.parse_args()
    url = database_url_or_rerun_with_servers()
    batches = args.batches or (20 if args.quick else 40)
    began = time.perf_counter()
    data = setup(url, args.users, args.subagents, args.seed)
    profile = profile_ingest(url, data, batches, args.seed)
    code = code_version()
    print(f"\ningest profile ({code}): PostgreSQL, {os.cpu_count()} CPUs")
    print_profile(profile)
    print(f"\ntotal bench time {time.perf_counter() - began:.0f}s")
    print(json.dumps({"bench": "ingest_profile", "code": code, "profile": profile}))


if __name__ == "__main__":
    main()
