"""POST /recommendations latency at catalog scale, in process, against browse in the same run.

Loads bench/catalog.py's synthetic forest into PostgreSQL (COPY), gives 95% of the sub-agents
a subagent_score row (30% of those young; the rest are unscored, hence young too) and each
user a few installs, then sends requests through the Flask test client (auth, validation,
queries, the Thompson draws, the exposure insert and commit): recommendations by category, by
context text and unfiltered, at k=5 and k=20, and the first page of a category browse as the
baseline. Prints p50/p99 per kind, the ratio of each p50 to the baseline's, the split of a
recommendation into candidate queries and policy draws, and a JSON line last.

    python bench/recommend.py [--quick] [--subagents N] [--requests R]

Without SPRIG_TEST_POSTGRES_URL it re-runs itself under scripts/test-services.sh, which starts
a throwaway PostgreSQL on loopback.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.catalog import CATEGORIES, NOUNS, TOPICS, load_forest  # noqa: E402
from bench.servers import database_url_or_rerun_with_servers  # noqa: E402

STAMP = "2026-01-01T00:00:00Z"


def add_scores_and_installs(url: str, n: int, users: int, seed: int) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    rng = random.Random(seed)
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        with conn.cursor() as cur:
            with cur.copy(
                "COPY subagent_score (subagent_id, quality, quality_sd, display, branch_value, "
                "p_descendant_better, fork_gain, trending, active_users, retention, "
                "usage_score, rating_count, young, run_id, computed_at) FROM STDIN"
            ) as copy:
                for i in range(1, n + 1):
                    if rng.random() < 0.05:
                        continue  # published since the last ranking run
                    young = rng.random() < 0.3
                    quality = rng.gauss(0, 1)
                    sd = rng.uniform(0.4, 1.0) if young else rng.uniform(0.05, 0.3)
                    display = quality - 1.64 * sd
                    ratings = 0 if young else 20
                    copy.write_row(
                        (
                            i,
                            quality,
                            sd,
                            display,
                            quality,
                            0,
                            0,
                            0,
                            0,
                            0,
                            0,
                            ratings,
                            young,
                            1,
                            STAMP,
                        )
                    )
            with cur.copy(
                "COPY install (user_id, subagent_id, version_id, source, granted_scopes, "
                "active, created_at, updated_at) FROM STDIN"
            ) as copy:
                for user in range(1, users + 1):
                    for subagent in rng.sample(range(1, n + 1), 5):
                        copy.write_row(
                            (user, subagent, subagent, "browse", "[]", True, STAMP, STAMP)
                        )
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run, under a minute")
    parser.add_argument("--subagents", type=int, default=None)
    parser.add_argument("--requests", type=int, default=None, help="per kind")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    url = database_url_or_rerun_with_servers()
    n = args.subagents or (20_000 if args.quick else 100_000)
    requests = args.requests or (60 if args.quick else 300)

    forest = load_forest(url, n, args.seed)
    add_scores_and_installs(url, n, forest["users"], args.seed)

    from market.app import create_app
    from market.identity.models import User
    from market.identity.tokens import issue_token
    from market.platform.db import session_scope
    from market.platform.state import app_state
    from market.recommend import services as recommendations

    # One client asks thousands of times: the bench measures serving, not the rate limit.
    app = create_app(
        {
            "database_url": url,
            "read_cache_seconds": 0,
            "secret_key": "bench",
            "rate_limit_recommendations": "",
        }
    )
    engine = app_state(app).engine
    with session_scope(engine) as session:
        agent = User(handle="bench-agent", display_name="Agent", kind="service")
        session.add(agent)
        session.flush()
        headers = {"Authorization": f"Bearer {issue_token(session, agent, ['recommend'])}"}
    client = app.test_client()
    rng = random.Random(args.seed)
    words = sorted({w for topics in TOPICS.values() for w in topics})

    def body(**extra) -> dict:
        return {"user_id": rng.randint(1, forest["users"]), "seed": rng.randrange(2**31), **extra}

    kinds = {
        "browse category (baseline)": lambda: client.get(
            f"/api/v1/subagents?category={rng.choice(CATEGORIES)}&sort=installs&limit=20"
        ),
        "recommend category k=5": lambda: client.post(
            "/api/v1/recommendations", json=body(category=rng.choice(CATEGORIES)), headers=headers
        ),
        "recommend context k=5": lambda: client.post(
            "/api/v1/recommendations",
            json=body(context=f"I want a {rng.choice(words)} {rng.choice(NOUNS)} for my day"),
            headers=headers,
        ),
        "recommend all k=5": lambda: client.post(
            "/api/v1/recommendations", json=body(), headers=headers
        ),
        "recommend category k=20": lambda: client.post(
            "/api/v1/recommendations",
            json=body(category=rng.choice(CATEGORIES), k=20),
            headers=headers,
        ),
    }
    results: dict[str, list[float]] = {}
    pools: list[int] = []
    for name, send in kinds.items():
        for _ in range(10):  # warm the connection pool and the planner's caches
            send()
        latencies = []
        for _ in range(requests):
            started = time.perf_counter()
            response = send()
            latencies.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{name}: {response.status_code} {response.get_data()[:300]}")
            if name.startswith("recommend"):
                pools.append(response.get_json()["candidates"])
        results[name] = latencies

    # Where a recommendation's time goes: the candidate queries, then the policy's draws.
    from sqlmodel import Session

    query_ms, total_ms = [], []
    with Session(engine) as session:
        for _ in range(requests):
            category = rng.choice(CATEGORIES)
            user = rng.randint(1, forest["users"])
            started = time.perf_counter()
            recommendations.candidate_pool(
                session, user, category=category, terms=[], include_owned=False
            )
            query_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            recommendations.recommend(session, user_id=user, k=5, category=category, seed=1)
            total_ms.append((time.perf_counter() - started) * 1000)
            session.rollback()

    baseline = statistics.median(results["browse category (baseline)"])
    print(
        f"\nrecommend bench: {n:,} sub-agents, {forest['users']:,} users, PostgreSQL, in "
        f"process (Flask test client), {requests} requests per kind, median pool "
        f"{statistics.median(pools):.0f} candidates (max {max(pools)})\n"
    )
    header = f"{'request':<28} {'p50 ms':>8} {'p99 ms':>8} {'p50 / baseline':>15}"
    print(header)
    print("-" * len(header))
    figures = {}
    for name, latencies in results.items():
        p50, p99 = statistics.median(latencies), percentile(latencies, 99)
        print(f"{name:<28} {p50:>8.1f} {p99:>8.1f} {p50 / baseline:>15.2f}")
        figures[name] = {
            "p50_ms": round(p50, 2),
            "p99_ms": round(p99, 2),
            "ratio": round(p50 / baseline, 2),
        }
    query_p50, total_p50 = statistics.median(query_ms), statistics.median(total_ms)
    print(
        f"\nrecommend(category, k=5) without HTTP: p50 {total_p50:.1f} ms, of which the "
        f"candidate queries {query_p50:.1f} ms and the policy (draws, rows) "
        f"{total_p50 - query_p50:.1f} ms"
    )
    print(
        json.dumps(
            {
                "bench": "recommend",
                "subagents": n,
                "requests": requests,
                "median_pool": statistics.median(pools),
                "kinds": figures,
                "service_p50_ms": round(total_p50, 2),
                "candidate_query_p50_ms": round(query_p50, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
