"""Catalog read paths under gunicorn, against a trivial endpoint of the same app, same run.

Loads a synthetic forest of sub-agents into PostgreSQL (COPY), starts gunicorn (2 gthread
workers, as in production), and drives each endpoint with concurrent keep-alive clients:
browse, search, detail, lineage, tree, and `/api/v1/health` as the baseline, in short slices
that alternate with the baseline's (``bench/interleave.py``). Prints req/s, p50, p99, and
each endpoint's throughput as the median of its slice ratios to the baseline, with their
spread and a "too noisy to judge" verdict. Then each endpoint alone, open-loop, requests
arriving at half its own throughput (``--paced-share``): its server p50 and p99 at a stated
load. The last line is JSON.

    python bench/catalog.py [--quick] [--subagents N] [--clients C] [--seconds S]
                            [--slice-seconds S] [--noise-threshold F]
                            [--paced-share S] [--paced-seconds S]

Without SPRIG_TEST_POSTGRES_URL it re-runs itself under scripts/test-services.sh, which starts
a throwaway PostgreSQL on loopback.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import interleave  # noqa: E402
from bench.servers import (  # noqa: E402
    database_url_or_rerun_with_servers,
    live_children,
    memory_mib,
    server_stdout,
)

CATEGORIES = [
    "diet",
    "hydration",
    "fitness",
    "mood",
    "sleep",
    "finance",
    "study",
    "family",
    "hobby",
    "travel",
]
NOUNS = [
    "tracker",
    "planner",
    "diary",
    "log",
    "coach",
    "journal",
    "timer",
    "budget",
    "checklist",
    "reminder",
    "counter",
    "book",
]
TOPICS = {
    "diet": ["calorie", "meal", "protein", "keto", "vegan", "recipe", "snack", "peanut"],
    "hydration": ["water", "tea", "coffee", "electrolyte", "bottle"],
    "fitness": ["workout", "run", "marathon", "yoga", "tennis", "golf", "swim", "strength"],
    "mood": ["mood", "gratitude", "anxiety", "therapy", "feelings"],
    "sleep": ["sleep", "nap", "dream", "bedtime", "insomnia"],
    "finance": ["expense", "savings", "allowance", "grocery", "bills"],
    "study": ["flashcard", "exam", "vocabulary", "reading", "piano", "guitar"],
    "family": ["chores", "homework", "carpool", "birthday", "kids"],
    "hobby": ["wine", "garden", "knitting", "birding", "photo"],
    "travel": ["packing", "itinerary", "moving", "visa", "camping"],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_people(cur, n_users: int, now, services: tuple[tuple[int, str], ...] = ()) -> None:
    """People user1..userN (ids 1..N) and the given (id, handle) services, by COPY."""
    with cur.copy(
        "COPY user_account (id, handle, display_name, kind, role, bio, locale, "
        "share_feedback_for_training, created_at) FROM STDIN"
    ) as copy:
        for u in range(1, n_users + 1):
            copy.write_row((u, f"user{u}", f"User {u}", "person", "user", "", "en-US", False, now))
        for service_id, handle in services:
            copy.write_row((service_id, handle, handle, "service", "user", "", "en-US", False, now))


def load_forest(url: str, n: int, seed: int) -> dict:
    """Migrate and COPY a forest of ``n`` sub-agents: ~2% roots, forks attach preferentially
    to popular nodes so a few lineages grow deep and bushy, as in the field."""
    import psycopg
    from sqlalchemy.engine import make_url

    from market.platform.migrate import upgrade

    engine_url = make_url(url)
    dsn = engine_url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    upgrade(url)

    rng = random.Random(seed)
    now = datetime.now(UTC)
    n_users = max(100, n // 10)
    n_roots = max(10, n // 50)
    parent = [-1] * n
    root = list(range(n))  # each node's root, kept as the forest grows (no walk per row)
    depth = [0] * n
    ancestry = [""] * n
    installs = [0] * n
    weights: list[int] = []
    for i in range(n):
        if i >= n_roots:
            # preferential attachment: pick a node with chance ~ its installs
            p = weights[rng.randrange(len(weights))]
            parent[i] = p
            root[i] = root[p]
            depth[i] = depth[p] + 1
            ancestry[i] = f"{ancestry[p]}/{p + 1}" if ancestry[p] else str(p + 1)
        installs[i] = int(rng.paretovariate(1.2)) - 1
        weights.extend([i] * (1 + min(installs[i], 50)))

    manifest = json.dumps({"name": "x", "entry": "index.html", "scopes": [], "hosts": []})
    started = time.perf_counter()
    with psycopg.connect(dsn) as conn:
        with conn.cursor() as cur:
            copy_people(cur, n_users, now)
            cur.execute(
                "INSERT INTO bundle_blob (sha256, content, size_bytes) VALUES (%s, %s, 0)",
                ("0" * 64, b""),
            )
            # Sub-agents and versions point at each other (the parent version, the latest
            # version): the foreign-key triggers are off while both are copied, as in a restore.
            cur.execute("SET session_replication_role = replica")
            with cur.copy(
                "COPY subagent (id, title, summary, story, category, tags, author_id, "
                "visibility, status, parent_id, parent_version_id, root_id, depth, ancestry, "
                "fork_request_text, latest_version_id, dedupe_key, install_count, "
                "fork_count, created_at, updated_at) FROM STDIN"
            ) as copy:
                fork_counts = [0] * n
                created = [now - timedelta(minutes=n - i) for i in range(n)]
                for i in range(n):
                    if parent[i] >= 0:
                        fork_counts[parent[i]] += 1
                for i in range(n):
                    category = CATEGORIES[root[i] % 10]
                    topic = rng.choice(TOPICS[category])
                    noun = rng.choice(NOUNS)
                    title = f"{topic.title()} {noun.title()}" + (f" v{i}" if parent[i] >= 0 else "")
                    summary = f"A {topic} {noun} for everyday {category} life."
                    story = f"I built this {noun} because {topic} matters to me. " * 3
                    tags = json.dumps([topic, noun])
                    copy.write_row(
                        (
                            i + 1,
                            title,
                            summary,
                            story,
                            category,
                            tags,
                            rng.randint(1, n_users),
                            "public",
                            "active",
                            parent[i] + 1 if parent[i] >= 0 else None,
                            # Made from its parent's only version, whose id is the parent's.
                            parent[i] + 1 if parent[i] >= 0 else None,
                            root[i] + 1,
                            depth[i],
                            ancestry[i],
                            "make it mine" if parent[i] >= 0 else None,
                            i + 1,
                            f"bench:{i}",
                            installs[i],
                            fork_counts[i],
                            created[i],
                            # Last changed when made: a catalog's rows are not all edited in
                            # the same second, and the index's sweep re-reads the last seconds'.
                            created[i],
                        )
                    )
            with cur.copy(
                "COPY subagent_version (id, subagent_id, number, sha256, manifest, "
                "changelog, status, size_bytes, file_count, created_at) FROM STDIN"
            ) as copy:
                for i in range(n):
                    copy.write_row((i + 1, i + 1, 1, "0" * 64, manifest, "", "active", 0, 1, now))
            cur.execute("SET session_replication_role = DEFAULT")
            for table in ("user_account", "subagent", "subagent_version"):
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608
                    f"(SELECT max(id) FROM {table}))"
                )
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
    load_seconds = time.perf_counter() - started
    deep = sorted(range(n), key=lambda i: -depth[i])[:200]
    roots_by_size = sorted(range(n_roots), key=lambda r: -fork_counts[r])[:50]
    return {
        "subagents": n,
        "users": n_users,
        "roots": n_roots,
        "max_depth": max(depth),
        "load_seconds": round(load_seconds, 1),
        "deep_ids": [i + 1 for i in deep],
        "root_ids": [r + 1 for r in roots_by_size],
    }


def catalog_endpoints(forest: dict, n: int, seed: int) -> dict[str, list[str]]:
    """The request paths of each endpoint measured, over a forest of ``n`` from load_forest
    (also driven by bench/observability.py)."""
    rng = random.Random(seed)
    ids = [rng.randint(1, n) for _ in range(2000)]
    words = sorted({w for topics in TOPICS.values() for w in topics} | set(NOUNS))
    return {
        "trivial (health)": ["/api/v1/health"],
        "browse": [
            f"/api/v1/subagents?category={c}&sort={s}&limit=20"
            for c in CATEGORIES
            for s in ("new", "installs")
        ]
        + ["/api/v1/subagents"],
        "search": [f"/api/v1/subagents?q={a}+{b}" for a in words for b in NOUNS][:400]
        + [f"/api/v1/subagents?q={w}" for w in words],
        "detail": [f"/api/v1/subagents/{i}" for i in ids],
        "lineage": [f"/api/v1/subagents/{i}/lineage" for i in forest["deep_ids"] + ids[:200]],
        "tree": [f"/api/v1/subagents/{r}/tree?depth=3" for r in forest["root_ids"]]
        + [f"/api/v1/subagents/{i}/tree?depth=3" for i in ids[:200]],
    }


def startup_allowance(subagents: int) -> float:
    """Seconds to wait for gunicorn to answer: its master builds the search index before it
    forks the workers (about 200 s at a million sub-agents on two busy cores)."""
    return 180 + subagents / 2000


def start_gunicorn(
    url: str,
    port: int,
    workers: int,
    threads: int,
    cache_seconds: int,
    startup_seconds: float = 180,
):
    env = {
        **os.environ,
        "SPRIG_DATABASE_URL": url,
        "SPRIG_SECRET_KEY": "bench",
        "SPRIG_WORKERS": str(workers),
        "SPRIG_THREADS": str(threads),
        "SPRIG_READ_CACHE_SECONDS": str(cache_seconds),
        # One load generator is one client: the benches measure serving, not the rate limits.
        "SPRIG_RATE_LIMIT_SEARCH": "",
        "SPRIG_RATE_LIMIT_SUGGESTIONS": "",
        "SPRIG_RATE_LIMIT_FORK": "",  # bench/pages.py --writes forks from a few accounts
    }
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "-c",
            "python:market.entrypoints.gunicorn_conf",
            "--bind",
            f"127.0.0.1:{port}",
            "market.app:create_app()",
        ],
        cwd=ROOT,
        env=env,
        stdout=server_stdout(),
        stderr=subprocess.PIPE,
    )
    # Ready when a worker answers, not when the master listens: on a busy shared machine the
    # workers' import of the app alone can take 30s, and a bench's first requests would time out.
    # The master builds the suggestion index before it forks them (minutes at 1M sub-agents).
    deadline = time.time() + startup_seconds
    while time.time() < deadline and process.poll() is None:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/api/v1/health")
            status = connection.getresponse().status
            connection.close()
            if status == 200:
                return process
        except (OSError, http.client.HTTPException):
            pass  # not listening yet, or no worker answered in time: ask again
        time.sleep(0.2)
    process.kill()
    raise RuntimeError("gunicorn did not start: " + process.stderr.read().decode()[-2000:])


def stop_gunicorn(process) -> None:
    """Stop gracefully; on a busy machine the workers may not finish in time: then kill."""
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run, under a minute")
    parser.add_argument("--subagents", type=int, default=None)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=None, help="per endpoint")
    parser.add_argument("--seed", type=int, default=1)
    interleave.add_arguments(parser)
    interleave.add_paced_arguments(parser)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker")
    parser.add_argument(
        "--no-read-cache", action="store_true", help="measure every request against the database"
    )
    args = parser.parse_args()
    url = database_url_or_rerun_with_servers()
    n = args.subagents or (20_000 if args.quick else 100_000)
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    slice_seconds = interleave.slice_seconds(args)

    forest = load_forest(url, n, args.seed)
    endpoints = catalog_endpoints(forest, n, args.seed)
    port = free_port()
    cache_seconds = 0 if args.no_read_cache else 30
    started = time.perf_counter()
    server = start_gunicorn(
        url, port, args.workers, args.threads, cache_seconds, startup_seconds=startup_allowance(n)
    )
    ready_seconds = round(time.perf_counter() - started, 1)
    baseline, *measured = endpoints
    rounds = interleave.rounds_for(seconds, slice_seconds)
    try:
        with interleave.SlicedClients("127.0.0.1", port, endpoints, clients=args.clients) as pool:
            runs = interleave.interleave(
                pool.run_slice,
                baseline,
                measured,
                rounds=rounds,
                slice_seconds=slice_seconds,
                threshold=args.noise_threshold,
            )
        paced = interleave.paced_latencies(
            port, endpoints, runs, args, default_seconds=3.0 if args.quick else 10.0
        )
        # After the run: what the master (its index build) and each worker hold, and how
        # much of it they share.
        memory = {
            "master": memory_mib(server.pid),
            "workers": [memory_mib(pid) for pid in live_children(server.pid)],
        }
    finally:
        stop_gunicorn(server)

    print(
        f"\ncatalog bench: {n:,} sub-agents ({forest['roots']:,} roots, max depth "
        f"{forest['max_depth']}), PostgreSQL, gunicorn {args.workers}x{args.threads} gthread, "
        f"read cache {'off' if args.no_read_cache else 'on'}, {args.clients} clients, "
        f"{interleave.describe(rounds, slice_seconds, len(measured))}; loaded in "
        f"{forest['load_seconds']}s\n"
    )
    interleave.print_table(runs)
    if paced:
        interleave.print_paced(paced, args.paced_share)
    workers_rss = ", ".join(f"{w['rss']:,.0f}" for w in memory["workers"])
    workers_pss = ", ".join(f"{w['pss']:,.0f}" for w in memory["workers"])
    together = memory["master"]["pss"] + sum(w["pss"] for w in memory["workers"])
    print(
        f"\nserver ready {ready_seconds}s after start (the master's index build included); "
        f"master RSS {memory['master']['rss']:,.0f} MiB; workers RSS {workers_rss} MiB, PSS "
        f"(shared pages divided among them) {workers_pss} MiB; all together {together:,.0f} MiB"
    )
    figures = {name.split()[0]: run.figures() for name, run in runs.items()}
    for name, open_loop in paced.items():
        figures[name.split()[0]]["paced"] = open_loop
    print(
        json.dumps(
            {
                "bench": "catalog",
                "subagents": n,
                "clients": args.clients,
                "workers": args.workers,
                "threads": args.threads,
                "read_cache": not args.no_read_cache,
                "seconds": seconds,
                "slice_seconds": slice_seconds,
                "rounds": rounds,
                "noise_threshold": args.noise_threshold,
                "noisy": any(run.throughput and run.throughput.noisy for run in runs.values()),
                "endpoints": figures,
                "ready_seconds": ready_seconds,
                "memory_mib": memory,
            }
        )
    )


if __name__ == "__main__":
    main()
