"""Ingestion under real faults: gunicorn, PostgreSQL and Redis as separate processes.

Client threads send event batches to a real gunicorn (2 gthread workers) and retry each batch
until it gets a 202 (connection errors and 5xx are retried), until every fault is done.
Meanwhile the test ``kill -9``s a busy worker three times (each time only once both workers
are serving, so it is one worker down, not all), ``kill -9``s Redis and starts it again, and
crashes PostgreSQL (an immediate stop) for two seconds, with fsync and
synchronous_commit on. During the outages requests must get 503 with Retry-After or
a connection error, never a 500 and never a hang; afterwards
batches must be accepted again. At the end every event of every accepted batch must be stored,
once: rows == unique ids sent, nothing lost, no id reported ``stored`` twice. The figures
(accepted, stored, duplicates, lost, recovery times, outcomes) are printed.

PostgreSQL only (``scripts/test-services.sh`` provides it). The servers run in a database of
their own, ``sprig_faults``, so the per-test wipe of ``sprig_test`` is not disturbed. Redis and
PostgreSQL are restarted exactly as test-services.sh started them (same pid file, same data
dir, same options), so its cleanup still finds and stops them; the restarts hold the script's
start-up lock so that a concurrent run of it cannot take the port left free meanwhile.
Everything listens on 127.0.0.1 only. At the bottom, a deterministic test that a connection
lost mid-insert is a 503 with Retry-After (it was once a bare 500).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
import redis
import requests
from sqlalchemy.engine import make_url

from bench.servers import live_children
from market.app import create_app
from market.platform.migrate import upgrade
from market.platform.state import app_state
from tests.factories import make_user, publish
from tests.xdist_worker import own_database

# It kills and restarts the shared PostgreSQL and Redis: it runs alone, after the parallel part.
pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow, pytest.mark.exclusive]

REPO = Path(__file__).resolve().parents[3]
FAULTS_DB = own_database("sprig_faults")
N_CLIENTS = 4
MAX_BATCHES_PER_CLIENT = 2000  # clients run until every fault is done (bounded by this)
BATCHES_BETWEEN_FAULTS = 12  # accepted batches between two faults: traffic is always flowing
NEW_PER_BATCH = 60
RESENT_PER_BATCH = 3  # ids from the client's previous batch, sent again on purpose
CLIENT_PAUSE_S = 0.04  # between batches, so the run spans the faults
REQUEST_TIMEOUT = (2.0, 10.0)  # connect, read: the bound on any single request
BATCH_DEADLINE_S = 90.0  # a batch not accepted within this is a failure
RUN_DEADLINE_S = 240.0
HANG_BOUND_S = 8.0  # no request may take longer than this, outages included
PG_OUTAGE_S = 2.0


def _services() -> dict[str, str]:
    names = (
        "SPRIG_TEST_POSTGRES_URL",
        "SPRIG_TEST_REDIS_URL",
        "SPRIG_TEST_REDIS_PORT",
        "SPRIG_TEST_REDIS_SERVER",
        "SPRIG_TEST_SERVICES_DIR",
        "SPRIG_TEST_PG_BIN",
        "SPRIG_TEST_PG_DATA",
        "SPRIG_TEST_PG_USER",
    )
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        pytest.skip(f"needs scripts/test-services.sh ({', '.join(missing)} unset)")
    return {n: os.environ[n] for n in names}


def _shared_run() -> bool:
    """Under xdist with several workers, restarting shared servers would break siblings."""
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1


def _admin_conninfo(database_url: str, database: str = "postgres") -> str:
    url = make_url(database_url).set(drivername="postgresql", database=database)
    return url.render_as_string(hide_password=False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---- processes, by pid only -----------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"  # a killed daemon may linger as a zombie of PID 1: that is gone


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return -1
    return int(fields[11]) + int(fields[12])  # utime + stime


def _busy_worker(workers: list[int], timeout: float = 2.0) -> int:
    """A worker that is burning CPU right now (serving a batch), else the first one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = {pid: _cpu_ticks(pid) for pid in workers}
        time.sleep(0.005)
        for pid in workers:
            if _cpu_ticks(pid) > before[pid] >= 0:
                return pid
    return workers[0]


def _wait(predicate, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


# ---- Redis and PostgreSQL as test-services.sh runs them -------------------------------


@contextlib.contextmanager
def startup_lock(timeout: float = 120):
    """test-services.sh's own lock on port selection and start-up. Held while a server is
    down, so a concurrent run of the script cannot pick the port it left free."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"sprig-test-services.{os.getuid()}.lock"
    with path.open("a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"could not take {path}") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Services:
    def __init__(self, env: dict[str, str]):
        self.env = env
        self.dir = Path(env["SPRIG_TEST_SERVICES_DIR"])
        self.redis_pidfile = self.dir / "redis.pid"
        self.redis_port = int(env["SPRIG_TEST_REDIS_PORT"])

    # Redis
    def redis_pid(self) -> int | None:
        try:
            pid = int(self.redis_pidfile.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except FileNotFoundError:
            return None
        return pid if comm == "redis-server" and _alive(pid) else None

    def redis_served_by(self) -> int | None:
        """The pid of the Redis answering on our port (test-services.sh checks the same)."""
        client = redis.Redis(
            host="127.0.0.1", port=self.redis_port, socket_timeout=0.5, socket_connect_timeout=0.5
        )
        try:
            return int(client.info("server")["process_id"])
        except redis.RedisError:
            return None
        finally:
            client.close()

    def kill_redis(self) -> None:
        pid = self.redis_pid()
        assert pid is not None, "no live redis-server behind redis.pid"
        os.kill(pid, signal.SIGKILL)
        assert _wait(lambda: not _alive(pid), 10), "redis-server survived SIGKILL"

    def start_redis(self) -> None:
        subprocess.run(
            [
                self.env["SPRIG_TEST_REDIS_SERVER"],
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.redis_port),
                "--daemonize",
                "yes",
                "--pidfile",
                str(self.redis_pidfile),
                "--dir",
                str(self.dir),
                "--logfile",
                str(self.dir / "redis.log"),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            check=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        assert _wait(lambda: self.redis_served_by() is not None, 10), "Redis did not come back"
        assert _wait(lambda: self.redis_pid() is not None, 5), "redis.pid not rewritten"
        assert self.redis_served_by() == self.redis_pid(), "another Redis took the port"

    # PostgreSQL
    def pg_ctl(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
        command = [
            str(Path(self.env["SPRIG_TEST_PG_BIN"]) / "pg_ctl"),
            "-D",
            self.env["SPRIG_TEST_PG_DATA"],
            *args,
        ]
        if os.geteuid() == 0:
            command = ["runuser", "-u", self.env["SPRIG_TEST_PG_USER"], "--", *command]
        return subprocess.run(
            command,
            cwd=self.dir,  # readable by the postgres user
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )

    def crash_postgres(self) -> None:
        """Stop PostgreSQL as a crash would (``immediate``: no checkpoint, no flush of its
        buffers; the next start replays the WAL), so an acknowledged commit that only sat in
        memory is gone afterwards."""
        done = self.pg_ctl("-m", "immediate", "-w", "-t", "60", "stop")
        assert done.returncode == 0, done.stderr

    def start_postgres(self) -> None:
        # `restart` of a stopped server starts it with the options of the first start
        # (postmaster.opts): same port, socket dir and settings as test-services.sh gave it
        done = self.pg_ctl("-l", str(self.dir / "pg" / "log"), "-w", "-t", "60", "restart")
        assert done.returncode == 0, done.stderr

    def ensure_up(self) -> None:
        """Best effort, for the finally: leave both servers running for the next tests."""
        if self.redis_pid() is None:
            self.start_redis()
        if self.pg_ctl("status", timeout=20).returncode != 0:
            self.start_postgres()


# ---- the database the servers use -----------------------------------------------------


@dataclass
class Seed:
    url: str
    token: str
    users: list[int]
    targets: list[tuple[int, int]]


def _recreate_database(database_url: str) -> None:
    with psycopg.connect(_admin_conninfo(database_url), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {FAULTS_DB} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {FAULTS_DB}")


def _drop_database(database_url: str) -> None:
    with psycopg.connect(_admin_conninfo(database_url), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {FAULTS_DB} WITH (FORCE)")


def _seed(database_url: str) -> Seed:
    url = make_url(database_url).set(database=FAULTS_DB).render_as_string(hide_password=False)
    _recreate_database(database_url)
    upgrade(url)
    app = create_app(
        {"database_url": url, "testing": True, "secret_key": "faults", "read_cache_seconds": 0}
    )
    try:
        engine, client = app_state(app).engine, app.test_client()
        author = make_user(engine, "faults-author")
        service = make_user(engine, "faults-collector", kind="service", scopes=["events:write"])
        users = [author.id] + [make_user(engine, f"faults-user{i}").id for i in range(12)]
        targets = []
        for title in ("Water Tracker", "Sleep Log", "Step Counter"):
            body = publish(client, author, title=title)
            targets.append((body["id"], body["latest_version"]["id"]))
    finally:
        app_state(app).engine.dispose()
        app_state(app).read_engine.dispose()
    return Seed(url=url, token=service.token, users=users, targets=targets)


DURABILITY_SETTINGS = ("fsync", "synchronous_commit", "full_page_writes")


def _durability(database_url: str) -> dict[str, str]:
    with psycopg.connect(_admin_conninfo(database_url), autocommit=True) as admin:
        return {name: admin.execute(f"SHOW {name}").fetchone()[0] for name in DURABILITY_SETTINGS}


@contextlib.contextmanager
def durable_postgres(database_url: str):
    """The test cluster runs with durability off for speed (scripts/test-services.sh); a test
    that crashes PostgreSQL and counts what survived needs it on, or an acknowledged commit
    still in memory would be lost and the test would blame the code. ALTER SYSTEM outranks
    postgresql.conf and survives the restarts; all three settings take effect on reload."""

    def apply(statements: list[str]) -> None:
        with psycopg.connect(_admin_conninfo(database_url), autocommit=True) as admin:
            for statement in statements:
                admin.execute(statement)
            admin.execute("SELECT pg_reload_conf()")

    apply([f"ALTER SYSTEM SET {name} = on" for name in DURABILITY_SETTINGS])
    try:
        assert _wait(lambda: set(_durability(database_url).values()) == {"on"}, 10), (
            f"durability did not turn on: {_durability(database_url)}"
        )
        yield
    finally:
        apply([f"ALTER SYSTEM RESET {name}" for name in DURABILITY_SETTINGS])


@pytest.fixture
def faults_database(database_url, backend):
    if backend != "postgresql":
        pytest.skip("real-process fault tests run on PostgreSQL only")
    seed = _seed(database_url)
    with durable_postgres(database_url):
        yield seed
    _drop_database(database_url)


# ---- gunicorn -------------------------------------------------------------------------


class Gunicorn:
    def __init__(self, seed: Seed, redis_url: str, log_path: Path):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        gunicorn = REPO / ".venv" / "bin" / "gunicorn"
        if not gunicorn.exists():
            gunicorn = Path(sys.executable).with_name("gunicorn")
        env = {
            **os.environ,
            "SPRIG_DATABASE_URL": seed.url,
            "SPRIG_REDIS_URL": redis_url,
            "SPRIG_WORKERS": "2",
            "SPRIG_SECRET_KEY": "faults",
            "SPRIG_LOG_LEVEL": "WARNING",
        }
        self.log = log_path.open("wb")
        self.process = subprocess.Popen(
            [
                str(gunicorn),
                "-c",
                "python:market.entrypoints.gunicorn_conf",
                "--bind",
                f"127.0.0.1:{self.port}",
                # not the shared default ~/.gunicorn/gunicorn.ctl of other gunicorns
                "--no-control-socket",
                "market.app:create_app()",
            ],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.seen_workers: set[int] = set()

    def workers(self) -> list[int]:
        found = live_children(self.process.pid)
        self.seen_workers.update(found)
        return found

    @staticmethod
    def ready(pid: int) -> bool:
        """A worker is serving once it has entered its loop: it then touches its heartbeat
        file (an unlinked /tmp/wgunicorn-*) with monotonic-clock times, while the master
        created it with a wall-clock time."""
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except (FileNotFoundError, ProcessLookupError):
            return False
        for fd in fds:
            with contextlib.suppress(OSError):
                if "wgunicorn-" in os.readlink(fd):
                    return os.stat(fd).st_mtime < 1e9
        return False

    def wait_ready(self, timeout: float = 30) -> None:
        def ready() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited with {self.process.returncode}")
            try:
                response = requests.get(f"{self.base}/api/v1/subagents", timeout=2)
            except requests.RequestException:
                return False
            workers = self.workers()
            return (
                response.status_code == 200 and len(workers) == 2 and all(map(self.ready, workers))
            )

        assert _wait(ready, timeout, 0.1), "gunicorn did not come up"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        for pid in self.seen_workers:  # orphans of a master that died first
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.log.close()


# ---- clients --------------------------------------------------------------------------


@dataclass
class Attempt:
    started: float
    elapsed: float
    outcome: str  # "202", "503", "500", "conn-error", "timeout", ...
    retry_after: bool = False
    try_number: int = 1  # 1 for a batch's first send, 2 for its first retry, ...


@dataclass
class Ledger:
    lock: threading.Lock = field(default_factory=threading.Lock)
    attempts: list[Attempt] = field(default_factory=list)
    accepted_ids: set[str] = field(default_factory=set)
    sent_ids: set[str] = field(default_factory=set)
    statuses: Counter = field(default_factory=Counter)  # (event_id, status) → n
    accepted_batches: int = 0
    started_batches: int = 0
    resent: int = 0
    failed_batches: list[str] = field(default_factory=list)

    def record(self, attempt: Attempt) -> None:
        with self.lock:
            self.attempts.append(attempt)

    def accepted_at(self) -> list[float]:
        with self.lock:
            return sorted(a.started + a.elapsed for a in self.attempts if a.outcome == "202")


def _event(seed: Seed, rng_index: int, occurred_at: datetime) -> dict:
    subagent_id, version_id = seed.targets[rng_index % len(seed.targets)]
    kinds = ("open", "action", "session_end", "error")
    body = {
        "event_id": str(uuid.uuid4()),
        "user_id": seed.users[rng_index % len(seed.users)],
        "subagent_id": subagent_id,
        "version_id": version_id,
        "kind": kinds[rng_index % len(kinds)],
        "occurred_at": occurred_at.isoformat(),
    }
    if body["kind"] == "session_end":
        body["duration_ms"] = 1000 + rng_index
    return body


def _client(
    base: str,
    seed: Seed,
    ledger: Ledger,
    stop: threading.Event,
    finish: threading.Event,
    number: int,
) -> None:
    try:
        _send_all(base, seed, ledger, stop, finish, number)
    except Exception as error:  # a client bug must fail the test, not end a thread quietly
        with ledger.lock:
            ledger.failed_batches.append(f"client {number} crashed: {error!r}")


def _send_all(
    base: str,
    seed: Seed,
    ledger: Ledger,
    stop: threading.Event,
    finish: threading.Event,
    number: int,
) -> None:
    """Send batches until ``finish`` (then the batch in hand is still driven to its 202)."""
    headers = {"Authorization": f"Bearer {seed.token}"}
    http = requests.Session()
    previous: list[dict] = []
    for batch_number in range(MAX_BATCHES_PER_CLIENT):
        if stop.is_set() or finish.is_set():
            return
        now = datetime.now(UTC) - timedelta(seconds=30)
        fresh = [
            _event(seed, number * 7919 + batch_number * 31 + k, now) for k in range(NEW_PER_BATCH)
        ]
        batch = fresh + previous[:RESENT_PER_BATCH]
        previous = fresh
        with ledger.lock:
            ledger.sent_ids.update(e["event_id"] for e in batch)
            ledger.started_batches += 1
            ledger.resent += min(len(previous), RESENT_PER_BATCH) if batch_number else 0
        deadline = time.monotonic() + BATCH_DEADLINE_S
        pause = 0.05
        try_number = 0
        while True:
            try_number += 1
            if stop.is_set() or time.monotonic() > deadline:
                with ledger.lock:
                    ledger.failed_batches.append(f"client {number} batch {batch_number}")
                return
            started = time.monotonic()
            try:
                response = http.post(
                    f"{base}/api/v1/events",
                    json={"events": batch},
                    headers=headers,
                    timeout=REQUEST_TIMEOUT,
                )
            except requests.Timeout:
                ledger.record(
                    Attempt(started, time.monotonic() - started, "timeout", False, try_number)
                )
                http = requests.Session()
            except requests.ConnectionError:
                ledger.record(
                    Attempt(started, time.monotonic() - started, "conn-error", False, try_number)
                )
                http = requests.Session()
            except requests.RequestException:  # e.g. a body cut off when a worker died
                ledger.record(
                    Attempt(
                        started, time.monotonic() - started, "broken-response", False, try_number
                    )
                )
                http = requests.Session()
            else:
                elapsed = time.monotonic() - started
                status = response.status_code
                ledger.record(
                    Attempt(
                        started, elapsed, str(status), "Retry-After" in response.headers, try_number
                    )
                )
                if status == 202:
                    results = response.json()["results"]
                    with ledger.lock:
                        ledger.accepted_batches += 1
                        ledger.accepted_ids.update(e["event_id"] for e in batch)
                        ledger.statuses.update((r["event_id"], r["status"]) for r in results)
                    break
                if status < 500 and status != 429:
                    with ledger.lock:
                        ledger.failed_batches.append(f"client {number}: {status} {response.text}")
                    return
            # back off a little (Retry-After says 5 s; the test honours its presence, not
            # its length, to keep the run short)
            time.sleep(pause)
            pause = min(pause * 2, 0.4)
        time.sleep(CLIENT_PAUSE_S)


# ---- the test -------------------------------------------------------------------------


def _describe(attempt: Attempt, faults_at: list[tuple[str, float]]) -> str:
    """Where an attempt sits relative to the faults, for the printed figures."""
    before = [(name, at) for name, at in faults_at if at <= attempt.started + attempt.elapsed]
    where = (
        f"{attempt.started - before[-1][1]:+.2f}s from {before[-1][0]}"
        if before
        else "before any fault"
    )
    return (
        f"{attempt.outcome} after {attempt.elapsed:.2f}s (try {attempt.try_number} of its "
        f"batch), started {where}"
    )


def _first_202_after(ledger: Ledger, moment: float) -> float | None:
    later = [t for t in ledger.accepted_at() if t > moment]
    return later[0] - moment if later else None


def _overlapping(ledger: Ledger, start: float, end: float) -> list[Attempt]:
    """Attempts in flight at any time in [start, end] (begun before, or ended after)."""
    with ledger.lock:
        return [a for a in ledger.attempts if a.started <= end and a.started + a.elapsed >= start]


def _window(ledger: Ledger, start: float, end: float) -> Counter:
    return Counter(a.outcome for a in _overlapping(ledger, start, end))


def test_every_accepted_event_survives_worker_kill_redis_and_postgres_restarts(
    faults_database, tmp_path, capsys
):
    env = _services()
    services = Services(env)
    restart_shared = not _shared_run()
    seed = faults_database
    ledger = Ledger()
    stop, finish = threading.Event(), threading.Event()
    figures: dict[str, object] = {}
    server = Gunicorn(seed, env["SPRIG_TEST_REDIS_URL"], tmp_path / "gunicorn.log")
    clients: list[threading.Thread] = []
    redis_killed = False
    faults_at: list[tuple[str, float]] = []
    try:
        server.wait_ready()
        run_started = time.monotonic()
        clients = [
            threading.Thread(
                target=_client, args=(server.base, seed, ledger, stop, finish, n), daemon=True
            )
            for n in range(N_CLIENTS)
        ]
        for thread in clients:
            thread.start()

        def traffic_after(mark: int) -> bool:
            return ledger.accepted_batches >= mark + BATCHES_BETWEEN_FAULTS

        # (a) kill -9 a worker while it is serving a batch, three times
        kills = []
        for _kill in range(3):
            mark = ledger.accepted_batches
            assert _wait(lambda mark=mark: traffic_after(mark), 60), "ingestion stalled"
            # one kill at a time: not the second worker while the first one's replacement
            # is still booting (that would leave none; see Gunicorn.ready)
            ready = _wait(
                lambda: len(workers := server.workers()) == 2 and all(map(server.ready, workers)),
                30,
                0.2,
            )
            figures.setdefault("kill9_workers_ready_before_kill", []).append(ready)
            victim = _busy_worker(server.workers())
            killed_at = time.monotonic()
            faults_at.append(("kill -9", killed_at))
            os.kill(victim, signal.SIGKILL)
            assert _wait(lambda victim=victim: len(set(server.workers()) - {victim}) == 2, 30), (
                "gunicorn did not replace the killed worker"
            )
            respawn = time.monotonic() - killed_at
            assert _wait(lambda at=killed_at: _first_202_after(ledger, at) is not None, 30)
            kills.append((killed_at, respawn, _first_202_after(ledger, killed_at)))
        time.sleep(0.5)
        figures["kill9_worker_respawn_s"] = [round(r, 3) for _k, r, _f in kills]
        figures["kill9_first_202_after_s"] = [round(f, 3) for _k, _r, f in kills]
        figures["kill9_outcomes"] = dict(
            sum((_window(ledger, k - 0.2, k + r + 0.2) for k, r, _f in kills), Counter())
        )

        # (b) Redis killed and restarted: ingestion must not stall or fail meanwhile
        if restart_shared:
            mark = ledger.accepted_batches
            assert _wait(lambda mark=mark: traffic_after(mark), 60), "ingestion stalled"
            with startup_lock():
                redis_down_at = time.monotonic()
                faults_at.append(("redis down", redis_down_at))
                services.kill_redis()
                redis_killed = True
                time.sleep(1.5)
                down_for = _window(ledger, redis_down_at, time.monotonic())
                services.start_redis()
                redis_killed = False
            redis_up_at = time.monotonic()
            figures["redis_outage_s"] = round(redis_up_at - redis_down_at, 3)
            figures["redis_outage_outcomes"] = dict(down_for)
            latencies = sorted(a.elapsed for a in _overlapping(ledger, redis_down_at, redis_up_at))
            median = latencies[len(latencies) // 2] if latencies else 0.0
            figures["redis_outage_request_s"] = {
                "median": round(median, 3),
                "max": round(max(latencies, default=0.0), 3),
            }
            assert down_for["202"] > 0, f"no batch accepted while Redis was down: {down_for}"
            assert set(down_for) == {"202"}, f"Redis outage failed requests: {down_for}"
            # the rate limiter gives up on Redis after 0.25 s and counts locally
            assert median < 0.5, f"requests slowed down while Redis was down: {latencies}"

        # (c) PostgreSQL crashes (immediate stop, under load) and is down for PG_OUTAGE_S,
        # then recovers from its WAL: 503 (Retry-After) or connection errors meanwhile, no
        # hang, batches accepted again soon after, and every acknowledged batch still there
        if restart_shared:
            mark = ledger.accepted_batches
            assert _wait(lambda mark=mark: traffic_after(mark), 60), "ingestion stalled"
            with startup_lock():
                pg_down_at = time.monotonic()
                faults_at.append(("postgres crash", pg_down_at))
                services.crash_postgres()
                time.sleep(PG_OUTAGE_S)
                services.start_postgres()
            pg_up_at = time.monotonic()
            figures["pg_durability_after_restart"] = _durability(seed.url)
            assert _wait(lambda: _first_202_after(ledger, pg_up_at) is not None, 60), (
                "no batch accepted after PostgreSQL came back"
            )
            recovered = _first_202_after(ledger, pg_up_at)
            end_of_outage = pg_up_at + recovered
            figures["pg_down_s"] = round(pg_up_at - pg_down_at, 3)
            figures["pg_recovery_after_start_s"] = round(recovered, 3)
            during = _overlapping(ledger, pg_down_at, end_of_outage)
            figures["pg_outage_outcomes"] = dict(Counter(a.outcome for a in during))
            figures["pg_outage_slowest_request_s"] = round(
                max((a.elapsed for a in during), default=0.0), 3
            )
            figures["pg_outage_503_without_retry_after"] = sum(
                1 for a in during if a.outcome == "503" and not a.retry_after
            )
            unexpected = {a.outcome for a in during} - {"202", "503", "conn-error"}
            figures["pg_outage_unexpected_outcomes"] = sorted(unexpected)

        # a last stretch of undisturbed traffic, then the clients finish their batch in hand
        mark = ledger.accepted_batches
        assert _wait(lambda: traffic_after(mark), 60), "ingestion stalled after the faults"
        finish.set()
        for thread in clients:
            thread.join(max(1.0, RUN_DEADLINE_S - (time.monotonic() - run_started)))
        assert not any(t.is_alive() for t in clients), "clients did not finish in time"
        figures["run_s"] = round(time.monotonic() - run_started, 3)
    finally:
        stop.set()
        for thread in clients:
            thread.join(15)
        server.stop()
        if redis_killed or restart_shared:
            with startup_lock():
                services.ensure_up()

    # ---- the ledger against the table ----------------------------------------------------
    with psycopg.connect(_admin_conninfo(seed.url, FAULTS_DB)) as connection:
        stored = [str(row[0]) for row in connection.execute("SELECT event_id FROM usage_event")]
    stored_set = set(stored)
    lost = ledger.accepted_ids - stored_set
    with ledger.lock:
        outcomes = Counter(a.outcome for a in ledger.attempts)
        slowest_attempt = max(ledger.attempts, key=lambda a: a.elapsed)
        slowest = slowest_attempt.elapsed
        stored_twice = [i for i in ledger.sent_ids if ledger.statuses[(i, "stored")] > 1]
        reported_stored = sum(n for (_i, s), n in ledger.statuses.items() if s == "stored")
        reported_duplicate = sum(n for (_i, s), n in ledger.statuses.items() if s == "duplicate")
        rejected = sum(n for (_i, s), n in ledger.statuses.items() if s == "rejected")
    figures.update(
        batches=f"{ledger.accepted_batches}/{ledger.started_batches} accepted",
        unique_ids_sent=len(ledger.sent_ids),
        accepted=len(ledger.accepted_ids),
        stored=len(stored),
        reported_stored=reported_stored,
        duplicates=reported_duplicate,
        intentional_resends=ledger.resent,
        lost=len(lost),
        attempts=dict(outcomes),
        slowest_request_s=round(slowest, 3),
        slowest_request=_describe(slowest_attempt, faults_at),
    )
    with capsys.disabled():
        print("\ningest fault run:")
        for name, value in figures.items():
            print(f"  {name}: {value}")

    assert not ledger.failed_batches, ledger.failed_batches[:5]
    assert ledger.accepted_batches == ledger.started_batches
    if "pg_durability_after_restart" in figures:
        assert set(figures["pg_durability_after_restart"].values()) == {"on"}, figures
    assert not lost, f"{len(lost)} accepted events are missing"
    assert len(stored) == len(stored_set) == len(ledger.sent_ids)
    assert stored_set == ledger.sent_ids
    assert not stored_twice, stored_twice[:5]
    assert rejected == 0
    # every id was reported stored once, unless the answer carrying "stored" was lost (the
    # commit happened, the response did not arrive): then its retry says "duplicate"
    assert reported_stored <= len(stored)
    assert outcomes["timeout"] == 0 and slowest < HANG_BOUND_S, f"slowest request {slowest:.2f}s"
    assert figures.get("pg_outage_503_without_retry_after", 0) == 0
    assert not figures.get("pg_outage_unexpected_outcomes"), figures["pg_outage_outcomes"]
    # a request caught inside its insert by the crash is a 503 too (see the test below)
    assert outcomes["500"] == 0, dict(outcomes)


class WrongStatus(AssertionError):
    """The API answered a lost database connection with something other than 503."""


def test_a_connection_lost_mid_insert_is_a_503(app, client, engine, backend, database_url):
    if backend != "postgresql":
        pytest.skip("PostgreSQL only")
    author = make_user(engine, "author")
    service = make_user(engine, "collector", kind="service", scopes=["events:write"])
    body = publish(client, author)
    events = [
        {
            "event_id": str(uuid.uuid4()),
            "user_id": author.id,
            "subagent_id": body["id"],
            "version_id": body["latest_version"]["id"],
            "kind": "open",
            "occurred_at": datetime.now(UTC).isoformat(),
        }
    ]
    # a production app (errors answered, not raised) on the same database
    served = create_app({"database_url": database_url, "secret_key": "x", "read_cache_seconds": 0})
    answer: dict = {}

    def post() -> None:
        try:
            answer["response"] = served.test_client().post(
                "/api/v1/events", json={"events": events}, headers=service.headers
            )
        except Exception as error:  # escaped the WSGI app: gunicorn answers a bare 500
            answer["error"] = error

    conninfo = _admin_conninfo(database_url, make_url(database_url).database)
    worker = threading.Thread(target=post)
    try:
        with (
            psycopg.connect(conninfo) as blocker,
            psycopg.connect(conninfo, autocommit=True) as admin,
        ):
            # hold the events table so the insert waits, then drop its connection, as a
            # restart or failover would
            blocker.execute("LOCK TABLE usage_event IN ACCESS EXCLUSIVE MODE")
            worker.start()
            waiting = []

            def insert_waits() -> bool:
                waiting[:] = admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchall()
                return bool(waiting)

            assert _wait(insert_waits, 10), "the insert never waited on the lock"
            admin.execute("SELECT pg_terminate_backend(%s)", (waiting[0][0],))
            blocker.rollback()
        worker.join(20)
        # the client retries: the pool has replaced the dead connection
        again = served.test_client().post(
            "/api/v1/events", json={"events": events}, headers=service.headers
        )
        assert again.status_code == 202, again.get_data(as_text=True)[:300]
        assert again.get_json()["stored"] == 1
        if "error" in answer:
            raise WrongStatus(f"the request raised out of the app: {answer['error']!r:.300}")
        first = answer["response"]
        if first.status_code != 503 or "Retry-After" not in first.headers:
            raise WrongStatus(f"{first.status_code} {first.get_data(as_text=True)[:200]}")
        assert first.mimetype == "application/problem+json"
    finally:
        worker.join(5)
        app_state(served).engine.dispose()
        app_state(served).read_engine.dispose()
