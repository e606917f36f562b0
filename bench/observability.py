"""What logging and metrics cost: the catalog and ingest workloads with both off and on, same run.

Drives the workloads of ``bench/catalog.py`` (browse, search, detail, lineage, tree and the
trivial health endpoint under concurrent keep-alive clients) and ``bench/ingest.py`` (batches
of 1,000 events, 5% of them re-sent as retries), each against two gunicorns side by side (2
gthread workers × 8 threads, as in production), one with observability OFF and one ON. The
load switches between them in short slices (``bench/interleave.py``): OFF, ON, OFF, ON, ...,
so whatever else the shared machine does lands on both alike; each workload's change is the
median over its ON slices of the ON slice's rate over the OFF slices around it, with its
interquartile range and a "too noisy to judge" verdict when that range is wide. Prints each
workload's throughput and latency per mode and the change; the last line is JSON. The target:
ON at most 10% slower than OFF.

    python bench/observability.py [--quick] [--rounds R] [--events N] [--slice-seconds S]
                                  [--off KEY=VALUE ...] [--on KEY=VALUE ...]

A mode is only environment variables for the server (``OFF`` and ``ON`` below; ``--off`` and
``--on`` add or replace variables, an empty value unsets one). In ON, the server's stdout (one
JSON line per request) is written to a file (as a log collector's pipe would take it) and its
lines counted, so a mode that logs nothing shows as such. Without SPRIG_TEST_POSTGRES_URL (or
SPRIG_BENCH_DATABASE_URL) it re-runs itself under scripts/test-services.sh, which starts
PostgreSQL and Redis.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import catalog, ingest, interleave, loadgen  # noqa: E402
from bench.ingest_harness import (  # noqa: E402
    BATCH,
    DUPLICATE_SHARE,
    PATH,
    EventMaker,
    build_batches,
    setup,
)
from bench.loadgen import Request  # noqa: E402
from bench.servers import database_url_or_rerun_with_servers  # noqa: E402

ACCESS_LOG = "{access_log}"  # replaced by a file of the run's own
# What each mode sets in the server's environment. Settings a build does not know are ignored
# (load_settings reads only its own), so both modes can name what logging and metrics use.
# OFF: no request lines (WARNING drops them), no metrics. ON: one JSON line per request into a
# file, as a log collector reads the process's stdout, and metrics on every request.
OFF = {
    "SPRIG_BENCH_STDOUT": "",
    "SPRIG_LOG_LEVEL": "WARNING",
    "SPRIG_METRICS": "0",
}
ON = {
    "SPRIG_BENCH_STDOUT": ACCESS_LOG,
    "SPRIG_LOG_LEVEL": "INFO",
    "SPRIG_LOG_FORMAT": "json",
    "SPRIG_METRICS": "1",
}
MODES = ("off", "on")
TARGET_SLOWDOWN = 0.10


def _assignments(pairs: list[str]) -> dict[str, str]:
    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"expected KEY=VALUE, got {pair!r}")
        values[key] = value
    return values


@contextmanager
def server_environment(variables: dict[str, str], access_log: Path):
    """Set the mode's variables for the servers started inside (they copy os.environ)."""
    saved = {key: os.environ.get(key) for key in variables}
    for key, value in variables.items():
        value = value.replace(ACCESS_LOG, str(access_log))
        if value:
            os.environ[key] = value
        else:
            os.environ.pop(key, None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as log:
        return sum(1 for _ in log)


@contextmanager
def side_by_side(start, modes: dict[str, dict], logs: Path, kind: str):
    """One server per mode, both up at once (``start(port)`` starts one), so the load can
    switch between them slice by slice; yields ``{mode: port}`` and stops them after."""
    ports, servers = {}, {}
    try:
        for mode in MODES:
            ports[mode] = catalog.free_port()
            with server_environment(modes[mode], logs / f"{kind}-{mode}.log"):
                servers[mode] = start(ports[mode])
        yield ports
    finally:
        for server in servers.values():
            catalog.stop_gunicorn(server)


def alternate(pools: dict, workload: str, args) -> dict[str, interleave.Interleaved]:
    """OFF and ON slices of one workload in turn (OFF around every ON slice), judged as the
    median of each ON slice's rate over the OFF slices around it."""

    def run_slice(mode: str, seconds: float) -> interleave.SliceResult:
        return dataclasses.replace(pools[mode].run_slice(workload, seconds), name=mode)

    return interleave.interleave(
        run_slice, "off", ["on"], rounds=args.rounds,
        slice_seconds=interleave.slice_seconds(args), threshold=args.noise_threshold,
    )  # fmt: skip


def catalog_slices(url: str, args, modes: dict[str, dict], logs: Path) -> dict:
    """Each catalog endpoint in alternating OFF and ON slices against two servers side by
    side; ``{endpoint: {"off": Interleaved, "on": Interleaved}}``."""
    forest = catalog.load_forest(url, args.subagents, args.seed)
    endpoints = catalog.catalog_endpoints(forest, args.subagents, args.seed)

    def start(port: int):
        return catalog.start_gunicorn(url, port, args.workers, args.threads, 30)

    results = {}
    with side_by_side(start, modes, logs, "catalog") as ports, contextlib.ExitStack() as stack:
        # Each worker builds its suggestion index on a thread as it starts; a slice measured
        # while one server still builds would charge that server for it. Enough concurrent
        # searches reach every worker, and each waits for its worker's index to be built.
        for mode in MODES:
            for paths in endpoints.values():
                loadgen.run(
                    "warm", "127.0.0.1", ports[mode], paths,
                    clients=args.workers * args.threads, duration=1.0,
                )  # fmt: skip
        pools = {
            mode: stack.enter_context(
                interleave.SlicedClients("127.0.0.1", ports[mode], endpoints, clients=args.clients)
            )
            for mode in MODES
        }
        for name in endpoints:
            results[f"catalog {name.split()[0]}"] = alternate(pools, name, args)
    return results


def ingest_slices(url: str, args, modes: dict[str, dict], logs: Path) -> dict:
    """Event batches (1,000 events, 5% re-sent as a retry would) in alternating OFF and ON
    slices against two servers side by side on the same tables, each batch sent once; the
    rate is events per second."""
    data = setup(url, args.users, args.ingest_subagents, args.seed)
    maker = EventMaker(args.seed + 17, data["users"], data["targets"], 86_400)
    bodies, _ = build_batches(maker, args.events, DUPLICATE_SHARE, BATCH)
    per_batch = sum(body[1] for body in bodies) / len(bodies)
    # Every batch goes to one mode only: a batch re-sent to the other would be all duplicates.
    batches = {mode: [Request(PATH, "POST", body) for body, _, _ in bodies[i::2]]
               for i, mode in enumerate(MODES)}  # fmt: skip
    headers = {"Authorization": f"Bearer {data['token']}", "Content-Type": "application/json"}

    def start(port: int):
        log_path = logs / f"ingest-{port}.stderr"
        return ingest.start_gunicorn(url, port, args.workers, args.threads, log_path)

    with side_by_side(start, modes, logs, "ingest") as ports, contextlib.ExitStack() as stack:
        pools = {
            mode: stack.enter_context(
                interleave.SlicedClients(
                    "127.0.0.1",
                    ports[mode],
                    {"events": batches[mode]},
                    clients=args.ingest_clients,
                    headers=headers,
                    timeout=60,
                    in_order=True,
                )
            )
            for mode in MODES
        }

        def events_slice(mode: str, seconds: float) -> interleave.SliceResult:
            result = pools[mode].run_slice("events", seconds)
            return dataclasses.replace(result, name=mode, completed=result.completed * per_batch)

        runs = interleave.interleave(
            events_slice, "off", ["on"], rounds=args.rounds,
            slice_seconds=interleave.slice_seconds(args), threshold=args.noise_threshold,
        )  # fmt: skip
    return {"ingest events": runs}


def summarize(results: dict) -> dict:
    """Per workload: each mode's pooled figures, and ON against OFF (median slice ratio)."""
    rows = {}
    for name, runs in results.items():
        on = runs["on"]
        rows[name] = {
            "off": runs["off"].figures(),
            "on": on.figures(),
            "change": round(on.throughput.median - 1, 4),
            "change_q1": round(on.throughput.q1 - 1, 4),
            "change_q3": round(on.throughput.q3 - 1, 4),
            "noisy": on.throughput.noisy,
        }
    return rows


def print_table(args, rows: dict, modes: dict, log_lines: dict) -> None:
    print(
        f"\nobservability overhead: catalog ({args.subagents:,} sub-agents, {args.clients} "
        f"clients) and ingest (batches of {BATCH:,} events, {args.ingest_clients} client "
        f"processes); gunicorn {args.workers}x{args.threads} gthread, OFF and ON servers side "
        f"by side; {interleave.describe(args.rounds, interleave.slice_seconds(args), 1)} per "
        f"workload; cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}"
    )
    for mode in MODES:
        shown = " ".join(
            f"{k}={v.replace(ACCESS_LOG, '<file>') or '(unset)'}" for k, v in modes[mode].items()
        )
        print(f"  {mode:>3}: {shown}  [access log lines: {log_lines[mode]:,}]")
    header = (
        f"{'workload':<18} {'off /s':>9} {'on /s':>9} {'change':>8} {'q1..q3':>15} "
        f"{'off p50':>8} {'on p50':>8} {'off p99':>8} {'on p99':>8} {'errors':>7}  verdict"
    )
    print("\n" + header)
    print("-" * len(header))
    for name, row in rows.items():
        off, on = row["off"], row["on"]
        spread = f"{row['change_q1']:+.1%}..{row['change_q3']:+.1%}"
        verdict = "too noisy to judge" if row["noisy"] else "steady"
        print(
            f"{name:<18} {off['rps']:>9.0f} {on['rps']:>9.0f} {row['change']:>+8.1%} "
            f"{spread:>15} {off['p50_ms'] or 0:>8.1f} {on['p50_ms'] or 0:>8.1f} "
            f"{off['p99_ms'] or 0:>8.1f} {on['p99_ms'] or 0:>8.1f} "
            f"{off['errors'] + on['errors']:>7}  {verdict}"
        )
    print(
        "\nchange = median over ON slices of (ON slice rate / mean of the OFF slices around it) "
        "- 1 (negative: ON is slower); q1..q3 its interquartile range; too noisy to judge when "
        f"that range (or the OFF slices' step) is above {args.noise_threshold:.0%} of the "
        f"median.\ntarget: no workload slower than {TARGET_SLOWDOWN:.0%}."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run, a few minutes")
    parser.add_argument("--rounds", type=int, default=None, help="ON slices per workload")
    parser.add_argument("--catalog-subagents", dest="subagents", type=int, default=None)
    parser.add_argument("--clients", type=int, default=8, help="catalog clients")
    parser.add_argument("--events", type=int, default=None, help="new events made for ingest")
    parser.add_argument("--ingest-clients", type=int, default=4, help="ingest client processes")
    parser.add_argument("--ingest-subagents", type=int, default=2_000)
    parser.add_argument("--users", type=int, default=10_000, help="ingest's people")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker")
    parser.add_argument("--off", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--on", action="append", default=[], metavar="KEY=VALUE")
    interleave.add_arguments(parser)
    args = parser.parse_args()
    url = database_url_or_rerun_with_servers()
    args.rounds = args.rounds or (8 if args.quick else 20)
    args.subagents = args.subagents or (20_000 if args.quick else 100_000)
    args.events = args.events or (300_000 if args.quick else 1_500_000)
    modes = {"off": {**OFF, **_assignments(args.off)}, "on": {**ON, **_assignments(args.on)}}
    began = time.perf_counter()
    # test-services.sh stops us with SIGTERM: unwind so gunicorn and the clients are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    with tempfile.TemporaryDirectory(prefix="sprig-bench-observability-") as folder:
        logs = Path(folder)
        results = catalog_slices(url, args, modes, logs)
        results |= ingest_slices(url, args, modes, logs)
        log_lines = {
            mode: sum(_lines(logs / f"{kind}-{mode}.log") for kind in ("catalog", "ingest"))
            for mode in MODES
        }
    rows = summarize(results)
    print_table(args, rows, modes, log_lines)
    judged = [row["change"] for row in rows.values() if not row["noisy"]]
    worst = min(row["change"] for row in rows.values())
    print(f"\ntotal bench time {time.perf_counter() - began:.0f}s")
    print(
        json.dumps(
            {
                "bench": "observability",
                "rounds": args.rounds,
                "slice_seconds": interleave.slice_seconds(args),
                "catalog_subagents": args.subagents,
                "ingest_events": args.events,
                "workers": args.workers,
                "threads": args.threads,
                "cpus": os.cpu_count(),
                "modes": modes,
                "access_log_lines": log_lines,
                "workloads": rows,
                "worst_change": worst,
                "target_slowdown": TARGET_SLOWDOWN,
                "target_met": worst >= -TARGET_SLOWDOWN,
                "noisy": len(judged) < len(rows),
                "total_seconds": round(time.perf_counter() - began, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
