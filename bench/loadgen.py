"""A small closed-loop HTTP load generator: N client processes with keep-alive connections.

Processes, not threads, so the clients are not serialized by one GIL. Each client draws a
request from the list, sends it, and records the latency it saw and the server's own time when
the response says it (``Server-Timing``); the parent merges results.
"""

from __future__ import annotations

import http.client
import multiprocessing as mp
import random
import statistics
import time
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


def _client(host, port, requests, duration, seed, headers, timeout, queue) -> None:
    rng = random.Random(seed)
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    latencies, server, errors = [], [], 0
    deadline = time.perf_counter() + duration
    while time.perf_counter() < deadline:
        request = rng.choice(requests)
        started = time.perf_counter()
        try:
            connection.request(
                request.method,
                request.path,
                body=request.body,
                headers={**headers, **(request.headers or {})},
            )
            response = connection.getresponse()
            response.read()
            if response.status >= 400:
                errors += 1
        except (OSError, http.client.HTTPException):
            errors += 1
            connection.close()
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
            continue
        latencies.append((time.perf_counter() - started) * 1000)
        server_ms = _server_ms(response)
        if server_ms is not None:
            server.append(server_ms)
    connection.close()
    queue.put((latencies, server, errors))


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
