"""What logging and metrics cost: the catalog and ingest workloads with both off and on, same run.

Drives the workloads of ``bench/catalog.py`` (browse, search, detail, lineage, tree and the
trivial health endpoint under concurrent keep-alive clients) and ``bench/ingest.py`` (batches
of 1,000 events, 5% of them re-sent as retries), each against two gunicorns side by side (2
gthread workers × 8 threads, as in production), one with observability OFF and one ON. The
load switches between them in short slices (``bench/interleave.py``): OFF, ON, OFF, ON, ...,
so whatever else the shared machine does lands on both alike; each workload's change is the
median over its ON slices of the ON slice's rate over the OFF slices around it, with its
interquartile range and a "too noisy to judge" verdict when that range is wide. Each slice
also reads the CPU its server's processes used (/proc), so the bench reports what a request
costs in CPU, and ON's cost against OFF's the same way.

Two servers are two sets of processes, though, and on a shared 2-core machine they differ on
their own: an A/A run (both OFF) put them up to ±20% apart in rate and ±10% in CPU per request,
as much as the change being measured. So the catalog endpoints are also measured in process:
an OFF app and an ON app in this one process, called through WSGI in alternating slices on
one thread's CPU clock, where nothing but the change differs (their spread is a few percent).
The verdict takes what ON adds there, in µs of CPU per request, over what the whole served
request costs (OFF's server over HTTP, gunicorn's own work included): how much slower ON is
once the server is CPU-bound. Target: at most 10% on every workload. The last line is JSON.

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
import functools
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
from bench.servers import (  # noqa: E402
    cpu_seconds,
    database_url_or_rerun_with_servers,
    live_children,
)

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
# The catalog servers keep what they cache for the whole run. With the catalog bench's 30 s,
# each server's cached pages expire at moments of their own, so one server's slices of an
# endpoint could fall in a refill while the other's did not: an A/A run (both OFF) showed
# differences of 10-20% on the cached endpoints from that alone. Warmed and never expiring,
# every cached endpoint is measured at its cheapest, where a fixed cost per request weighs most.
READ_CACHE_SECONDS = 3600
# In process, one thread: slices short enough for many rounds, long enough for the CPU clock.
IN_PROCESS_SLICE_SECONDS = 0.25
# Long enough for each worker to have drawn every cached path of an endpoint a few times.
WARM_SECONDS = 3.0
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
    switch between them slice by slice; yields ``{mode: port}`` and ``{mode: master pid}``
    and stops them after."""
    ports, servers = {}, {}
    try:
        for mode in MODES:
            ports[mode] = catalog.free_port()
            with server_environment(modes[mode], logs / f"{kind}-{mode}.log"):
                servers[mode] = start(ports[mode])
        yield ports, {mode: server.pid for mode, server in servers.items()}
    finally:
        for server in servers.values():
            catalog.stop_gunicorn(server)


def timed_on_server_cpu(run_slice, masters: dict[str, int]):
    """``run_slice`` with the CPU the slice's server (master and workers) used during it: on a
    shared 2-core machine the rate a server reaches depends on what else runs and on how the
    clients' connections happen to split between its two workers (an A/A run, both servers
    OFF, moved it by up to ±20%), while the CPU each request costs is what logging and
    metrics add."""
    processes = {mode: [pid, *live_children(pid)] for mode, pid in masters.items()}

    def run(mode: str, seconds: float) -> interleave.SliceResult:
        before = cpu_seconds(processes[mode])
        result = run_slice(mode, seconds)
        return dataclasses.replace(result, cpu_seconds=cpu_seconds(processes[mode]) - before)

    return run


def alternate(pools: dict, masters: dict, workload: str, args) -> dict:
    """OFF and ON slices of one workload in turn (OFF around every ON slice), judged as the
    median of each ON slice's rate (and requests per CPU second) over the OFF slices around
    it."""

    @functools.partial(timed_on_server_cpu, masters=masters)
    def run_slice(mode: str, seconds: float) -> interleave.SliceResult:
        return dataclasses.replace(pools[mode].run_slice(workload, seconds), name=mode)

    return interleave.interleave(
        run_slice, "off", ["on"], rounds=args.rounds,
        slice_seconds=interleave.slice_seconds(args), threshold=args.noise_threshold,
    )  # fmt: skip


def catalog_slices(url: str, args, modes: dict[str, dict], logs: Path, endpoints: dict) -> dict:
    """Each catalog endpoint in alternating OFF and ON slices against two servers side by
    side; ``{endpoint: {"off": Interleaved, "on": Interleaved}}``."""

    def start(port: int):
        return catalog.start_gunicorn(url, port, args.workers, args.threads, READ_CACHE_SECONDS)

    results = {}
    with (
        side_by_side(start, modes, logs, "catalog") as (ports, masters),
        contextlib.ExitStack() as stack,
    ):
        # Each worker builds its suggestion index on a thread as it starts; a slice measured
        # while one server still builds would charge that server for it. Enough concurrent
        # searches reach every worker, and each waits for its worker's index to be built. The
        # same requests fill every worker's read cache.
        for mode in MODES:
            for paths in endpoints.values():
                loadgen.run(
                    "warm", "127.0.0.1", ports[mode], paths,
                    clients=args.workers * args.threads, duration=WARM_SECONDS,
                )  # fmt: skip
        pools = {
            mode: stack.enter_context(
                interleave.SlicedClients("127.0.0.1", ports[mode], endpoints, clients=args.clients)
            )
            for mode in MODES
        }
        for name in endpoints:
            results[f"catalog {name.split()[0]}"] = alternate(pools, masters, name, args)
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

    with (
        side_by_side(start, modes, logs, "ingest") as (ports, masters),
        contextlib.ExitStack() as stack,
    ):
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

        @functools.partial(timed_on_server_cpu, masters=masters)
        def events_slice(mode: str, seconds: float) -> interleave.SliceResult:
            result = pools[mode].run_slice("events", seconds)
            return dataclasses.replace(result, name=mode, completed=result.completed * per_batch)

        runs = interleave.interleave(
            events_slice, "off", ["on"], rounds=args.rounds,
            slice_seconds=interleave.slice_seconds(args), threshold=args.noise_threshold,
        )  # fmt: skip
    return {"ingest events": runs}


def in_process_slices(url: str, args, logs: Path, endpoints: dict) -> dict:
    """The catalog endpoints through the app itself, with no server around it: two apps in
    this process (metrics off and on), called straight through WSGI one request at a time,
    in alternating OFF and ON slices timed on this thread's CPU clock. ON also turns the
    access line on (the ``market`` loggers at INFO, production's JSON configuration, the
    lines into a file). One process, one CPU clock and no gunicorn: what a request costs the
    app itself, the server's own share (HTTP parsing, threads, sockets, about as much again)
    left out, so the ratio is the strictest there is; and none of the differences between two
    server processes that the side-by-side run cannot tell from the change."""
    multiproc = logs / "in-process-metrics"
    multiproc.mkdir()
    if "prometheus_client" in sys.modules:
        raise RuntimeError("prometheus_client was imported before its multiprocess directory")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(multiproc)  # as under gunicorn: files, locks

    import gc
    import logging
    import logging.config
    import random

    from werkzeug.test import EnvironBuilder

    from market.app import create_app
    from market.platform.logs import logging_config
    from market.platform.state import app_state

    lines = (logs / "in-process-on.log").open("a")
    config = logging_config("json", "INFO")
    config["handlers"]["stdout"]["stream"] = lines
    config["handlers"]["access"]["stream"] = lines
    logging.config.dictConfig(config)
    levels = {"off": logging.WARNING, "on": logging.INFO}
    market_log = logging.getLogger("market")
    settings = {
        "database_url": url,
        "secret_key": "bench",
        "read_cache_seconds": READ_CACHE_SECONDS,
        "rate_limit_search": "",
        "rate_limit_suggestions": "",
    }
    apps = {mode: create_app({**settings, "metrics": mode == "on"}) for mode in MODES}
    environs = {
        name: [EnvironBuilder(path=str(path)).get_environ() for path in paths]
        for name, paths in endpoints.items()
    }

    def call(app, environ: dict) -> str:
        answer = []
        body = app(dict(environ), lambda status, _headers, _exc=None: answer.append(status))
        try:
            for _chunk in body:
                pass
        finally:
            getattr(body, "close", lambda: None)()
        return answer[0]

    market_log.setLevel(logging.WARNING)
    for app in apps.values():
        app_state(app).suggestions.index  # noqa: B018 - builds it, as gunicorn's warm-up does
        for requests in environs.values():
            for environ in requests:  # every path once: the read caches hold them all
                call(app, environ)
    gc.collect()
    gc.freeze()  # what the worker's warm-up does once its index is built

    results = {}
    rng = random.Random(args.seed)
    for name, requests in environs.items():

        def run_slice(mode: str, seconds: float, requests=requests) -> interleave.SliceResult:
            app = apps[mode]
            market_log.setLevel(levels[mode])
            latencies, errors = [], 0
            cpu_started = time.thread_time()
            end = time.perf_counter() + seconds
            while (started := time.perf_counter()) < end:
                status = call(app, rng.choice(requests))
                latencies.append((time.perf_counter() - started) * 1000)
                errors += not status.startswith(("2", "3"))
            return interleave.SliceResult(
                mode, len(latencies), errors, seconds, latencies,
                completed=float(len(latencies)), cpu_seconds=time.thread_time() - cpu_started,
            )  # fmt: skip

        results[f"app {name.split()[0]}"] = interleave.interleave(
            run_slice, "off", ["on"], rounds=args.app_rounds,
            slice_seconds=IN_PROCESS_SLICE_SECONDS, threshold=args.noise_threshold,
        )  # fmt: skip
    market_log.setLevel(logging.INFO)
    for app in apps.values():
        app_state(app).engine.dispose()
        app_state(app).read_engine.dispose()
    lines.close()
    return results


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
            "cpu_change": round(on.capacity.median - 1, 4),
            "cpu_change_q1": round(on.capacity.q1 - 1, 4),
            "cpu_change_q3": round(on.capacity.q3 - 1, 4),
            "cpu_noisy": on.capacity.noisy,
        }
    return rows


def added_cost(rows: dict) -> dict:
    """What ON adds to a served request, per catalog endpoint: the CPU it adds in process
    (OFF's cost there times the median ratio, so a precise figure) over the CPU the whole
    served request costs, gunicorn included (OFF's server over HTTP) - how much slower ON is
    once the server is CPU-bound. Ingest has no in-process twin: its own server ratio."""
    added = {}
    for name, row in rows.items():
        kind, _, endpoint = name.partition(" ")
        if kind == "app":
            in_process = row["off"]["cpu_us_per_request"]
            extra = in_process * (1 / (1 + row["cpu_change"]) - 1)
            served = rows[f"catalog {endpoint}"]["off"]["cpu_us_per_request"]
            added[name.replace("app", "catalog", 1)] = {
                "added_us": round(extra, 1),
                "served_us": served,
                "share": round(extra / served, 4),
            }
        elif kind == "ingest":
            added[name] = {
                "added_us": round(row["off"]["cpu_us_per_request"] * -row["cpu_change"], 2),
                "served_us": row["off"]["cpu_us_per_request"],
                "share": round(-row["cpu_change"], 4),
            }
    return added


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
    print(
        f"  app rows: the same endpoints in process, {args.app_rounds} rounds of "
        f"{IN_PROCESS_SLICE_SECONDS:g}s slices, OFF and ON apps alternating on one thread "
        f"[ON's access log lines: {log_lines['on, in process']:,}]"
    )
    header = (
        f"{'workload':<16} {'off /s':>7} {'on /s':>7} {'rate':>7} {'off µs':>7} {'on µs':>7} "
        f"{'cost':>7} {'q1..q3':>15} {'off p50':>8} {'on p50':>7} {'errors':>6}  verdict"
    )
    print("\n" + header)
    print("-" * len(header))
    for name, row in rows.items():
        off, on = row["off"], row["on"]
        spread = f"{row['cpu_change_q1']:+.1%}..{row['cpu_change_q3']:+.1%}"
        verdict = "too noisy to judge" if row["cpu_noisy"] else "steady"
        print(
            f"{name:<16} {off['rps']:>7.0f} {on['rps']:>7.0f} {row['change']:>+7.1%} "
            f"{off.get('cpu_us_per_request', 0):>7.0f} {on.get('cpu_us_per_request', 0):>7.0f} "
            f"{row['cpu_change']:>+7.1%} {spread:>15} {off['p50_ms'] or 0:>8.1f} "
            f"{on['p50_ms'] or 0:>7.1f} {off['errors'] + on['errors']:>6}  {verdict}"
        )
    print(
        "\nrate = median over ON slices of (ON slice's req/s over the mean of the OFF slices "
        "around it) - 1; µs = the server's CPU (master and workers, user and system) per "
        "request, per event for ingest; cost = the same median for requests per CPU second "
        "(negative: ON does less with the same CPU), q1..q3 its interquartile range, too noisy "
        f"to judge when that range (or the OFF slices' step) is above {args.noise_threshold:.0%} "
        f"of the median. The app rows are the same endpoints in process (see below)."
    )
    print(f"\n{'what ON adds':<16} {'µs added':>9} {'served µs':>10} {'share':>7}")
    for name, cost in added_cost(rows).items():
        print(
            f"{name:<16} {cost['added_us']:>9.1f} {cost['served_us']:>10.0f} {cost['share']:>7.1%}"
        )
    print(
        "µs added = the app's CPU per request ON minus OFF (in process); served µs = what the "
        "request costs OFF's server in all (over HTTP, per event for ingest); share = the two "
        f"over each other, how much slower ON is on a CPU-bound server. Target: at most "
        f"{TARGET_SLOWDOWN:.0%}."
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
    args.app_rounds = 12 if args.quick else 40
    args.subagents = args.subagents or (20_000 if args.quick else 100_000)
    args.events = args.events or (300_000 if args.quick else 1_500_000)
    modes = {"off": {**OFF, **_assignments(args.off)}, "on": {**ON, **_assignments(args.on)}}
    began = time.perf_counter()
    # test-services.sh stops us with SIGTERM: unwind so gunicorn and the clients are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    with tempfile.TemporaryDirectory(prefix="sprig-bench-observability-") as folder:
        logs = Path(folder)
        forest = catalog.load_forest(url, args.subagents, args.seed)
        endpoints = catalog.catalog_endpoints(forest, args.subagents, args.seed)
        results = catalog_slices(url, args, modes, logs, endpoints)
        # Before ingest, which loads tables of its own over the catalog's.
        results |= in_process_slices(url, args, logs, endpoints)
        results |= ingest_slices(url, args, modes, logs)
        log_lines = {
            mode: sum(_lines(logs / f"{kind}-{mode}.log") for kind in ("catalog", "ingest"))
            for mode in MODES
        }
        log_lines["on, in process"] = _lines(logs / "in-process-on.log")
    rows = summarize(results)
    print_table(args, rows, modes, log_lines)
    app_rows = {name: row for name, row in rows.items() if name.startswith("app ")}
    judged = [row["cpu_change"] for row in app_rows.values() if not row["cpu_noisy"]]
    added = added_cost(rows)
    worst = max(cost["share"] for cost in added.values())
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
                "added": added,
                "worst_added_share": worst,
                "worst_in_process_cpu_change": min(row["cpu_change"] for row in app_rows.values()),
                "worst_http_cpu_change": min(
                    row["cpu_change"] for name, row in rows.items() if name not in app_rows
                ),
                "worst_http_rate_change": min(
                    row["change"] for name, row in rows.items() if name not in app_rows
                ),
                "target_slowdown": TARGET_SLOWDOWN,
                "target_met": worst <= TARGET_SLOWDOWN,
                "noisy": len(judged) < len(app_rows),
                "total_seconds": round(time.perf_counter() - began, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
