"""Prometheus metrics, served at ``/metrics`` (to a token with the ``metrics:read`` scope: the
factory passes the check, the platform knows no domain).

Built on ``prometheus_client`` in its multiprocess mode: when ``PROMETHEUS_MULTIPROC_DIR`` is
set (gunicorn's config sets it for its workers, and a Celery worker on the same host given the
same directory joins them), every process writes its samples to files there and a scrape of
any one worker sums them all. Without it, a process reports only itself (tests, ``flask run``).

Each labelled series the hot paths touch is resolved once here (``.labels(...)`` returns a
child kept by the library), so counting costs no allocation per request beyond the route's own
child, which the library caches after its first use.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from flask import Flask, Response, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    start_http_server,
)
from sqlalchemy.engine import Engine

# prometheus_client writes into this directory as soon as the metrics below are defined.
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)

METRICS_PATH = "/metrics"

REQUEST_SECONDS = Histogram(
    "sprig_http_request_duration_seconds",
    "Time to answer an HTTP request, by route template, method and status.",
    ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
EVENTS = Counter("sprig_events", "Usage events received, by what became of each.", ["status"])
EVENTS_BY_STATUS = {status: EVENTS.labels(status) for status in ("stored", "duplicate", "rejected")}
FEEDBACK = Counter(
    "sprig_feedback", "Ratings recorded: a new one, or one replacing the rater's last.", ["outcome"]
)
FEEDBACK_CREATED = FEEDBACK.labels("created")
FEEDBACK_REPLACED = FEEDBACK.labels("replaced")
PUBLISHES = Counter(
    "sprig_publishes",
    "Sub-agents and versions published: a new root, a fork, or a new version.",
    ["kind"],
)
PUBLISHES_BY_KIND = {kind: PUBLISHES.labels(kind) for kind in ("root", "fork", "version")}
SUGGESTION_SECONDS = Histogram(
    "sprig_suggestion_duration_seconds",
    "Time to answer a suggestion request.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
SUGGESTIONS = Counter("sprig_suggestions", "Suggestion answers, by verdict.", ["verdict"])
SUGGESTIONS_BY_VERDICT = {
    verdict: SUGGESTIONS.labels(verdict) for verdict in ("fits", "weak", "none")
}
ROLLUP_SECONDS = Histogram(
    "sprig_rollup_duration_seconds",
    "Time of one rollup task run (draining the usage marks).",
    buckets=(0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0),
)
ROLLUP_MARKS = Counter("sprig_rollup_marks", "Usage marks the rollup consumed.")
ROLLUP_FINISHED = Gauge(
    "sprig_rollup_last_finished_timestamp_seconds",
    "When the last rollup task run finished (Unix time).",
    multiprocess_mode="mostrecent",
)
RANKING_SECONDS = Histogram(
    "sprig_ranking_duration_seconds",
    "Time of one ranking task run, by mode (full, incremental, skipped when nothing changed).",
    ["mode"],
    buckets=(0.01, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0),
)
READ_CACHE = Counter(
    "sprig_read_cache_answers",
    "Anonymous catalog reads the read cache may answer: answered from it (hit) or built (miss).",
    ["outcome"],
)
READ_CACHE_HIT, READ_CACHE_MISS = READ_CACHE.labels("hit"), READ_CACHE.labels("miss")
EXPORT_RUNS = Counter(
    "sprig_export_runs", "Reward-export runs executed, by final status.", ["status"]
)
TASK_SECONDS = Histogram(
    "sprig_celery_task_duration_seconds",
    "Time a Celery task ran, by task name and outcome.",
    ["task", "state"],
    buckets=(0.01, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0),
)
TASK_FAILURES = Counter("sprig_celery_task_failures", "Celery tasks that raised.", ["task"])
TASK_RETRIES = Counter(
    "sprig_celery_task_retries", "Celery tasks that asked to be retried.", ["task"]
)
POOL_CHECKED_OUT = Gauge(
    "sprig_db_pool_checked_out",
    "Database connections in use, summed over live processes, by pool (write, read).",
    ["pool"],
    multiprocess_mode="livesum",
)
POOL_SIZE = Gauge(
    "sprig_db_pool_size",
    "Database connections each pool keeps open (its size), summed over live processes.",
    ["pool"],
    multiprocess_mode="livesum",
)


def record_events(counts: Mapping[str, int]) -> None:
    """Count a committed batch: how many events became each status (one add per status, not
    one per event)."""
    for status, count in counts.items():
        EVENTS_BY_STATUS[status].inc(count)


def record_feedback(created: bool) -> None:
    (FEEDBACK_CREATED if created else FEEDBACK_REPLACED).inc()


def record_publish(kind: str) -> None:
    PUBLISHES_BY_KIND[kind].inc()


def record_suggestion(seconds: float, verdict: str) -> None:
    SUGGESTION_SECONDS.observe(seconds)
    SUGGESTIONS_BY_VERDICT[verdict].inc()


def record_rollup(seconds: float, marks: int) -> None:
    ROLLUP_SECONDS.observe(seconds)
    ROLLUP_MARKS.inc(marks)
    ROLLUP_FINISHED.set(time.time())


def record_ranking(seconds: float, mode: str) -> None:
    RANKING_SECONDS.labels(mode).observe(seconds)


def record_read_cache(hit: bool) -> None:
    (READ_CACHE_HIT if hit else READ_CACHE_MISS).inc()


def record_export_run(status: str) -> None:
    EXPORT_RUNS.labels(status).inc()


# How often each process samples its pools into the gauges. Prometheus scrapes every 15 s or
# so; a gauge moved at every checkout instead (a locked write to the metrics file each time)
# cost a database-backed request up to 80 µs, more than all its other metrics together.
POOL_SAMPLE_SECONDS = 1.0
# The pools this process reports, by name: the latest app's (a process serves one app; tests
# build many, and only the newest is live).
_watched_pools: dict[str, object] = {}
_sampler_pid: int | None = None


def sample_pools() -> None:
    """Set the pool gauges from the pools' own counts, now."""
    for name, pool in list(_watched_pools.items()):
        checked_out = getattr(pool, "checkedout", None)
        if callable(checked_out):
            POOL_CHECKED_OUT.labels(name).set(checked_out())


def _sample_pools_forever() -> None:
    while True:
        time.sleep(POOL_SAMPLE_SECONDS)
        sample_pools()


def _start_pool_sampler() -> None:
    """One sampling thread per process (a forked child starts its own: threads do not
    survive a fork)."""
    global _sampler_pid
    if _sampler_pid == os.getpid() or not _watched_pools:
        return
    _sampler_pid = os.getpid()
    threading.Thread(target=_sample_pools_forever, name="sprig-pool-sampler", daemon=True).start()


os.register_at_fork(after_in_child=_start_pool_sampler)


def watch_pool(engine: Engine, name: str) -> None:
    """Report ``engine``'s pool under ``name``: its size once, the connections in use sampled
    every second and at each scrape (a gauge per process, summed over the live ones)."""
    size = getattr(engine.pool, "size", None)
    if callable(size):
        POOL_SIZE.labels(name).set(size())
    _watched_pools[name] = engine.pool
    sample_pools()
    _start_pool_sampler()


# A client may send any token as its method; each would become a series of its own.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# (rule, method, status) -> the histogram's child: ``labels()`` builds a key, takes a lock and
# looks it up on every call; a dict lookup here does the same for the few hundred there are.
_REQUEST_SERIES: dict[tuple[str, str, int], object] = {}


def _request_series(route: str, method: str, status: int):
    if method not in KNOWN_METHODS:
        method = "other"
    key = (route, method, status)
    series = _REQUEST_SERIES.get(key)
    if series is None:
        series = _REQUEST_SERIES.setdefault(key, REQUEST_SECONDS.labels(route, method, str(status)))
    return series


def _observe_request(response: Response) -> Response:
    """Time the request on the clock the request log started (``g.request_started``: its hook
    runs before all others, and this one before the log's last)."""
    started = g.get("request_started")
    if started is not None:
        current = request._get_current_object()
        rule = current.url_rule
        route = rule.rule if rule is not None else "unmatched"
        _request_series(route, current.method, response.status_code).observe(
            time.perf_counter() - started
        )
    return response


def install_metrics(
    app: Flask, engine: Engine, read_engine: Engine, authorize: Callable[[], None], backlogs
) -> None:
    """Time every request, watch the pools and serve ``/metrics`` to callers ``authorize``
    lets through (it raises otherwise), with ``backlogs``' gauges read at each scrape."""
    app.after_request(_observe_request)
    watch_pool(engine, "write")
    if read_engine is not engine:
        watch_pool(read_engine, "read")
    backlog = CollectorRegistry(auto_describe=False)
    backlog.register(backlogs)

    @app.get(METRICS_PATH)
    @app.doc(hide=True)
    def metrics():
        authorize()
        sample_pools()
        return Response(scrape() + generate_latest(backlog), content_type=CONTENT_TYPE_LATEST)


def serve_worker_metrics(address: str):
    """Serve this process's metrics (every pool process's in multiprocess mode) over plain HTTP
    at ``host:port``, in a daemon thread; return the server. It has no token check: bind it to
    a private network."""
    host, _, port = address.rpartition(":")
    registry = REGISTRY
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        registry = every_process_registry(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    server, _thread = start_http_server(int(port), addr=host or "127.0.0.1", registry=registry)
    return server


def scrape() -> bytes:
    """This process's samples, or every process's in multiprocess mode."""
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        return generate_latest(REGISTRY)
    return generate_latest(every_process_registry(os.environ["PROMETHEUS_MULTIPROC_DIR"]))


class _SizedFilesCollector:
    """prometheus_client's multiprocess merge over the files in ``path`` that a process has
    sized. The library (0.26) creates a process's file before it sizes it, so for a moment the
    file is empty, and reading it raises and fails the whole scrape, every process's samples
    with it; a process killed in that moment (a ``kill -9`` of a worker at its first request)
    leaves it empty for good (prometheus/client_python issue 1199). An empty file holds no
    samples yet, so it is left out."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def collect(self):
        sized = []
        for file in self.path.glob("*.db"):
            try:
                if file.stat().st_size > 0:
                    sized.append(str(file))
            except FileNotFoundError:  # its process was marked dead meanwhile
                continue
        return multiprocess.MultiProcessCollector.merge(sized, accumulate=True)


def every_process_registry(path: str) -> CollectorRegistry:
    """A registry of every process's samples written under ``path`` (multiprocess mode)."""
    registry = CollectorRegistry()
    registry.register(_SizedFilesCollector(path))
    return registry


_task_started: dict[str, float] = {}


def _task_prerun(task_id=None, **_extra) -> None:
    _task_started[task_id] = time.perf_counter()


def _task_postrun(task_id=None, task=None, state=None, **_extra) -> None:
    started = _task_started.pop(task_id, None)
    if started is not None:
        TASK_SECONDS.labels(task.name, state or "UNKNOWN").observe(time.perf_counter() - started)


def _task_failure(sender=None, **_extra) -> None:
    TASK_FAILURES.labels(sender.name).inc()


def _task_retry(sender=None, **_extra) -> None:
    TASK_RETRIES.labels(sender.name).inc()


def install_task_metrics(worker_metrics_address: str = "") -> None:
    """Time, and count the failures and retries of, every task this process runs (the Celery
    worker calls it; its uids make a second call harmless). With an address, the worker's main
    process serves them: it has no web app to answer /metrics for it."""
    from celery import signals

    def serve(**_extra) -> None:
        serve_worker_metrics(worker_metrics_address)

    def forget_pool_process(**_extra) -> None:
        if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
            multiprocess.mark_process_dead(os.getpid())

    if worker_metrics_address:
        signals.worker_init.connect(serve, weak=False, dispatch_uid="sprig.metrics.serve")
    signals.worker_process_shutdown.connect(
        forget_pool_process, weak=False, dispatch_uid="sprig.metrics.process_shutdown"
    )
    signals.task_prerun.connect(_task_prerun, weak=False, dispatch_uid="sprig.metrics.prerun")
    signals.task_postrun.connect(_task_postrun, weak=False, dispatch_uid="sprig.metrics.postrun")
    signals.task_failure.connect(_task_failure, weak=False, dispatch_uid="sprig.metrics.failure")
    signals.task_retry.connect(_task_retry, weak=False, dispatch_uid="sprig.metrics.retry")
