"""A small closed-loop HTTP load generator: N client processes with keep-alive connections.

Processes, not threads, so the clients are not serialized by one GIL. Each client draws a path
from the endpoint's path list, sends it, and records the latency; the parent merges results.
"""

from __future__ import annotations

import http.client
import multiprocessing as mp
import random
import statistics
import time
from dataclasses import dataclass


@dataclass
class Result:
    name: str
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
        return ordered[index]

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else float("nan")

    @property
    def p99(self) -> float:
        return self.percentile(99)


def _client(host, port, paths, duration, seed, headers, queue) -> None:
    rng = random.Random(seed)
    connection = http.client.HTTPConnection(host, port, timeout=10)
    latencies, errors = [], 0
    deadline = time.perf_counter() + duration
    while time.perf_counter() < deadline:
        path = rng.choice(paths)
        started = time.perf_counter()
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            response.read()
            if response.status >= 400:
                errors += 1
        except (OSError, http.client.HTTPException):
            errors += 1
            connection.close()
            connection = http.client.HTTPConnection(host, port, timeout=10)
            continue
        latencies.append((time.perf_counter() - started) * 1000)
    connection.close()
    queue.put((latencies, errors))


def run(
    name: str,
    host: str,
    port: int,
    paths: list[str],
    *,
    clients: int,
    duration: float,
    headers: dict | None = None,
) -> Result:
    queue: mp.Queue = mp.Queue()
    workers = [
        mp.Process(target=_client, args=(host, port, paths, duration, i, headers or {}, queue))
        for i in range(clients)
    ]
    for worker in workers:
        worker.start()
    latencies: list[float] = []
    errors = 0
    for _ in workers:
        batch, batch_errors = queue.get()
        latencies += batch
        errors += batch_errors
    for worker in workers:
        worker.join()
    # Every client runs for exactly `duration` after its own start.
    elapsed = duration
    return Result(name, len(latencies), errors, elapsed, latencies)
