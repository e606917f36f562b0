"""What logging and metrics cost: the catalog and ingest workloads with both off and on, same run.

Drives the workloads of ``bench/catalog.py`` (browse, search, detail, lineage, tree and the
trivial health endpoint under concurrent keep-alive clients) and ``bench/ingest.py`` (event
batches from several client processes until N are stored, checked with SQL), each against a
gunicorn (2 gthread workers × 8 threads, as in production) started with observability OFF or
ON. The modes alternate in ABBA order (off, on, on, off, ...) so that drift on a shared
machine falls on both alike: the catalog's two servers run side by side and the load switches
between them endpoint by endpoint; each ingest run starts a fresh server of its mode. Prints
each workload's throughput and latency per mode and the change; the last line is JSON. The
target: ON at most 10% slower than OFF.

    python bench/observability.py [--quick] [--rounds R] [--events N] [--seconds S]
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
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import catalog, ingest, loadgen  # noqa: E402
from bench.ingest_harness import setup  # noqa: E402
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


def _order(round_index: int) -> tuple[str, ...]:
    return MODES if round_index % 2 == 0 else tuple(reversed(MODES))


def catalog_rounds(url: str, args, modes: dict[str, dict], logs: Path) -> dict:
    """Requests, seconds and latencies per mode and endpoint, summed over the rounds."""
    forest = catalog.load_forest(url, args.subagents, args.seed)
    endpoints = catalog.catalog_endpoints(forest, args.subagents, args.seed)
    totals = {mode: defaultdict(lambda: {"requests": 0, "errors": 0, "seconds": 0.0, "ms": [],
                                         "round_rates": []})
              for mode in MODES}  # fmt: skip
    access_logs = {mode: logs / f"catalog-{mode}.log" for mode in MODES}
    ports, servers = {}, {}
    try:
        # Both modes' servers run side by side (only one is driven at a time), so the load can
        # alternate between them endpoint by endpoint: drift on a shared machine then falls on
        # both modes alike instead of on whichever ran in a bad minute.
        for mode in MODES:
            ports[mode] = catalog.free_port()
            with server_environment(modes[mode], access_logs[mode]):
                servers[mode] = catalog.start_gunicorn(
                    url, ports[mode], args.workers, args.threads, 30
                )
        for mode in MODES:
            for paths in endpoints.values():  # warm every worker's pool and caches
                loadgen.run("warm", "127.0.0.1", ports[mode], paths, clients=2, duration=0.5)
        step = 0
        for _round in range(args.rounds):
            for name, paths in endpoints.items():
                for mode in _order(step):
                    result = loadgen.run(
                        name, "127.0.0.1", ports[mode], paths,
                        clients=args.clients, duration=args.seconds,
                    )  # fmt: skip
                    total = totals[mode][name]
                    total["requests"] += result.requests
                    total["errors"] += result.errors
                    total["seconds"] += result.seconds
                    total["ms"] += result.latencies_ms
                    total["round_rates"].append(result.rps)
                step += 1
    finally:
        for server in servers.values():
            server.terminate()
            server.wait(timeout=15)
    log_lines = {mode: _lines(access_logs[mode]) for mode in MODES}
    return {"totals": totals, "log_lines": log_lines, "endpoints": list(endpoints)}


def ingest_rounds(url: str, args, modes: dict[str, dict], logs: Path) -> dict:
    data = setup(url, args.users, args.ingest_subagents, args.seed)
    runs = {mode: [] for mode in MODES}
    log_lines = dict.fromkeys(MODES, 0)
    for round_index in range(args.rounds):
        for mode in _order(round_index):
            access_log = logs / f"ingest-{mode}-{round_index}.log"
            with server_environment(modes[mode], access_log):
                runs[mode].append(
                    ingest.end_to_end(
                        url, data, args.events, args.ingest_clients, args.seed + round_index, args
                    )
                )
            log_lines[mode] += _lines(access_log)
    return {"runs": runs, "log_lines": log_lines}


def _percentile(values: list[float], p: float) -> float:
    return loadgen.percentile(values, p) if values else float("nan")


def summarize(catalog_figures: dict, ingest_figures: dict) -> dict:
    rows = {}
    for name in catalog_figures["endpoints"]:
        row = {}
        for mode in MODES:
            total = catalog_figures["totals"][mode][name]
            row[mode] = {
                "rate": round(total["requests"] / total["seconds"], 1) if total["seconds"] else 0,
                "p50_ms": round(statistics.median(total["ms"]), 2) if total["ms"] else None,
                "p99_ms": round(_percentile(total["ms"], 99), 2),
                "errors": total["errors"],
                "round_rates": [round(rate, 1) for rate in total["round_rates"]],
            }
        rows[f"catalog {name.split()[0]}"] = row
    row = {}
    for mode in MODES:
        runs = ingest_figures["runs"][mode]
        events = sum(r["events"] for r in runs)
        seconds = sum(r["seconds"] for r in runs)
        row[mode] = {
            "rate": round(events / seconds, 1),
            # Per-run percentiles: the median of the runs' (each run's batches are many).
            "p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 2),
            "p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 2),
            "errors": sum(1 for r in runs if r["client_errors"]),
            "round_rates": [r["events_per_s"] for r in runs],
        }
    rows["ingest events"] = row
    for row in rows.values():
        off, on = row["off"]["rate"], row["on"]["rate"]
        row["change"] = round(on / off - 1, 4) if off else None
        # How far apart the OFF rounds are: a change smaller than this is within the noise.
        rates = row["off"]["round_rates"]
        row["noise"] = round((max(rates) - min(rates)) / statistics.mean(rates), 4) if off else None
    return rows


def print_table(args, rows: dict, modes: dict, log_lines: dict) -> None:
    print(
        f"\nobservability overhead: catalog ({args.subagents:,} sub-agents, {args.clients} "
        f"clients, {args.seconds:.0f}s per endpoint) and ingest ({args.events:,} events, "
        f"{args.ingest_clients} client processes); gunicorn {args.workers}x{args.threads} "
        f"gthread; {args.rounds} rounds of off/on in ABBA order; cpus {os.cpu_count()}, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    for mode in MODES:
        shown = " ".join(
            f"{k}={v.replace(ACCESS_LOG, '<file>') or '(unset)'}" for k, v in modes[mode].items()
        )
        print(f"  {mode:>3}: {shown}  [access log lines: {log_lines[mode]:,}]")
    header = (
        f"{'workload':<18} {'off /s':>9} {'on /s':>9} {'change':>8} "
        f"{'noise':>7} {'off p50':>8} {'on p50':>8} {'off p99':>8} {'on p99':>8} {'errors':>7}"
    )
    print("\n" + header)
    print("-" * len(header))
    for name, row in rows.items():
        off, on = row["off"], row["on"]
        change = f"{row['change']:+.1%}" if row["change"] is not None else "-"
        noise = f"{row['noise']:.1%}" if row["noise"] is not None else "-"
        print(
            f"{name:<18} {off['rate']:>9.0f} {on['rate']:>9.0f} {change:>8} {noise:>7} "
            f"{off['p50_ms']:>8.1f} {on['p50_ms']:>8.1f} {off['p99_ms']:>8.1f} "
            f"{on['p99_ms']:>8.1f} {off['errors'] + on['errors']:>7}"
        )
    print(
        "\nchange = ON throughput / OFF throughput - 1 (negative: ON is slower); noise = the "
        "spread of the OFF rounds' throughput over their mean (with one round, 0);\n"
        f"target: no workload slower than {TARGET_SLOWDOWN:.0%}."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run, a few minutes")
    parser.add_argument("--rounds", type=int, default=None, help="off/on pairs (ABBA order)")
    parser.add_argument("--catalog-subagents", dest="subagents", type=int, default=None)
    parser.add_argument("--clients", type=int, default=8, help="catalog clients")
    parser.add_argument("--seconds", type=float, default=None, help="per catalog endpoint")
    parser.add_argument("--events", type=int, default=None, help="events stored per ingest run")
    parser.add_argument("--ingest-clients", type=int, default=4, help="ingest client processes")
    parser.add_argument("--ingest-subagents", type=int, default=2_000)
    parser.add_argument("--users", type=int, default=10_000, help="ingest's people")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker")
    parser.add_argument("--off", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--on", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    url = database_url_or_rerun_with_servers()
    args.rounds = args.rounds or (2 if args.quick else 4)
    args.subagents = args.subagents or (20_000 if args.quick else 100_000)
    args.seconds = args.seconds or (3.0 if args.quick else 10.0)
    args.events = args.events or (25_000 if args.quick else 200_000)
    modes = {"off": {**OFF, **_assignments(args.off)}, "on": {**ON, **_assignments(args.on)}}
    began = time.perf_counter()
    # test-services.sh stops us with SIGTERM: unwind so gunicorn and the clients are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    with tempfile.TemporaryDirectory(prefix="sprig-bench-observability-") as folder:
        logs = Path(folder)
        catalog_figures = catalog_rounds(url, args, modes, logs)
        ingest_figures = ingest_rounds(url, args, modes, logs)
    rows = summarize(catalog_figures, ingest_figures)
    log_lines = {
        mode: catalog_figures["log_lines"][mode] + ingest_figures["log_lines"][mode]
        for mode in MODES
    }
    print_table(args, rows, modes, log_lines)
    failed = sorted(
        {
            f"ingest {name}"
            for runs in ingest_figures["runs"].values()
            for run in runs
            for name, ok in run["checks"].items()
            if not ok
        }
    )
    if failed:
        print(f"\nFAILED checks: {', '.join(failed)}")
    worst = min(row["change"] for row in rows.values() if row["change"] is not None)
    print(f"\ntotal bench time {time.perf_counter() - began:.0f}s")
    print(
        json.dumps(
            {
                "bench": "observability",
                "rounds": args.rounds,
                "catalog_subagents": args.subagents,
                "catalog_seconds": args.seconds,
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
                "failed_checks": failed,
                "total_seconds": round(time.perf_counter() - began, 1),
            }
        )
    )
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
