"""How long a gunicorn master takes to serve: the suggestion index built from the catalog,
against the same index read back from its snapshot on disk, same data, same run.

Loads the catalog bench's synthetic forest into PostgreSQL (COPY), then:

1. in this process, alternately, ``rounds`` times each: the master's build from the database
   (``IndexBuild.read``) and the snapshot read back (``IndexBuild.load``, its checks
   included); the first build writes the snapshot (its time and size reported). Both results
   are compared array by array and on a set of searches;
2. the catch-up of the loaded build (what the master reads before it forks), with nothing
   changed since, and with 1% of the catalog's listings edited since;
3. end to end, gunicorn (2 workers) started four times on the same database: with no
   snapshot (the master builds and writes it); again (the master reads it back); after 1% of
   the listings were edited (the master reads it back, catches it up once for its workers and
   writes it back); and again (from that). Each start reports "ready", the time from start
   until a worker answers, and "searched", until both workers have answered a search (a
   worker answers none before its index has caught up), and the PSS of master and workers
   together once they have.

Prints a table and, last, one JSON line. Times are medians; the ratio is load / build of the
same round's pair.

    python bench/index_snapshot.py [--quick] [--subagents N] [--rounds R] [--no-gunicorn]
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.catalog import free_port, load_forest, start_gunicorn, stop_gunicorn  # noqa: E402
from bench.servers import (  # noqa: E402
    database_url_or_rerun_with_servers,
    live_children,
    memory_mib,
)

QUERIES = ["water tracker", "sleep diary", "budget planner", "yoga coach", "喝水", "家計簿"]


def ranked(index, query: str) -> list[tuple[int, float]]:
    return [(m.subagent_id, round(m.relevance, 9)) for m in index.search(query, limit=50)]


def same_build(first, second) -> bool:
    import numpy as np

    a, b = first.index.to_arrays(), second.index.to_arrays()
    arrays_equal = a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a
    )
    marks_equal = (first.watermark, first.version_mark, first.versions_seen) == (
        second.watermark,
        second.version_mark,
        second.versions_seen,
    )
    answers_equal = all(ranked(first.index, q) == ranked(second.index, q) for q in QUERIES)
    return arrays_equal and marks_equal and answers_equal and first.indexed_at == second.indexed_at


def edit_listings(url: str, share: float) -> int:
    """Edit the summary of ``share`` of the sub-agents (every k-th id), as listing edits
    between two restarts would: ``updated_at`` moves, so a catch-up re-reads them."""
    import psycopg
    from sqlalchemy.engine import make_url

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    step = max(1, round(1 / share))
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            "UPDATE subagent SET summary = summary || ' (edited)', updated_at = now()"
            " WHERE id %% %s = 0",
            (step,),
        ).rowcount


def in_process(url: str, directory: str, rounds: int) -> dict:
    from sqlmodel import Session

    from market.platform.db import make_engine
    from market.suggestions import services, snapshot
    from market.suggestions.services import IndexBuild, SuggestionService

    engine = make_engine(url)
    path = snapshot.snapshot_path(directory, services._database_of(engine))
    builds, loads, equal = [], [], True
    with Session(engine) as session:
        identity = snapshot.database_identity(session)
        for round_number in range(rounds):
            started = time.perf_counter()
            built = IndexBuild.read(session)
            builds.append(time.perf_counter() - started)
            if round_number == 0:
                started = time.perf_counter()
                built.save(path, identity)
                write_seconds = time.perf_counter() - started
            started = time.perf_counter()
            loaded = IndexBuild.load(path, session, identity, max_age_seconds=86_400)
            loads.append(time.perf_counter() - started)
            equal = equal and loaded is not None and same_build(built, loaded)
            del built, loaded

    def catch_up_seconds() -> tuple[float, int]:
        built = None
        with Session(engine) as session:
            identity = snapshot.database_identity(session)
            built = IndexBuild.load(path, session, identity, max_age_seconds=86_400)
        service = SuggestionService(engine)
        service.adopt(built)  # as the master does (services._caught_up)
        started = time.perf_counter()
        with Session(engine) as session:
            changed = service.catch_up(session)
        return time.perf_counter() - started, changed

    unchanged, _ = catch_up_seconds()
    edited = edit_listings(url, 0.01)
    after_edits, reread = catch_up_seconds()
    engine.dispose()
    return {
        "build_seconds": builds,
        "load_seconds": loads,
        "ratios": [load / build for load, build in zip(loads, builds, strict=True)],
        "write_seconds": write_seconds,
        "snapshot_mib": path.stat().st_size / 2**20,
        "equal": equal,
        "catch_up_unchanged_seconds": unchanged,
        "catch_up_edited_seconds": after_edits,
        "edited": edited,
        "reread": reread,
    }


def searched_by_every_worker(port: int, log: Path, workers: int, deadline: float) -> None:
    """Search (a new connection each time, so either worker may take it) until ``workers``
    distinct processes have answered one, as the server's access lines in ``log`` say."""
    answered: set[int] = set()
    read = 0  # lines of the log already looked at
    while len(answered) < workers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"searches answered by {len(answered)} of {workers} workers")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        connection.request("GET", "/api/v1/subagents?q=water+tracker&limit=5")
        connection.getresponse().read()
        connection.close()
        text = log.read_text(errors="replace")
        lines = text[: text.rfind("\n") + 1].splitlines()  # whole lines only
        lines, read = lines[read:], len(lines)
        for line in lines:
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("route") == "/api/v1/subagents" and record.get("status") == 200:
                    answered.add(record["process"])


def gunicorn_starts(url: str, directory: str, subagents: int) -> dict:
    os.environ["SPRIG_INDEX_SNAPSHOT_DIR"] = directory
    starts = {}
    edited = 0
    for name in (
        "no snapshot (build, then write)",
        "from the snapshot",
        "from the snapshot, 1% edited since",
        "from the snapshot written back",
    ):
        if "edited" in name:
            edited = edit_listings(url, 0.01)
        log = Path(directory) / f"start-{len(starts)}.log"
        os.environ["SPRIG_BENCH_STDOUT"] = str(log)  # the server's log lines, to read back
        started = time.perf_counter()
        port = free_port()
        allowance = 180 + subagents / 2000
        server = start_gunicorn(url, port, 2, 8, 0, startup_seconds=allowance)
        ready = time.perf_counter() - started
        searched_by_every_worker(port, log, 2, time.monotonic() + allowance)
        searched = time.perf_counter() - started
        pss = sum(memory_mib(pid)["pss"] for pid in [server.pid, *live_children(server.pid)])
        stop_gunicorn(server)
        starts[name] = {"ready": ready, "searched": searched, "pss_mib": pss}
    return {"starts": starts, "edited": edited}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 sub-agents, 2 rounds")
    parser.add_argument("--subagents", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-gunicorn", action="store_true", help="skip the end-to-end starts")
    parser.add_argument("--no-in-process", action="store_true", help="only the end-to-end starts")
    args = parser.parse_args()
    # The builds', snapshots' and refusals' own lines ("snapshot not used: ..."), as they go.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    url = database_url_or_rerun_with_servers()
    n = args.subagents or (100_000 if args.quick else 1_000_000)
    rounds = args.rounds or (2 if args.quick else 3)

    forest = load_forest(url, n, args.seed)
    figures = {}
    if not args.no_in_process:
        with tempfile.TemporaryDirectory(prefix="sprig-index-") as directory:
            figures = in_process(url, directory, rounds)
    gunicorn = {"starts": {}, "edited": 0}
    if not args.no_gunicorn:
        if figures:
            forest = load_forest(url, n, args.seed)  # the edits undone: the same catalog
        with tempfile.TemporaryDirectory(prefix="sprig-index-") as directory:
            gunicorn = gunicorn_starts(url, directory, n)

    median = statistics.median
    print(
        f"\nindex snapshot bench: {n:,} sub-agents ({forest['roots']:,} roots), PostgreSQL, "
        f"{rounds} alternated rounds in process; loaded in {forest['load_seconds']}s\n"
    )
    summary = {}
    if figures:
        rows = [
            ("build from the database (median)", median(figures["build_seconds"])),
            ("read back from the snapshot (median)", median(figures["load_seconds"])),
            ("snapshot written once", figures["write_seconds"]),
            ("catch-up, nothing changed", figures["catch_up_unchanged_seconds"]),
            (
                f"catch-up, {figures['edited']:,} listings edited",
                figures["catch_up_edited_seconds"],
            ),
        ]
        for name, seconds in rows:
            print(f"{name:<52} {seconds:9.2f} s")
        ratios = figures["ratios"]
        summary["ratio_median"] = median(ratios)
        print(
            f"\nread back / build: median {median(ratios):.3f} (rounds: "
            f"{', '.join(f'{r:.3f}' for r in ratios)}); snapshot "
            f"{figures['snapshot_mib']:,.0f} MiB; read back equals the build (arrays, marks, "
            f"{len(QUERIES)} searches): {'yes' if figures['equal'] else 'NO'}; the catch-up "
            f"re-read {figures['reread']:,}"
        )
    if gunicorn["starts"]:
        print(
            f"\ngunicorn, 2 workers ({gunicorn['edited']:,} listings edited before the third)"
            f"\n{'start':<40} {'ready':>8} {'searched':>9} {'PSS, all':>10}"
        )
        for name, start in gunicorn["starts"].items():
            print(
                f"{name:<40} {start['ready']:7.1f}s {start['searched']:8.1f}s "
                f"{start['pss_mib']:6,.0f} MiB"
            )
    print(
        json.dumps(
            {
                "bench": "index_snapshot",
                "subagents": n,
                "rounds": rounds,
                **figures,
                **summary,
                "gunicorn": gunicorn,
            }
        )
    )
    if figures and not figures["equal"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
