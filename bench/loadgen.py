"""A small HTTP load generator: N client processes with keep-alive connections.

Processes, not threads, so the clients are not serialized by one GIL. Each client draws a
request from the list, sends it, and records the latency it saw and the server's own time when
the response says it (``Server-Timing``); the parent merges results.

``run`` is closed-loop: each client sends its next request when the last one is answered, so
the server is saturated and latency is mostly the queue that the number of clients makes.
``paced`` is open-loop: requests arrive at a set rate (Poisson), as people arrive, whether or
not earlier ones are answered: the latency a page has at a stated load.
"""

from __future__ import annotations

import contextlib
import http.client
import multiprocessing as mp
import random
import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass, field


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank ``p``th percentile (NaN for no values)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


@dataclass
class Result:
    name: str
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]
    server_ms: list[float] = field(default_factory=list)  # Server-Timing, when sent

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        return percentile(self.latencies_ms, p)

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else float("nan")

    @property
    def p99(self) -> float:
        return self.percentile(99)


@dataclass(frozen=True)
class Request:
    """One request a client may draw: a GET of ``path`` unless told otherwise; ``headers``
    add to the run's common headers."""

    path: str
    method: str = "GET"
    body: str | bytes | None = None
    headers: dict | None = None


def _server_ms(response) -> float | None:
    """The server's own time from a ``Server-Timing: app;dur=12.3`` header, if it sent one."""
    timing = response.getheader("Server-Timing")
    if timing and "dur=" in timing:
        return float(timing.split("dur=")[1].split(",")[0].split(";")[0])
    return None


@dataclass
class PacedResult(Result):
    """An open-loop run: ``latencies_ms`` count from each request's scheduled time (a request
    sent late because its connection was still busy counts its wait: no coordinated omission);
    ``late`` requests were sent after their time."""

    rate: float = 0.0
    late: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)


class KeepAlive:
    """One keep-alive connection: sends requests, counts what went wrong by kind (an error
    status, or the exception's name), and opens a fresh connection after a failure.

    A server closes a connection left idle past its keep-alive timeout (gunicorn's: 2 s), as
    an open-loop client's often are; the next request on it then finds it closed before any
    answer. Like a browser (and urllib3), a GET or HEAD that meets a closed reused
    connection is sent once more on a fresh one, and not counted as an error."""

    def __init__(self, host: str, port: int, timeout: float, headers: dict, *, connect=False):
        self.host, self.port, self.timeout, self.headers = host, port, timeout, headers
        self.errors: Counter = Counter()
        self.connection = http.client.HTTPConnection(host, port, timeout=timeout)
        self.reused = False  # whether the connection has answered before
        if connect:  # before a timed start; failing, the first request reconnects
            with contextlib.suppress(OSError):
                self.connection.connect()

    def _reconnect(self) -> None:
        self.connection.close()
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        self.reused = False

    def _exchange(self, request: Request):
        self.connection.request(
            request.method,
            request.path,
            body=request.body,
            headers={**self.headers, **(request.headers or {})},
        )
        response = self.connection.getresponse()
        response.read()
        self.reused = True
        return response

    def send(self, request: Request):
        """The response, read; None when the request failed (counted)."""
        try:
            try:
                response = self._exchange(request)
            except _CLOSED_WHILE_IDLE:
                if not (self.reused and request.method in ("GET", "HEAD")):
                    raise
                self._reconnect()
                response = self._exchange(request)
        except (OSError, http.client.HTTPException) as error:
            self.errors[type(error).__name__] += 1
            self._reconnect()
            return None
        if response.status >= 400:
            self.errors[f"HTTP {response.status}"] += 1
        return response

    def close(self) -> None:
        self.connection.close()


# What sending on a connection the server has closed raises, before any answer.
_CLOSED_WHILE_IDLE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def _client(host, port, requests, duration, seed, headers, timeout, queue) -> None:
    rng = random.Random(seed)
    connection = KeepAlive(host, port, timeout, headers)
    latencies, server = [], []
    deadline = time.perf_counter() + duration
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        response = connection.send(rng.choice(requests))
        if response is None:
            continue
        latencies.append((time.perf_counter() - started) * 1000)
        server_ms = _server_ms(response)
        if server_ms is not None:
            server.append(server_ms)
    connection.close()
    queue.put((latencies, server, sum(connection.errors.values())))


def run(
    name: str,
    host: str,
    port: int,
    requests: list[str | Request],
    *,
    clients: int,
    duration: float,
    headers: dict | None = None,
    timeout: float = 10.0,
) -> Result:
    """``clients`` processes, each drawing from ``requests`` (a plain string is a GET of that
    path) for ``duration`` seconds over one keep-alive connection."""
    drawn = [Request(r) if isinstance(r, str) else r for r in requests]
    queue: mp.Queue = mp.Queue()
    workers = [
        mp.Process(
            target=_client,
            args=(host, port, drawn, duration, i, headers or {}, timeout, queue),
        )
        for i in range(clients)
    ]
    for worker in workers:
        worker.start()
    latencies: list[float] = []
    server: list[float] = []
    errors = 0
    for _ in workers:
        batch, server_batch, batch_errors = queue.get()
        latencies += batch
        server += server_batch
        errors += batch_errors
    for worker in workers:
        worker.join()
    # Every client runs for exactly `duration` after its own start.
    return Result(name, len(latencies), errors, duration, latencies, server)


def _paced_source(host, port, requests, rate, start, end, rng, headers, timeout, out) -> None:
    """One connection's arrivals: a Poisson process at ``rate``, each sent at its time or, if
    the connection is still busy, as soon as it is free (late)."""
    connection = KeepAlive(host, port, timeout, headers, connect=True)
    latencies, server, late = [], [], 0
    due = start
    while (due := due + rng.expovariate(rate)) < end:
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        else:
            late += 1
        response = connection.send(rng.choice(requests))
        if response is None:
            continue
        latencies.append((time.monotonic() - due) * 1000)
        server_ms = _server_ms(response)
        if server_ms is not None:
            server.append(server_ms)
    connection.close()
    out.append((latencies, server, connection.errors, late))


def _paced_client(
    host, port, requests, rate, connections, duration, start, seed, headers, timeout, queue
):
    """One process's share of the arrivals, over ``connections`` threads of one connection
    each (waiting threads hold no interpreter lock: a process keeps up with dozens)."""
    out: list = []
    threads = [
        threading.Thread(
            target=_paced_source,
            args=(
                host,
                port,
                requests,
                rate / connections,
                start,
                start + duration,
                random.Random(seed * 1000 + i),
                headers,
                timeout,
                out,
            ),
        )
        for i in range(connections)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies = [ms for part in out for ms in part[0]]
    server = [ms for part in out for ms in part[1]]
    errors = sum((part[2] for part in out), Counter())
    queue.put((latencies, server, dict(errors), sum(part[3] for part in out)))


def paced(
    name: str,
    host: str,
    port: int,
    requests: list[str | Request],
    *,
    rate: float,
    duration: float,
    clients: int = 4,
    connections: int = 8,
    headers: dict | None = None,
    timeout: float = 30.0,
) -> PacedResult:
    """Requests arriving at ``rate`` a second for ``duration`` seconds, as a Poisson process
    split over ``clients`` processes of ``connections`` connections each (the sum of
    independent Poisson processes is one). An arrival whose connection is still busy goes out
    when it is free, late; with enough connections that few are, the server sees the set
    rate, as it would from people each on their own connection."""
    drawn = [Request(r) if isinstance(r, str) else r for r in requests]
    context = mp.get_context("fork")
    queue = context.Queue()
    start = time.monotonic() + 0.5  # every process has started by then
    workers = [
        context.Process(
            target=_paced_client,
            args=(
                host,
                port,
                drawn,
                rate / clients,
                connections,
                duration,
                start,
                i,
                headers or {},
                timeout,
                queue,
            ),
        )
        for i in range(clients)
    ]
    for worker in workers:
        worker.start()
    latencies: list[float] = []
    server: list[float] = []
    errors: Counter = Counter()
    late = 0
    for _ in workers:
        batch, server_batch, batch_errors, batch_late = queue.get(timeout=duration + 120)
        latencies += batch
        server += server_batch
        errors.update(batch_errors)
        late += batch_late
    for worker in workers:
        worker.join()
    return PacedResult(
        name,
        len(latencies),
        sum(errors.values()),
        duration,
        latencies,
        server,
        rate=rate,
        late=late,
        error_kinds=dict(errors),
    )
