"""Measure a workload against a baseline in short alternating slices, so noise lands on both.

Measuring the baseline for ten seconds and then each workload for ten seconds after it puts
whatever else the machine does in those minutes on one side only: the same commit gave ratios
from 0.22 to 0.82. Here the run is a sequence of short slices (about half a second to a
second), every measured slice bracketed by two baseline slices::

    B W1 B W2 B W3 B | B W2 B W3 B W1 B | ...      (B: baseline, one round per "|")

Each measured slice's ratio is its value over the mean of the two baseline slices around it,
so a load that comes and goes moves both sides of one ratio alike, and a slice that straddles
a change only spoils that one ratio. The order of the measured workloads rotates every round,
so none is always the one after the baseline. The figure reported is the MEDIAN of a
workload's slice ratios, with its interquartile range; the verdict is "too noisy to judge"
when that range is wider than a stated share of the median, or when the two baseline slices
around a measured slice typically differ by more than that share (the machine changes faster
than a slice, so no slice is a fair comparison). Latencies (p50, p99, and the server's own
time where it sends ``Server-Timing``) are pooled over a workload's slices.

``SlicedClients`` drives HTTP slices with client processes that live for the whole run (a
slice is too short to start processes in); ``interleave`` takes any function that runs one
slice, so a bench whose baseline is not HTTP (a ``COPY``) can use the same schedule.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bench import loadgen
from bench.loadgen import KeepAlive, Request, Result, _server_ms, percentile

QUICK_SLICE_SECONDS = 0.5
FULL_SLICE_SECONDS = 1.0
# A comparison is "too noisy to judge" when the interquartile range of its slice ratios, or
# the typical step between the two baseline slices around a measured one, exceeds this share
# of the median: a 10% difference then cannot be told from the machine's own wobble.
NOISE_THRESHOLD = 0.20
MIN_ROUNDS = 3  # a median and a spread need a few slices
START_MARGIN_SECONDS = 0.05  # time for every client process to wake before a slice starts


# ------------------------------------------------------------------------ the statistics


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """The first quartile, median and third quartile (linear interpolation between ranks;
    one value is all three)."""
    if not values:
        raise ValueError("quartiles of no values")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0], ordered[0], ordered[0]
    q1, median, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return q1, median, q3


@dataclass(frozen=True)
class Judgement:
    """The slice ratios of one comparison and what they allow us to say."""

    ratios: tuple[float, ...]
    median: float
    q1: float
    q3: float
    spread: float  # (q3 - q1) / median: the interquartile range as a share of the median
    baseline_step: float  # median relative step between the baselines around a slice
    noisy: bool
    threshold: float

    @property
    def verdict(self) -> str:
        return "too noisy to judge" if self.noisy else "steady"

    def figures(self) -> dict:
        return {
            "ratio": round(self.median, 4),
            "ratio_q1": round(self.q1, 4),
            "ratio_q3": round(self.q3, 4),
            "spread": round(self.spread, 4),
            "baseline_step": round(self.baseline_step, 4),
            "noisy": self.noisy,
            "slice_ratios": [round(r, 4) for r in self.ratios],
        }


def judge(
    ratios: Sequence[float],
    baseline_steps: Sequence[float] = (),
    threshold: float = NOISE_THRESHOLD,
) -> Judgement:
    """The median of ``ratios``, its interquartile range, and whether either that range or
    the median of ``baseline_steps`` (how much the baseline moved across each slice) is
    beyond ``threshold`` as a share of the median."""
    q1, median, q3 = quartiles(ratios)
    spread = (q3 - q1) / median if median > 0 else math.inf
    step = statistics.median(baseline_steps) if baseline_steps else 0.0
    return Judgement(
        ratios=tuple(ratios),
        median=median,
        q1=q1,
        q3=q3,
        spread=spread,
        baseline_step=step,
        noisy=spread > threshold or step > threshold,
        threshold=threshold,
    )


def bracketed_ratios(
    sequence: Sequence[tuple[str, float]], baseline: str
) -> dict[str, tuple[list[float], list[float]]]:
    """For a run of (workload, value) slices in the order they ran, each measured slice's
    value over the mean of the nearest baseline slice before and after it (one side only at
    the ends), and the relative step between those two baselines; per workload, in order."""
    positions = [i for i, (name, _) in enumerate(sequence) if name == baseline]
    if not positions:
        raise ValueError(f"no {baseline!r} slice to compare with")
    out: dict[str, tuple[list[float], list[float]]] = {}
    for index, (name, value) in enumerate(sequence):
        if name == baseline:
            continue
        before = [sequence[p][1] for p in positions if p < index][-1:]
        after = [sequence[p][1] for p in positions if p > index][:1]
        around = before + after
        reference = statistics.fmean(around)
        ratios, steps = out.setdefault(name, ([], []))
        ratios.append(value / reference if reference > 0 else math.inf)
        steps.append(abs(around[-1] - around[0]) / reference if reference > 0 else math.inf)
    return out


def paired_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Round by round ratios of two workloads measured in the same rounds (a page against its
    API twin), skipping rounds where the denominator is missing or zero."""
    return [a / b for a, b in zip(numerators, denominators, strict=True) if b]


def schedule(baseline: str, measured: Sequence[str], rounds: int) -> list[str]:
    """The slices in the order they run: the baseline around every measured slice, the
    measured workloads rotated by one each round."""
    order = [baseline]
    for round_index in range(rounds):
        shift = round_index % len(measured) if measured else 0
        for name in [*measured[shift:], *measured[:shift]]:
            order += [name, baseline]
    return order


def rounds_for(seconds: float, slice_seconds: float) -> int:
    """Rounds giving each workload about ``seconds`` of measured slices (at least a few)."""
    return max(MIN_ROUNDS, math.ceil(seconds / slice_seconds - 1e-9))


# ------------------------------------------------------------------------ running slices


@dataclass
class SliceResult(Result):
    """One HTTP slice. A slice of half a second holds only a handful of a slow endpoint's
    requests, so counting whole requests would round its throughput by up to one request per
    client: ``completed`` also credits the share of the request each client had running when
    the slice ended (the time it ran inside the slice over its whole latency)."""

    completed: float = 0.0
    error_kinds: dict[str, int] = field(default_factory=dict)
    # Answers the server's read cache gave (``X-Sprig-Cache: hit``): they send no
    # ``Server-Timing``, so a cached run's server times are its misses'.
    cache_hits: int = 0
    # CPU the server used during the slice, when the bench can read it (``ServerCPU``).
    cpu_seconds: float | None = None

    @property
    def rps(self) -> float:
        return self.completed / self.seconds if self.seconds else 0.0

    @property
    def per_cpu_second(self) -> float:
        """Requests answered per second of the server's CPU: what one core could serve."""
        return self.completed / self.cpu_seconds if self.cpu_seconds else 0.0


@dataclass
class Interleaved:
    """One workload's slices from an interleaved run, and its comparison with the baseline."""

    name: str
    slices: list[Result] = field(default_factory=list)
    throughput: Judgement | None = None  # slice req/s over the baselines' around it
    latency: Judgement | None = None  # slice p50 over the baselines' p50 around it
    capacity: Judgement | None = None  # slice req per CPU second over the baselines' around it

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.slices)

    @property
    def rps(self) -> float:
        """Throughput over all the workload's slices together."""
        return sum(s.rps * s.seconds for s in self.slices) / self.seconds if self.seconds else 0.0

    @property
    def errors(self) -> int:
        return sum(s.errors for s in self.slices)

    @property
    def latencies_ms(self) -> list[float]:
        return [ms for s in self.slices for ms in s.latencies_ms]

    @property
    def server_ms(self) -> list[float]:
        return [ms for s in self.slices for ms in s.server_ms]

    @property
    def cache_hits(self) -> int:
        return sum(getattr(s, "cache_hits", 0) for s in self.slices)

    @property
    def error_kinds(self) -> dict[str, int]:
        kinds: Counter = Counter()
        for s in self.slices:
            kinds.update(getattr(s, "error_kinds", {}))
        return dict(kinds)

    def figures(self) -> dict:
        """Pooled throughput and latencies, and the comparison (for the JSON line)."""
        latencies, server = self.latencies_ms, self.server_ms
        out = {
            "rps": round(self.rps, 1),
            "p50_ms": round(statistics.median(latencies), 2) if latencies else None,
            "p99_ms": round(percentile(latencies, 99), 2) if latencies else None,
            "server_p50_ms": round(statistics.median(server), 2) if server else None,
            "server_p99_ms": round(percentile(server, 99), 2) if server else None,
            "errors": self.errors,
            "slices": len(self.slices),
        }
        if self.error_kinds:
            out["error_kinds"] = self.error_kinds
        if self.cache_hits:
            out["cache_hit_share"] = round(self.cache_hits / len(latencies), 3)
        cpu = [s.cpu_seconds for s in self.slices if getattr(s, "cpu_seconds", None) is not None]
        completed = sum(getattr(s, "completed", s.requests) for s in self.slices)
        if cpu and len(cpu) == len(self.slices) and completed:
            out["cpu_us_per_request"] = round(sum(cpu) / completed * 1e6, 1)
        if self.capacity is not None:
            out["capacity"] = {
                "ratio": round(self.capacity.median, 4),
                "ratio_q1": round(self.capacity.q1, 4),
                "ratio_q3": round(self.capacity.q3, 4),
                "spread": round(self.capacity.spread, 4),
                "noisy": self.capacity.noisy,
                "slice_ratios": [round(r, 4) for r in self.capacity.ratios],
            }
        if self.throughput is not None:
            out.update(self.throughput.figures())
        if self.latency is not None:
            out["p50_ratio"] = round(self.latency.median, 4)
            out["p50_ratio_spread"] = round(self.latency.spread, 4)
        return out


def interleave(
    run_slice: Callable[[str, float], Result],
    baseline: str,
    measured: Sequence[str],
    *,
    rounds: int,
    slice_seconds: float,
    threshold: float = NOISE_THRESHOLD,
    warmup_rounds: int = 1,
) -> dict[str, Interleaved]:
    """Run the ``schedule`` with ``run_slice(name, seconds)`` and judge every measured
    workload's throughput (and p50 latency, and requests per server CPU second when the slices
    carry ``cpu_seconds``) against the baseline slices around it. The
    baseline's own entry carries its slices and no comparison. ``warmup_rounds`` rounds run
    first and are not counted: caches fill and pools open in the same pattern as measured, so
    the first round is not the slow one."""
    for name in schedule(baseline, measured, warmup_rounds)[: 2 * len(measured) * warmup_rounds]:
        run_slice(name, slice_seconds)
    runs = {name: Interleaved(name) for name in [baseline, *measured]}
    order: list[Result] = []
    for name in schedule(baseline, measured, rounds):
        result = run_slice(name, slice_seconds)
        runs[name].slices.append(result)
        order.append(result)
    rates = bracketed_ratios([(r.name, r.rps) for r in order], baseline)
    for name in measured:
        runs[name].throughput = judge(*rates[name], threshold)
    if all(getattr(r, "cpu_seconds", None) for r in order):
        capacities = [(r.name, r.per_cpu_second) for r in order]
        for name, (ratios, steps) in bracketed_ratios(capacities, baseline).items():
            runs[name].capacity = judge(ratios, steps, threshold)
    if all(r.latencies_ms for r in order):
        medians = [(r.name, statistics.median(r.latencies_ms)) for r in order]
        for name, (ratios, steps) in bracketed_ratios(medians, baseline).items():
            runs[name].latency = judge(ratios, steps, threshold)
    return runs


def _client(host, port, workloads, seed, headers, timeout, in_order, commands, results) -> None:
    """One client process: for each (workload, start, end) command, a fresh keep-alive
    connection (opened before ``start``), requests drawn from the workload until ``end``, or
    with ``in_order`` taken one after the other from where the last slice stopped."""
    rng = random.Random(seed)
    cursors = dict.fromkeys(workloads, 0)
    while (command := commands.get()) is not None:
        name, start, end = command
        requests = workloads[name]
        connection = KeepAlive(host, port, timeout, headers, connect=True)
        errors = connection.errors
        time.sleep(max(0.0, start - time.monotonic()))
        latencies, server, completed, hits = [], [], 0.0, 0
        while (started := time.monotonic()) < end:
            if in_order:
                if cursors[name] == len(requests):
                    errors["ran out of requests: sent again"] += 1
                    cursors[name] = 0
                request = requests[cursors[name]]
                cursors[name] += 1
            else:
                request = rng.choice(requests)
            response = connection.send(request)
            if response is None:
                continue
            finished = time.monotonic()
            # A request still running at the end counts for its share inside the slice (and
            # it finishes before the next slice starts: nothing spills over).
            completed += min(1.0, (end - started) / (finished - started)) if finished > end else 1.0
            latencies.append((finished - started) * 1000)
            server_ms = _server_ms(response)
            if server_ms is not None:
                server.append(server_ms)
            hits += response.getheader("X-Sprig-Cache") == "hit"
        connection.close()
        results.put((latencies, server, completed, dict(errors), hits))


class SlicedClients:
    """``clients`` processes that stay up for the whole run and drive one named workload at a
    time for a slice, all starting and stopping together (``CLOCK_MONOTONIC`` is shared by
    the processes). Use as a context manager; ``run_slice`` is what ``interleave`` calls.

    Each client draws its requests at random from the workload's list, or with ``in_order``
    each sends its own share of the list (every ``clients``-th) once, in order, across slices:
    for requests that must not repeat (event batches whose ids are stored once); running out
    starts the share over and counts an error."""

    def __init__(
        self,
        host: str,
        port: int,
        workloads: Mapping[str, Sequence[str | Request]],
        *,
        clients: int,
        headers: dict | None = None,
        timeout: float = 10.0,
        in_order: bool = False,
    ):
        drawn = {
            name: [Request(r) if isinstance(r, str) else r for r in requests]
            for name, requests in workloads.items()
        }
        context = mp.get_context("fork")
        self._results = context.Queue()
        self._commands = [context.Queue() for _ in range(clients)]
        self._workers = [
            context.Process(
                target=_client,
                args=(
                    host,
                    port,
                    {name: r[i::clients] if in_order else r for name, r in drawn.items()},
                    i,
                    headers or {},
                    timeout,
                    in_order,
                    commands,
                    self._results,
                ),
                daemon=True,
            )
            for i, commands in enumerate(self._commands)
        ]

    def __enter__(self) -> SlicedClients:
        for worker in self._workers:
            worker.start()
        return self

    def __exit__(self, *exc) -> None:
        for commands in self._commands:
            commands.put(None)
        for worker in self._workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.terminate()

    def run_slice(self, name: str, seconds: float) -> SliceResult:
        start = time.monotonic() + START_MARGIN_SECONDS
        for commands in self._commands:
            commands.put((name, start, start + seconds))
        latencies: list[float] = []
        server: list[float] = []
        completed = 0.0
        errors: Counter = Counter()
        hits = 0
        for _ in self._workers:
            batch, server_batch, client_completed, client_errors, client_hits = self._results.get(
                timeout=300
            )
            latencies += batch
            server += server_batch
            completed += client_completed
            errors.update(client_errors)
            hits += client_hits
        return SliceResult(
            name,
            len(latencies),
            sum(errors.values()),
            seconds,
            latencies,
            server,
            completed=completed,
            error_kinds=dict(errors),
            cache_hits=hits,
        )


# ------------------------------------------------------------------------ flags and report


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--slice-seconds`` and ``--noise-threshold``, the same in every interleaved bench."""
    parser.add_argument(
        "--slice-seconds",
        type=_positive,
        default=None,
        help=f"length of one slice ({QUICK_SLICE_SECONDS}s with --quick, else "
        f"{FULL_SLICE_SECONDS}s)",
    )
    parser.add_argument(
        "--noise-threshold",
        type=_positive,
        default=NOISE_THRESHOLD,
        help="interquartile range of the slice ratios (or median baseline step), as a share "
        "of the median ratio, beyond which a comparison is too noisy to judge",
    )


def slice_seconds(args: argparse.Namespace) -> float:
    return args.slice_seconds or (QUICK_SLICE_SECONDS if args.quick else FULL_SLICE_SECONDS)


TABLE_HEADER = (
    f"{'workload':<18} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'srv p99':>8} {'errors':>6} "
    f"{'ratio':>6} {'q1..q3':>11} {'spread':>7} {'base step':>9}  verdict"
)


def table_row(label: str, run: Interleaved) -> str:
    """One line of the shared table: pooled figures, then the median ratio and its spread."""
    f = run.figures()
    nan = float("nan")
    line = (
        f"{label:<18} {f['rps']:>8.0f} {f['p50_ms'] or nan:>7.1f} {f['p99_ms'] or nan:>7.1f} "
        f"{f['server_p99_ms'] or nan:>8.1f} {f['errors']:>6}"
    )
    if run.throughput is None:
        return line + f" {'(baseline)':>6}"
    j = run.throughput
    return line + (
        f" {j.median:>6.2f} {f'{j.q1:.2f}..{j.q3:.2f}':>11} {j.spread:>7.0%} "
        f"{j.baseline_step:>9.0%}  {j.verdict}"
    )


def print_table(runs: Mapping[str, Interleaved], labels: Mapping[str, str] | None = None) -> None:
    print(TABLE_HEADER)
    print("-" * len(TABLE_HEADER))
    for name, run in runs.items():
        print(table_row((labels or {}).get(name, name), run))
    for name, run in runs.items():
        if run.error_kinds:
            print(f"  errors in {name}: {run.error_kinds}")
    threshold = next((r.throughput.threshold for r in runs.values() if r.throughput), None)
    if threshold is not None:
        print(
            "\nratio = median over slices of a slice's req/s over the mean of the baseline slices "
            "around it; q1..q3 its interquartile range; spread = (q3 - q1) / ratio; base step = "
            "median change between the two baselines around a slice; too noisy to judge when "
            f"either is above {threshold:.0%}. Latencies are pooled over all slices."
        )


def describe(rounds: int, slice_seconds: float, measured: int) -> str:
    """The run's shape, for a bench's heading."""
    total = (2 * measured * rounds + 1) * slice_seconds
    return (
        f"{rounds} rounds of {slice_seconds:g}s slices, the baseline around each "
        f"({rounds * slice_seconds:g}s per workload, {total:g}s in all)"
    )


# ------------------------------------------------------------------ at a stated load


def add_paced_arguments(parser: argparse.ArgumentParser) -> None:
    """The open-loop phase's flags (``paced_latencies``), for benches of reads."""
    parser.add_argument(
        "--paced-share",
        type=float,
        default=0.5,
        metavar="S",
        help="then each workload again alone, open-loop, requests arriving at S times its own "
        "closed-loop throughput (Poisson): its latency at a stated load, not the queue the "
        "clients make; 0 skips",
    )
    parser.add_argument(
        "--paced-seconds", type=_positive, default=None, help="per workload, open-loop"
    )


def paced_latencies(
    port: int,
    workloads: Mapping[str, Sequence[str | Request]],
    runs: Mapping[str, Interleaved],
    args: argparse.Namespace,
    *,
    default_seconds: float,
) -> dict[str, dict]:
    """Each workload alone, open-loop, at ``--paced-share`` of the throughput it reached in
    the interleaved closed-loop run (``loadgen.paced``): server p50 and p99, and the latency
    from each request's scheduled time. Closed-loop clients keep the server saturated, so
    their latencies are mostly the queue their number makes (four clients on two cores:
    about twice a request's own time); a page is judged by its latency at a load it is meant
    to carry. Empty when the share is 0."""
    out: dict[str, dict] = {}
    if args.paced_share <= 0:
        return out
    seconds = args.paced_seconds or default_seconds
    for name, requests in workloads.items():
        rate = args.paced_share * runs[name].rps
        if rate <= 0:
            continue
        result = loadgen.paced(name, "127.0.0.1", port, requests, rate=rate, duration=seconds)
        server = result.server_ms
        out[name] = {
            "rate": round(rate, 1),
            "requests": result.requests,
            "errors": result.errors,
            "error_kinds": result.error_kinds,
            "late_share": round(result.late / result.requests, 3) if result.requests else None,
            "server_p50_ms": round(statistics.median(server), 2) if server else None,
            "server_p99_ms": round(percentile(server, 99), 2) if server else None,
            "p50_ms": round(result.p50, 2) if result.latencies_ms else None,
            "p99_ms": round(result.p99, 2) if result.latencies_ms else None,
        }
    return out


def print_paced(paced: dict[str, dict], share: float) -> None:
    nan = float("nan")
    print(
        f"\nopen-loop, each workload alone, requests arriving at {share:.0%} of its own "
        "closed-loop throughput (Poisson): server time (of the answers that send it) and the "
        "latency from each request's scheduled time"
    )
    header = (
        f"{'workload':<18} {'req/s':>7} {'srv p50':>8} {'srv p99':>8} {'p50':>7} {'p99':>7} "
        f"{'late':>6} {'errors':>6}"
    )
    print(header)
    print("-" * len(header))
    for name, f in paced.items():
        print(
            f"{name:<18} {f['rate']:>7.1f} {f['server_p50_ms'] or nan:>8.1f} "
            f"{f['server_p99_ms'] or nan:>8.1f} {f['p50_ms'] or nan:>7.1f} "
            f"{f['p99_ms'] or nan:>7.1f} {f['late_share'] or 0:>6.1%} {f['errors']:>6}"
        )
    for name, f in paced.items():
        if f["error_kinds"]:
            print(f"  errors in {name}: {f['error_kinds']}")
