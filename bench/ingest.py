"""Event ingestion end to end (HTTP → gunicorn → PostgreSQL) against a raw COPY, same run.

Loads users and sub-agents into a throwaway PostgreSQL, starts gunicorn (2 gthread workers × 8
threads, as in production) and drives ``POST /api/v1/events`` from several client processes
with pre-serialized 1,000-event batches (about 5% deliberate duplicates of earlier event ids)
until N events are stored, at N/4 and at N so memory can be seen staying flat. Then it times
a PostgreSQL ``COPY`` of N rows into usage_event itself (the like-for-like ceiling, foreign keys
included) and into a ``LIKE … INCLUDING ALL`` copy (no foreign keys), and ``run_rollup`` over
R events spread over 30 days. Every phase is checked with SQL. If end to end misses a quarter
of the COPY rate (or with --profile) the endpoint is profiled in-process. The last line is JSON.

    python bench/ingest.py [--quick] [--events N] [--clients C] [--rollup-events R] [--seed S]
                           [--profile]

--rollup-events 0 skips the rollup phase (the slowest part of --quick).

Without SPRIG_TEST_POSTGRES_URL (or SPRIG_BENCH_DATABASE_URL) it re-runs itself under
scripts/test-services.sh, which starts a throwaway PostgreSQL and Redis on loopback.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import multiprocessing as mp
import os
import queue as queue_module
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.catalog import copy_people, free_port  # noqa: E402
from bench.loadgen import Result  # noqa: E402
from bench.servers import database_url_or_rerun_with_servers  # noqa: E402

PATH = "/api/v1/events"
BATCH = 1000
DUPLICATE_SHARE = 0.05
TARGET_RATIO = 0.25  # end to end must reach a quarter of the COPY rate
# open 8, action 7, session_end 4, error 1 (out of 20)
KIND_TABLE = ("open",) * 8 + ("action",) * 7 + ("session_end",) * 4 + ("error",)
EVENT_COLUMNS = (
    "event_id, client_id, user_id, subagent_id, version_id, kind, occurred_at, occurred_day, "
    "duration_ms, properties, exposure_id, received_at"
)
ACTION_PROPERTIES = '{"screen":"home"}'
NULL = "\\N"  # COPY text format


def _dsn(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


# ---- setup ------------------------------------------------------------------------------


def setup(url: str, n_users: int, n_subagents: int, seed: int) -> dict:
    """Migrate a fresh schema; COPY people, public sub-agents (one version each) and a service
    account; issue the service a token with ``events:write``; read the ids back."""
    import psycopg
    from sqlmodel import Session

    from market.identity.models import User
    from market.identity.tokens import issue_token
    from market.platform.db import make_engine
    from market.platform.migrate import upgrade

    dsn = _dsn(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    upgrade(url)

    rng = random.Random(seed)
    now = datetime.now(UTC)
    started = time.perf_counter()
    service_id = n_users + 1
    manifest = json.dumps({"name": "x", "entry": "index.html", "scopes": [], "hosts": []})
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        copy_people(cur, n_users, now, services=((service_id, "bench-ingest"),))
        cur.execute(
            "INSERT INTO bundle_blob (sha256, content, size_bytes) VALUES (%s, %s, 0)",
            ("0" * 64, b""),
        )
        with cur.copy(
            "COPY subagent (id, title, summary, story, category, tags, author_id, visibility, "
            "status, root_id, depth, ancestry, latest_version_id, dedupe_key, install_count, "
            "fork_count, created_at, updated_at) FROM STDIN"
        ) as copy:
            for i in range(1, n_subagents + 1):
                copy.write_row(
                    (i, f"Tracker {i}", "A tracker.", "I built it.", "fitness", "[]",
                     rng.randint(1, n_users), "public", "active", i, 0, "", i, f"bench:{i}",
                     0, 0, now, now)
                )  # fmt: skip
        with cur.copy(
            "COPY subagent_version (id, subagent_id, number, sha256, manifest, changelog, "
            "status, size_bytes, file_count, created_at) FROM STDIN"
        ) as copy:
            for i in range(1, n_subagents + 1):
                copy.write_row((i, i, 1, "0" * 64, manifest, "", "active", 0, 1, now))
        for table in ("user_account", "subagent", "subagent_version"):
            top = f"SELECT max(id) FROM {table}"  # noqa: S608 - constant table names
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), ({top}))")
        conn.commit()

    engine = make_engine(url)
    with Session(engine) as session:
        token = issue_token(session, session.get(User, service_id), ["events:write"], "bench")
        session.commit()
    engine.dispose()

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        users = [r[0] for r in conn.execute(
            "SELECT id FROM user_account WHERE kind = 'person' ORDER BY id")]  # fmt: skip
        versions = conn.execute(
            "SELECT v.id, v.subagent_id FROM subagent_version v JOIN subagent s "
            "ON s.id = v.subagent_id WHERE s.visibility = 'public' AND s.status = 'active' "
            "ORDER BY v.id"
        ).fetchall()
    return {
        "users": users,
        # (subagent_id, version_id) pairs an event may name
        "targets": [(subagent_id, version_id) for version_id, subagent_id in versions],
        "client_id": service_id,
        "token": token,
        "load_seconds": round(time.perf_counter() - started, 2),
    }


# ---- synthetic events -------------------------------------------------------------------


class EventMaker:
    """Valid random events in the last ``span`` seconds: as API JSON or as COPY text rows."""

    def __init__(self, seed: int, users: list[int], targets: list[tuple[int, int]], span: float):
        self.rng = random.Random(seed)
        self.users = users
        self.targets = targets
        self.now = time.time()
        self.span = span

    def fields(self) -> tuple:
        rng = self.rng
        event_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        subagent_id, version_id = self.targets[rng.randrange(len(self.targets))]
        user_id = self.users[rng.randrange(len(self.users))]
        kind = KIND_TABLE[rng.randrange(20)]
        at = datetime.fromtimestamp(self.now - rng.random() * self.span, UTC)
        duration = rng.randrange(1_000, 3_600_000) if kind == "session_end" else None
        return event_id, user_id, subagent_id, version_id, kind, at, duration

    def json(self) -> tuple[str, int]:
        event_id, user_id, subagent_id, version_id, kind, at, duration = self.fields()
        extra = ""
        if duration is not None:
            extra = f',"duration_ms":{duration}'
        elif kind == "action":
            extra = f',"properties":{ACTION_PROPERTIES}'
        text = (
            f'{{"event_id":"{event_id}","user_id":{user_id},"subagent_id":{subagent_id},'
            f'"version_id":{version_id},"kind":"{kind}",'
            f'"occurred_at":"{at.isoformat(timespec="milliseconds")}"{extra}}}'
        )
        return text, subagent_id

    def copy_row(self, client_id: int, received_at: str) -> str:
        event_id, user_id, subagent_id, version_id, kind, at, duration = self.fields()
        properties = ACTION_PROPERTIES if kind == "action" else "{}"
        return (
            f"{event_id}\t{client_id}\t{user_id}\t{subagent_id}\t{version_id}\t{kind}\t"
            f"{at.isoformat()}\t{at.date().isoformat()}\t"
            f"{NULL if duration is None else duration}\t{properties}\t{NULL}\t{received_at}\n"
        )


def build_batches(maker: EventMaker, new_events: int, duplicate_share: float, batch: int):
    """Bodies of ``batch`` events holding ``new_events`` distinct new ids in all, plus about
    ``duplicate_share`` re-sends of earlier events (same id and payload, as a retry would)."""
    rng = maker.rng
    recent: collections.deque[str] = collections.deque(maxlen=10_000)
    per_subagent: collections.Counter[int] = collections.Counter()
    bodies: list[tuple[bytes, int, int]] = []
    remaining = new_events
    while remaining:
        items: list[str] = []
        fresh = duplicates = 0
        while len(items) < batch and remaining - fresh > 0:
            if recent and rng.random() < duplicate_share:
                items.append(recent[rng.randrange(len(recent))])
                duplicates += 1
                continue
            text, subagent_id = maker.json()
            per_subagent[subagent_id] += 1
            items.append(text)
            recent.append(text)
            fresh += 1
        remaining -= fresh
        bodies.append((('{"events":[' + ",".join(items) + "]}").encode(), fresh, duplicates))
    return bodies, per_subagent


# ---- HTTP clients -----------------------------------------------------------------------


def _send(conn_box: list, body: bytes, headers: dict, port: int, stats: dict) -> bytes:
    """POST until a 202 (bodies are idempotent: each event id is stored once)."""
    for attempt in range(20):
        try:
            conn_box[0].request("POST", PATH, body, headers)
            response = conn_box[0].getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            stats["errors"] += 1
            conn_box[0].close()
            conn_box[0] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            time.sleep(0.05 * attempt)
            continue
        if response.status == 202:
            return data
        stats["errors"] += 1
        stats[f"http_{response.status}"] = stats.get(f"http_{response.status}", 0) + 1
        if response.status == 429:
            time.sleep(float(response.getheader("Retry-After", "1")))
        elif response.status < 500:
            raise RuntimeError(f"HTTP {response.status}: {data[:500]!r}")
        else:
            time.sleep(0.05 * attempt)
    raise RuntimeError("a batch failed 20 times")


def _client(index, port, token, setup_data, quota, seed, ready, out, go) -> None:
    try:
        maker = EventMaker(seed, setup_data["users"], setup_data["targets"], 86_400)
        bodies, per_subagent = build_batches(maker, quota, DUPLICATE_SHARE, BATCH)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        stats = {"errors": 0}
        box = [http.client.HTTPConnection("127.0.0.1", port, timeout=60)]
        # Warm-up (pools, lazy imports) with ids of their own; the parent truncates after.
        warm = EventMaker(seed + 1_000_003, setup_data["users"], setup_data["targets"], 86_400)
        for body, _, _ in build_batches(warm, 400, 0.0, 200)[0]:
            _send(box, body, headers, port, stats)
        box[0].close()
        ready.put(index)
        go.wait()
        stats = {"errors": 0}
        box = [http.client.HTTPConnection("127.0.0.1", port, timeout=60)]
        latencies, responses = [], []
        started = time.monotonic()  # CLOCK_MONOTONIC: comparable across processes
        for body, _, _ in bodies:
            sent = time.monotonic()
            responses.append(_send(box, body, headers, port, stats))
            latencies.append((time.monotonic() - sent) * 1000)
        finished = time.monotonic()
        box[0].close()
        # Read the answers only now, off the clock.
        counts = collections.Counter()
        stored_ids: list[str] = []
        for data in responses:
            answer = json.loads(data)
            for name in ("stored", "duplicates", "rejected"):
                counts[name] += answer[name]
            stored_ids += [r["event_id"] for r in answer["results"] if r["status"] == "stored"]
            for r in answer["results"]:
                if r["status"] == "rejected" and counts["reasons_shown"] < 5:
                    counts["reasons_shown"] += 1
                    stats[f"rejected: {r.get('reason')}"] = 1
        out.put(
            {
                "index": index,
                "started": started,
                "finished": finished,
                "latencies": latencies,
                "batches": len(bodies),
                "sent_new": sum(b[1] for b in bodies),
                "sent_duplicates": sum(b[2] for b in bodies),
                "bytes": sum(len(b[0]) for b in bodies),
                "stored": counts["stored"],
                "duplicates": counts["duplicates"],
                "rejected": counts["rejected"],
                "stored_ids": stored_ids,
                "per_subagent": dict(per_subagent),
                "stats": stats,
            }
        )
    except BaseException:
        out.put({"index": index, "error": traceback.format_exc()})
        ready.put(index)


# ---- gunicorn and its memory ------------------------------------------------------------


def start_gunicorn(url: str, port: int, workers: int, threads: int, log_path: Path):
    env = {
        **os.environ,
        "SPRIG_DATABASE_URL": url,
        "SPRIG_SECRET_KEY": "bench",
        "SPRIG_WORKERS": str(workers),
        "SPRIG_THREADS": str(threads),
        # The limiter still runs (in Redis, as in production); only its budget is raised so
        # the bench measures ingestion rather than the configured cap.
        "SPRIG_EVENTS_PER_MINUTE": str(10**9),
        "SPRIG_LOG_LEVEL": "WARNING",
    }
    redis_url = os.environ.get("SPRIG_BENCH_REDIS_URL") or os.environ.get("SPRIG_TEST_REDIS_URL")
    if redis_url:
        env["SPRIG_REDIS_URL"] = redis_url
    log = log_path.open("wb")
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"),
         "-c", "python:market.entrypoints.gunicorn_conf",
         "--bind", f"127.0.0.1:{port}", "market.app:create_app()"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    log.close()
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/api/v1/health")
            if conn.getresponse().status == 200:
                conn.close()
                return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("gunicorn did not start: " + log_path.read_text()[-2000:])


def _status_kib(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


class RssSampler(threading.Thread):
    """Polls the gunicorn master and workers: the peak of their summed RSS, and each
    process's own high-water mark (VmHWM), kept after it exits."""

    def __init__(self, master: int, interval: float = 0.1):
        super().__init__(daemon=True)
        self.master, self.interval = master, interval
        self.peak_kib = 0
        self.hwm_kib: dict[int, int] = {}
        self._halt = threading.Event()

    def sample(self) -> None:
        pids = [self.master, *_children(self.master)]
        self.peak_kib = max(self.peak_kib, sum(_status_kib(p, "VmRSS:") for p in pids))
        for pid in pids:
            self.hwm_kib[pid] = max(self.hwm_kib.get(pid, 0), _status_kib(pid, "VmHWM:"))

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.sample()


class SqlTimer:
    """Wall time of every SQL statement run through ``engine`` (cursor events, cheap enough to
    leave on), grouped as "VERB table"."""

    def __init__(self, engine):
        self.engine = engine
        self.by_statement: dict[str, list] = {}

    @staticmethod
    def label(statement: str) -> str:
        words = statement.split()
        verb = words[0].upper() if words else "?"
        table = "?"
        for marker in ("FROM", "INTO", "UPDATE"):
            if marker in words:
                table = words[words.index(marker) + 1]
                break
        if verb == "SELECT" and len(words) > 1 and words[1].upper() == "DISTINCT":
            verb = "SELECT DISTINCT"
        return f"{verb} {table.split('(')[0]}"

    def _before(self, conn, cursor, statement, parameters, context, executemany):
        conn.info["bench_sql_started"] = time.perf_counter()

    def _after(self, conn, cursor, statement, parameters, context, executemany):
        seconds = time.perf_counter() - conn.info.pop("bench_sql_started")
        entry = self.by_statement.setdefault(self.label(statement), [0, 0.0])
        entry[0] += 1
        entry[1] += seconds

    @property
    def seconds(self) -> float:
        return sum(s for _, s in self.by_statement.values())

    def __enter__(self):
        from sqlalchemy import event

        event.listen(self.engine, "before_cursor_execute", self._before)
        event.listen(self.engine, "after_cursor_execute", self._after)
        return self

    def __exit__(self, *exc):
        from sqlalchemy import event

        event.remove(self.engine, "before_cursor_execute", self._before)
        event.remove(self.engine, "after_cursor_execute", self._after)

    def top(self, k: int = 6) -> list[dict]:
        ranked = sorted(self.by_statement.items(), key=lambda kv: -kv[1][1])[:k]
        return [{"sql": name, "calls": c, "seconds": round(s, 2)} for name, (c, s) in ranked]


# ---- phases -----------------------------------------------------------------------------


def truncate(url: str, *tables: str) -> None:
    import psycopg

    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        conn.execute(f"TRUNCATE {', '.join(tables)}")


def end_to_end(url: str, data: dict, n: int, clients: int, seed: int, args) -> dict:
    """Stream N stored events through gunicorn from ``clients`` processes; verify with SQL."""
    import psycopg

    port = free_port()
    log_path = Path(tempfile.gettempdir()) / f"sprig-bench-ingest-{os.getpid()}-{port}.log"
    truncate(url, "usage_event", "rollup_dirty")
    server = start_gunicorn(url, port, args.workers, args.threads, log_path)
    context = mp.get_context("fork")
    ready, out, go = context.Queue(), context.Queue(), context.Event()
    quotas = [n // clients + (1 if i < n % clients else 0) for i in range(clients)]
    shared = {k: data[k] for k in ("users", "targets")}
    procs = [
        context.Process(
            target=_client,
            args=(i, port, data["token"], shared, quotas[i], seed * 1000 + i, ready, out, go),
        )
        for i in range(clients)
    ]
    sampler = None
    try:
        prepared = time.perf_counter()
        for proc in procs:
            proc.start()
        for _ in procs:
            ready.get(timeout=900)
        prepare_seconds = time.perf_counter() - prepared
        truncate(url, "usage_event", "rollup_dirty")  # drop the warm-up events
        sampler = RssSampler(server.pid)
        sampler.start()
        go.set()
        results = []
        while len(results) < clients:
            try:
                results.append(out.get(timeout=5))
            except queue_module.Empty:
                if any(p.exitcode not in (None, 0) for p in procs):
                    raise RuntimeError("a client process died") from None
        for proc in procs:
            proc.join()
        sampler.stop()
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        if sampler is not None and sampler.is_alive():
            sampler.stop()
    failures = [r["error"] for r in results if "error" in r]
    if failures:
        print(log_path.read_text()[-3000:], file=sys.stderr)
        raise RuntimeError("client failed:\n" + failures[0])
    log_path.unlink(missing_ok=True)

    seconds = max(r["finished"] for r in results) - min(r["started"] for r in results)
    latencies = [ms for r in results for ms in r["latencies"]]
    timing = Result("e2e", len(latencies), 0, seconds, latencies)
    stored_ids = set()
    for r in results:
        stored_ids.update(r["stored_ids"])
    reported = sum(r["stored"] for r in results)
    expected = collections.Counter()
    for r in results:
        expected.update(r["per_subagent"])
    stats = collections.Counter()
    for r in results:
        stats.update(r["stats"])

    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        in_table = conn.execute("SELECT count(*) FROM usage_event").fetchone()[0]
        queried = time.perf_counter()
        by_subagent = dict(
            conn.execute("SELECT subagent_id, count(*) FROM usage_event GROUP BY subagent_id")
        )
        query_ms = (time.perf_counter() - queried) * 1000
        marks = conn.execute("SELECT count(*) FROM rollup_dirty").fetchone()[0]
    checks = {
        "stored_reported_equals_n": reported == n,
        "distinct_stored_ids_equals_reported": len(stored_ids) == reported,
        "table_count_equals_distinct_stored": in_table == len(stored_ids),
        "duplicates_reported_equal_sent": sum(r["duplicates"] for r in results)
        == sum(r["sent_duplicates"] for r in results),
        "nothing_rejected": sum(r["rejected"] for r in results) == 0,
        "count_by_subagent_matches_clients": by_subagent == dict(expected),
    }
    hwm = sampler.hwm_kib
    workers = [kib for pid, kib in hwm.items() if pid != server.pid]
    return {
        "events": n,
        "seconds": round(seconds, 3),
        "events_per_s": round(n / seconds, 1),
        "batches": len(latencies),
        "p50_ms": round(timing.p50, 2),
        "p99_ms": round(timing.p99, 2),
        "max_ms": round(max(latencies), 2),
        "sent_duplicates": sum(r["sent_duplicates"] for r in results),
        "mib_sent": round(sum(r["bytes"] for r in results) / 2**20, 1),
        "client_errors": dict(stats) if stats.get("errors") else {},
        "prepare_seconds": round(prepare_seconds, 1),
        "peak_rss_mib": round(sampler.peak_kib / 1024, 1),
        "master_hwm_mib": round(hwm.get(server.pid, 0) / 1024, 1),
        "worker_hwm_mib": sorted(round(k / 1024, 1) for k in workers),
        "rollup_marks": marks,
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "count_by_subagent_ms": round(query_ms, 1),
        "checks": checks,
    }


def _copy_chunks(maker: EventMaker, n: int, client_id: int, chunk: int = 5000) -> list[bytes]:
    received = datetime.now(UTC).isoformat()
    chunks = []
    for start in range(0, n, chunk):
        count = min(chunk, n - start)
        chunks.append("".join(maker.copy_row(client_id, received) for _ in range(count)).encode())
    return chunks


def copy_ceiling(url: str, data: dict, n: int, seed: int) -> tuple[dict, dict]:
    """One COPY of N pre-generated text rows (same columns as the API path writes) into
    (1) usage_event itself, emptied: same indexes and the same four foreign keys, the like-for-
    like ceiling; (2) ``CREATE TABLE … (LIKE usage_event INCLUDING ALL)``: same indexes but,
    as LIKE never copies them, no foreign keys, the raw ceiling."""
    import psycopg

    truncate(url, "usage_event", "rollup_dirty")
    maker = EventMaker(seed + 7, data["users"], data["targets"], 86_400)
    generated = time.perf_counter()
    chunks = _copy_chunks(maker, n, data["client_id"])
    generate_seconds = time.perf_counter() - generated
    figures = []
    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_usage_event_copy")
        conn.execute("CREATE TABLE bench_usage_event_copy (LIKE usage_event INCLUDING ALL)")
        conn.execute("CHECKPOINT")  # start both from clean buffers
        for table in ("usage_event", "bench_usage_event_copy"):
            conn.autocommit = False
            started = time.perf_counter()
            with conn.cursor() as cur, cur.copy(f"COPY {table} ({EVENT_COLUMNS}) FROM STDIN") as c:
                for chunk in chunks:
                    c.write(chunk)
            conn.commit()
            seconds = time.perf_counter() - started
            conn.autocommit = True
            count = f"SELECT count(*) FROM {table}"  # noqa: S608 - constant table names
            in_table = conn.execute(count).fetchone()[0]
            foreign_keys = conn.execute(
                "SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass "
                "AND contype = 'f'",
                (table,),
            ).fetchone()[0]
            figures.append(
                {
                    "events": n,
                    "seconds": round(seconds, 3),
                    "events_per_s": round(n / seconds, 1),
                    "foreign_keys": foreign_keys,
                    "loadavg_1m": round(os.getloadavg()[0], 2),
                    "generate_seconds": round(generate_seconds, 1),
                    "checks": {"table_count_equals_n": in_table == n},
                }
            )
        conn.execute("DROP TABLE bench_usage_event_copy")
    return figures[0], figures[1]


def rollup(url: str, data: dict, r: int, seed: int) -> dict:
    """COPY R events over the last 30 days (in time order) and every sub-agent, one dirty mark
    per (sub-agent, day), then time ``run_rollup`` (and its commit) and check daily_stats
    against SQL."""
    import psycopg
    from sqlmodel import Session

    from market.platform.db import make_engine
    from market.usage.services import run_rollup

    truncate(url, "usage_event", "rollup_dirty", "daily_stats", "retention_cohort")
    rng = random.Random(seed + 11)
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=k) for k in range(1, 31)]  # whole days, none in the future
    day_text = [d.isoformat() for d in days]
    users, targets, client_id = data["users"], data["targets"], data["client_id"]
    received = datetime.now(UTC).isoformat()
    subagents = sorted({s for s, _ in targets})
    loaded = time.perf_counter()
    with psycopg.connect(_dsn(url)) as conn:
        try:  # the rows are valid by construction: skip the foreign-key triggers for the load
            conn.execute("SET session_replication_role = replica")
        except psycopg.Error:  # not a superuser: load with the checks, just slower
            conn.rollback()
        with conn.cursor() as cur:
            with cur.copy(f"COPY usage_event ({EVENT_COLUMNS}) FROM STDIN") as copy:
                lines = []
                # Day by day, oldest first, in time order within the day: the heap is laid out
                # as events arriving over 30 days would leave it.
                for d in reversed(range(30)):
                    per_day = r // 30 + (1 if d < r % 30 else 0)
                    for i in range(per_day):
                        subagent_id, version_id = targets[rng.randrange(len(targets))]
                        kind = KIND_TABLE[rng.randrange(20)]
                        t = i * 86_400 // per_day
                        lines.append(
                            f"{rng.getrandbits(128):032x}\t{client_id}\t"
                            f"{users[rng.randrange(len(users))]}\t{subagent_id}\t{version_id}\t"
                            f"{kind}\t{day_text[d]} {t // 3600:02d}:{t // 60 % 60:02d}:"
                            f"{t % 60:02d}+00\t{day_text[d]}\t"
                            f"{rng.randrange(1000, 3_600_000) if kind == 'session_end' else NULL}"
                            f"\t{{}}\t{NULL}\t{received}\n"
                        )
                        if len(lines) == 10_000:
                            copy.write("".join(lines))
                            lines = []
                if lines:
                    copy.write("".join(lines))
            with cur.copy("COPY rollup_dirty (subagent_id, day) FROM STDIN") as copy:
                for subagent_id in subagents:
                    for d in days:
                        copy.write_row((subagent_id, d))
        conn.commit()
        conn.autocommit = True
        # What autovacuum would have done by the time a real rollup runs.
        conn.execute("VACUUM ANALYZE usage_event")
        conn.execute("ANALYZE rollup_dirty")
    load_seconds = time.perf_counter() - loaded

    engine = make_engine(url)
    with Session(engine) as session, SqlTimer(engine) as sql:
        started = time.perf_counter()
        outcome = run_rollup(session)
        committed = time.perf_counter()
        session.commit()
        seconds = time.perf_counter() - started
        commit_seconds = time.perf_counter() - committed
    engine.dispose()

    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        stats_rows = conn.execute("SELECT count(*) FROM daily_stats").fetchone()[0]
        # A pair that drew no event has nothing to report and gets no row.
        pairs_with_events = conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT subagent_id, occurred_day FROM usage_event) p"
        ).fetchone()[0]
        marks_left = conn.execute("SELECT count(*) FROM rollup_dirty").fetchone()[0]
        total = conn.execute("SELECT coalesce(sum(opens), 0) FROM daily_stats").fetchone()[0]
        opens = conn.execute("SELECT count(*) FROM usage_event WHERE kind = 'open'").fetchone()[0]
        samples_ok = []
        for _ in range(3):
            subagent_id, day = rng.choice(subagents), rng.choice(days)
            direct = conn.execute(
                "SELECT count(*) FILTER (WHERE kind = 'open'), count(DISTINCT user_id), "
                "count(*) FILTER (WHERE kind = 'session_end'), "
                "coalesce(sum(duration_ms) FILTER (WHERE kind = 'session_end'), 0), "
                "count(*) FILTER (WHERE kind = 'error') "
                "FROM usage_event WHERE subagent_id = %s AND occurred_day = %s",
                (subagent_id, day),
            ).fetchone()
            rolled = conn.execute(
                "SELECT opens, active_users, sessions, time_spent_ms, errors FROM daily_stats "
                "WHERE subagent_id = %s AND day = %s",
                (subagent_id, day),
            ).fetchone()
            samples_ok.append(tuple(int(v) for v in direct) == tuple(rolled or ()))
    return {
        "events": r,
        "seconds": round(seconds, 3),
        "events_per_s": round(r / seconds, 1),
        "load_seconds": round(load_seconds, 1),
        "marks": outcome["marks"],
        "days": outcome["days"],
        "cohorts": outcome["cohorts"],
        "skipped": bool(outcome.get("skipped")),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "sql_seconds": round(sql.seconds, 2),
        "commit_seconds": round(commit_seconds, 2),
        "python_seconds": round(seconds - sql.seconds - commit_seconds, 2),
        "top_sql": sql.top(),
        "checks": {
            "ran": not outcome.get("skipped"),
            "every_pair_with_events_has_a_row": stats_rows == pairs_with_events,
            "marks_consumed": marks_left == 0,
            "total_opens_match": int(total) == opens,
            "sampled_rows_match_sql": all(samples_ok),
        },
    }


# ---- profile ----------------------------------------------------------------------------


def profile_ingest(url: str, data: dict, batches: int, seed: int) -> dict:
    """cProfile the real endpoint in-process (Flask test client, same database) over
    ``batches`` batches and attribute the time to the stages of the path. Stages are found by
    function name, so the breakdown follows the service code as it changes; a stage the
    current code does not have shows as 0."""
    import cProfile
    import pstats

    from market.app import create_app

    truncate(url, "usage_event", "rollup_dirty")
    settings = {"database_url": url, "events_per_minute": 10**9, "read_cache_seconds": 0}
    redis_url = os.environ.get("SPRIG_BENCH_REDIS_URL") or os.environ.get("SPRIG_TEST_REDIS_URL")
    if redis_url:
        settings["redis_url"] = redis_url
    app = create_app(settings)
    client = app.test_client()
    headers = {"Authorization": f"Bearer {data['token']}", "Content-Type": "application/json"}
    maker = EventMaker(seed + 13, data["users"], data["targets"], 86_400)
    bodies, _ = build_batches(maker, (2 * batches + 5) * 950, DUPLICATE_SHARE, BATCH)
    for body, _, _ in bodies[:5]:  # warm: pools, statement caches
        assert client.post(PATH, data=body, headers=headers).status_code == 202
    plain, profiled = bodies[5 : 5 + batches], bodies[5 + batches : 5 + 2 * batches]

    started = time.perf_counter()
    for body, _, _ in plain:
        assert client.post(PATH, data=body, headers=headers).status_code == 202
    plain_ms = (time.perf_counter() - started) / len(plain) * 1000

    profiler = cProfile.Profile()
    profiler.enable()
    for body, _, _ in profiled:
        assert client.post(PATH, data=body, headers=headers).status_code == 202
    profiler.disable()
    table = pstats.Stats(profiler).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}
    total = sum(v[2] for v in table.values())

    def cum(where: str) -> float:
        path, name = where.split(":")
        return sum(v[3] for (f, _, fn), v in table.items() if fn == name and f.endswith(path))

    def under(outer: str, inner: str, direct: bool = False) -> float:
        return _inside(table, *outer.split(":"), *inner.split(":"), direct=direct)

    services = "market/usage/services.py"
    ingest = cum(f"{services}:ingest_events")
    parse = cum("feedback/ingest.py:parse_batch")
    store = sum(
        cum(f"{services}:{name}")
        for name in ("_store_postgres", "_store_checked", "_store_copy", "_store")
    )
    references = cum(f"{services}:_references")
    if not store:  # the first version: references, INSERT and marks straight from ingest_events
        store = cum(f"{services}:_insert_events") + cum(f"{services}:mark_dirty")
        references = cum(f"{services}:_references")
    stages = {
        "HTTP body -> JSON (orjson.loads)": cum("~:<orjson.loads>"),
        "pydantic EventBatchIn (parse_model)": cum("market/platform/api_deps.py:parse_model"),
        "validation: feedback/ingest.parse_batch": parse,
        "store (SQL build + execute + marks)": store,
        "  of which orjson.dumps of the payload": under(
            f"{services}:_store_postgres", "~:<orjson.dumps>", direct=True
        ),
        "  of which SQLAlchemy compile": under(
            f"{services}:ingest_events", "sqlalchemy/sql/elements.py:_compiler"
        ),
        "  of which psycopg execute (DB time)": under(
            f"{services}:ingest_events", "psycopg/cursor.py:execute"
        )
        + under(f"{services}:ingest_events", "psycopg/cursor.py:executemany")
        + under(f"{services}:ingest_events", "psycopg/cursor.py:copy"),
        "reference checks (_references)": references,
        "result dicts (rest of ingest_events)": max(0.0, ingest - parse - store - references),
        "token lookup (caller)": cum("market/identity/tokens.py:caller"),
        "rate limiter (Redis)": cum("market/platform/ratelimit.py:spend"),
        "commit": cum("market/platform/api_deps.py:commit"),
        "response JSON (orjson.dumps in the view)": under(
            "market/usage/api.py:post_events", "~:<orjson.dumps>", direct=True
        ),
    }
    view = cum("market/usage/api.py:post_events")
    stages["Flask/Werkzeug around the view"] = max(0.0, total - view)
    top = sorted(table.items(), key=lambda kv: -kv[1][2])[:10]
    n = len(profiled)
    return {
        "batches": n,
        "ms_per_batch_unprofiled": round(plain_ms, 2),
        "profiled_ms_per_batch": round(total / n * 1000, 2),
        "stages_ms_per_batch": {k: round(v / n * 1000, 2) for k, v in stages.items()},
        "top_self_time": [
            {
                "function": f"{Path(f).parent.name}/{Path(f).name}:{fn}",
                "ms_per_batch": round(v[2] / n * 1000, 2),
                "calls_per_batch": round(v[1] / n),
            }
            for (f, _, fn), v in top
        ],
    }


def _inside(
    table, outer_path: str, outer: str, inner_path: str, inner: str, direct: bool = False
) -> float:
    """Cumulative time of ``inner`` on call paths that start in ``outer`` (walks callers), or
    only where ``outer`` calls it ``direct``-ly."""
    memo: dict = {}

    def reaches(key, depth=0) -> bool:
        if key in memo:
            return memo[key]
        memo[key] = False
        f, _, fn = key
        if fn == outer and f.endswith(outer_path):
            memo[key] = True
            return True
        if direct or depth > 40 or key not in table:
            return False
        memo[key] = any(reaches(caller, depth + 1) for caller in table[key][4])
        return memo[key]

    seconds = 0.0
    for key, v in table.items():
        f, _, fn = key
        if fn == inner and f.endswith(inner_path):
            for caller, cv in v[4].items():
                if reaches(caller):
                    seconds += cv[3]
    return seconds


# ---- report -----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N=100k, R=300k: under a minute")
    parser.add_argument("--events", type=int, default=None, help="events stored end to end")
    parser.add_argument("--clients", type=int, default=4, help="client processes")
    parser.add_argument(
        "--rollup-events", type=int, default=None, help="events under the rollup; 0 skips it"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--subagents", type=int, default=2_000)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker")
    parser.add_argument(
        "--profile", action="store_true", help="profile the endpoint even if the target is met"
    )
    args = parser.parse_args()
    url = database_url_or_rerun_with_servers()
    n = args.events or (100_000 if args.quick else 2_000_000)
    r = args.rollup_events
    if r is None:
        r = 300_000 if args.quick else 10_000_000
    began = time.perf_counter()
    # test-services.sh stops us with SIGTERM: unwind so gunicorn and the clients are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    data = setup(url, args.users, args.subagents, args.seed)
    small = end_to_end(url, data, max(n // 4, 1), args.clients, args.seed, args)
    full = end_to_end(url, data, n, args.clients, args.seed + 1, args)
    ceiling, raw = copy_ceiling(url, data, n, args.seed)
    rolled = rollup(url, data, r, args.seed) if r > 0 else None
    ratio = full["events_per_s"] / ceiling["events_per_s"]
    raw_ratio = full["events_per_s"] / raw["events_per_s"]
    met = ratio >= TARGET_RATIO
    profile = None
    if args.profile or not met:
        profile = profile_ingest(url, data, 20 if args.quick else 40, args.seed)
    code = _code_version()

    print(
        f"\ningest bench ({code}): PostgreSQL, gunicorn {args.workers}x{args.threads} gthread, "
        f"{args.clients} client processes, batches of {BATCH} (~{DUPLICATE_SHARE:.0%} "
        f"duplicates), {len(data['users']):,} users, {len(data['targets']):,} sub-agents, "
        f"{os.cpu_count()} CPUs; setup {data['load_seconds']}s"
        + (f", rollup load {rolled['load_seconds']}s" if rolled else "")
        + "\n"
    )
    header = (
        f"{'phase':<22} {'events':>11} {'seconds':>8} {'events/s':>10} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'peak RSS MiB':>13} {'vs COPY':>8} {'vs COPY no-FK':>14}"
    )
    print(header)
    print("-" * len(header))

    def row(name, figures, p50="-", p99="-", rss="-"):
        rate = figures["events_per_s"]
        vs, vs_raw = "-", "-"
        if name != "rollup":
            vs = f"{rate / ceiling['events_per_s']:.3f}"
            vs_raw = f"{rate / raw['events_per_s']:.3f}"
        print(
            f"{name:<22} {figures['events']:>11,} {figures['seconds']:>8.2f} {rate:>10,.0f} "
            f"{p50:>8} {p99:>8} {rss:>13} {vs:>8} {vs_raw:>14}"
        )

    for name, phase in (("end to end N/4", small), ("end to end N", full)):
        row(
            name, phase, f"{phase['p50_ms']:.1f}", f"{phase['p99_ms']:.1f}",
            f"{phase['peak_rss_mib']:.0f}",
        )  # fmt: skip
    row("COPY usage_event", ceiling)
    row("COPY no-FK copy", raw)
    if rolled:
        row("rollup", rolled)
    print()
    print(
        f"target: end to end >= {TARGET_RATIO:.2f} x COPY rate -> {'MET' if met else 'NOT MET'} "
        f"(ratio {ratio:.3f}: {full['events_per_s']:,.0f} vs {ceiling['events_per_s']:,.0f} "
        f"events/s into usage_event with its {ceiling['foreign_keys']} foreign keys); against "
        f"COPY into a LIKE copy without foreign keys ({raw['events_per_s']:,.0f} events/s) the "
        f"ratio is {raw_ratio:.3f}" + (" (also met)" if raw_ratio >= TARGET_RATIO else " (not met)")
    )
    print(
        f"memory: peak RSS (master + workers) {small['peak_rss_mib']:.0f} MiB at "
        f"{small['events']:,} events, {full['peak_rss_mib']:.0f} MiB at {full['events']:,}; "
        f"worker VmHWM {small['worker_hwm_mib']} -> {full['worker_hwm_mib']} MiB"
    )
    if rolled:
        print(
            f"rollup: {rolled['days']:,} (sub-agent, day) pairs, {rolled['cohorts']:,} cohort "
            f"pairs in {rolled['seconds']:.1f}s: SQL (incl. psycopg query prep) "
            f"{rolled['sql_seconds']}s, other Python {rolled['python_seconds']}s, commit "
            f"{rolled['commit_seconds']}s; slowest SQL: "
            + ", ".join(f"{t['sql']} {t['seconds']}s/{t['calls']}" for t in rolled["top_sql"][:4])
        )
    phases = {"e2e_small": small, "e2e_full": full, "copy": ceiling, "copy_no_fk": raw}
    if rolled:
        phases["rollup"] = rolled
    loads = {name: phase["loadavg_1m"] for name, phase in phases.items()}
    busy = max(loads.values()) > (os.cpu_count() or 1)
    print(
        "load average (1 min) after each phase: "
        + ", ".join(f"{k} {v}" for k, v in loads.items())
        + (
            f" -- above {os.cpu_count()} CPUs: other processes competed, figures are noisy"
            if busy
            else ""
        )
    )
    checks = {name: phase.pop("checks") for name, phase in phases.items()}
    failed = [f"{k}.{c}" for k, v in checks.items() for c, ok in v.items() if not ok]
    print("checks: " + ("all passed" if not failed else "FAILED " + ", ".join(failed)))
    for phase in (small, full):
        if phase["client_errors"]:
            print(f"client retries at {phase['events']:,}: {phase['client_errors']}")
    if profile:
        print(
            f"\nprofile of POST {PATH} in-process (Flask test client, {profile['batches']} "
            f"batches of {BATCH}): {profile['ms_per_batch_unprofiled']} ms/batch unprofiled, "
            f"{profile['profiled_ms_per_batch']} ms/batch under cProfile"
        )
        for label, ms in profile["stages_ms_per_batch"].items():
            share = ms / profile["profiled_ms_per_batch"] if profile["profiled_ms_per_batch"] else 0
            print(f"  {label:<44} {ms:>8.2f} ms  {share:>5.0%}")
        print("  top self time:")
        for item in profile["top_self_time"]:
            print(
                f"    {item['function']:<58} {item['ms_per_batch']:>7.2f} ms "
                f"{item['calls_per_batch']:>7} calls"
            )
    print(f"\ntotal bench time {time.perf_counter() - began:.0f}s")
    print(
        json.dumps(
            {
                "bench": "ingest",
                "code": code,
                "events": n,
                "rollup_events": r,
                "clients": args.clients,
                "workers": args.workers,
                "threads": args.threads,
                "cpus": os.cpu_count(),
                "e2e_small": small,
                "e2e": full,
                "copy": ceiling,
                "copy_no_fk": raw,
                "rollup": rolled,
                "ratio_to_copy": round(ratio, 4),
                "ratio_to_copy_no_fk": round(raw_ratio, 4),
                "target_ratio": TARGET_RATIO,
                "target_met": met,
                "checks_passed": not failed,
                "failed_checks": failed,
                "profile": profile,
                "total_seconds": round(time.perf_counter() - began, 1),
            }
        )
    )
    if failed:
        sys.exit(1)


def _code_version() -> str:
    """The commit measured, and whether the ingest path differs from it in the work tree."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "diff", "--quiet", "HEAD", "--", "feedback", "market"], cwd=ROOT
        ).returncode
    except OSError:
        return "unknown"
    return f"{sha or 'unknown'}{'+local changes' if dirty else ''}"


if __name__ == "__main__":
    main()
