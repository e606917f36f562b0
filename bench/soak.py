"""The whole system under mixed traffic and scheduled faults, then proof that nothing was lost.

Runs PostgreSQL and Redis (scripts/test-services.sh), gunicorn (2 gthread workers, the
production config), a Celery worker and beat; loads the demo community; and drives MIXED
traffic OPEN-LOOP at a fixed rate for a set time (each request is scheduled at its moment and
its latency counted from that moment, so a stalled server shows as latency, not as fewer
requests): browse, search, detail, tree, publish, fork, install, events, ratings,
suggestions, recommendations and one reward-export run, with real tokens for people and a
service. Faults on a schedule, in a cycle: ``kill -9`` of a gunicorn worker, of the Celery
worker (then started again), of the gunicorn master (started again), a Redis restart (kill
-9, start) and a PostgreSQL crash-restart (``pg_ctl restart -m immediate``). PostgreSQL runs
with fsync and synchronous_commit on (ALTER SYSTEM): an acknowledged commit must survive.

At the end it proves and prints: every acknowledged write (publish, fork, install, event,
rating: what got a 2xx, by the ids it returned) is in the database exactly once, and nothing
refused is there twice; the rollup equals a recount from the raw rows (``run_rollup`` over
every touched day, in a transaction rolled back) and nothing waits for the rollup or the
ranking after a final catch-up; no request outlived the client timeout (hung); per-route
error rate and p50/p99 in the window after each fault and outside them; the resident memory
of every process over time, flagged when it grows. The last line is JSON.

    python bench/soak.py [--quick] [--minutes M] [--rate R] [--timeout S]

``--quick`` runs about three minutes with each fault once; without it the run is 30 minutes
and the faults cycle. Without SPRIG_TEST_POSTGRES_URL it re-runs itself under
scripts/test-services.sh. Needs that script's servers (it restarts them as it started them).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import redis
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.catalog import free_port  # noqa: E402
from bench.ingest_harness import code_version, database_dsn  # noqa: E402
from bench.loadgen import percentile  # noqa: E402
from bench.servers import database_url_or_rerun_with_servers, live_children  # noqa: E402

BIN = Path(sys.executable).parent
API = "/api/v1"
DURABILITY = ("fsync", "synchronous_commit", "full_page_writes")
# The share of each kind of request in the traffic (out of the sum).
MIX = {
    "browse": 14,
    "search": 10,
    "detail": 14,
    "tree": 6,
    "publish": 2,
    "fork": 3,
    "install": 8,
    "events": 22,
    "rating": 8,
    "suggestions": 6,
    "recommendations": 7,
}
EVENTS_PER_BATCH = 20
FAULTS = ("web worker", "celery worker", "gunicorn master", "redis", "postgresql")
# A request belongs to a fault's window from the fault's start until this long after the
# service is back: where clients see the fault and its recovery.
FAULT_WINDOW_AFTER_S = 10.0
# Traffic goes on at least this long after the last fault was recovered from.
QUIET_TAIL_S = 30.0
SAMPLE_EVERY_S = 5.0
# How long gunicorn may take to serve after a start (a loaded machine boots workers slowly).
WEB_START_S = 300.0
LIMITS_OFF = ("EVENTS", "PUBLISH", "FORK", "SEARCH", "SUGGESTIONS", "RECOMMENDATIONS")
# Resident memory "grows" when the last third's median is this much above the first's
# (both ratio and absolute, so a small process's noise is not flagged).
GROWTH_RATIO = 1.25
GROWTH_MB = 30.0
# Memory samples from before this (seconds, or share of the run if longer) are the warm-up.
WARM_UP_S = 120.0
WARM_UP_SHARE = 0.15
MIN_SAMPLES = 6  # an incarnation with fewer samples after its warm-up is not judged
CATCH_UP_S = 240.0
PEOPLE_WITH_TOKENS = 60
SUGGESTION_REQUESTS = ("water tracker", "sleep diary", "budget for groceries", "yoga timer")
SEARCH_WORDS = ("water", "sleep", "budget", "run", "mood", "garden", "study", "tea")


# --------------------------------------------------------------------------- processes


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def rss_mb(pid: int, *, private: bool = False) -> float | None:
    """Resident memory of ``pid`` (``private``: less the pages it shares, for the many
    PostgreSQL backends that all map the same shared buffers)."""
    try:
        pages = Path(f"/proc/{pid}/statm").read_text().split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    resident, shared = int(pages[1]), int(pages[2])
    return (resident - shared if private else resident) * os.sysconf("SC_PAGE_SIZE") / 2**20


def threads_waiting(pid: int) -> dict[str, int]:
    """What the threads of ``pid`` wait in (kernel wait channel: a socket read, a futex...),
    counted: tells a process stuck on its threads at exit from one that is busy."""
    found = collections.Counter()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found[(task / "wchan").read_text().strip() or "running"] += 1
        except (FileNotFoundError, ProcessLookupError):
            continue
    return dict(found)


def wait_for(predicate, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def stop(pid: int) -> None:
    """SIGTERM, then SIGKILL after 15 seconds: for the processes this run started."""
    if not alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    if not wait_for(lambda: not alive(pid), 15):
        os.kill(pid, signal.SIGKILL)


class Services:
    """PostgreSQL and Redis as scripts/test-services.sh started them: restarted with the same
    pid file, data dir and options, so that its cleanup still finds and stops them."""

    def __init__(self) -> None:
        env = os.environ
        self.dir = Path(env["SPRIG_TEST_SERVICES_DIR"])
        self.redis_port = int(env["SPRIG_TEST_REDIS_PORT"])
        self.redis_server = env["SPRIG_TEST_REDIS_SERVER"]
        self.pg_bin = Path(env["SPRIG_TEST_PG_BIN"])
        self.pg_data = env["SPRIG_TEST_PG_DATA"]
        self.pg_user = env["SPRIG_TEST_PG_USER"]

    def redis_pid(self) -> int | None:
        try:
            pid = int((self.dir / "redis.pid").read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if alive(pid) else None

    def redis_up(self) -> bool:
        client = redis.Redis(port=self.redis_port, socket_timeout=0.5, socket_connect_timeout=0.5)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def kill_redis(self) -> None:
        pid = self.redis_pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not alive(pid), 10)

    def start_redis(self) -> None:
        subprocess.run(
            [self.redis_server, "--bind", "127.0.0.1", "--port", str(self.redis_port),
             "--daemonize", "yes", "--pidfile", str(self.dir / "redis.pid"), "--dir",
             str(self.dir), "--logfile", str(self.dir / "redis.log"), "--save", "",
             "--appendonly", "no"],
            check=True, timeout=20, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        if not wait_for(self.redis_up, 20):
            raise RuntimeError("Redis did not come back")

    def pg_ctl(self, *args: str) -> None:
        command = [str(self.pg_bin / "pg_ctl"), "-D", self.pg_data, *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", self.pg_user, "--", *command]
        done = subprocess.run(
            command, cwd=self.dir, timeout=120, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"pg_ctl {' '.join(args)}: {done.stderr.strip()}")

    def restart_postgres(self) -> None:
        """A crash (no checkpoint, no flush: the start replays the WAL), then the start, with
        the options of the first (postmaster.opts)."""
        self.pg_ctl("-l", str(self.dir / "pg" / "log"), "-m", "immediate", "-w", "-t", "90",
                    "restart")  # fmt: skip

    def postgres_pid(self) -> int | None:
        try:
            pid = int((Path(self.pg_data) / "postmaster.pid").read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return None
        return pid if alive(pid) else None


def durable(url: str) -> None:
    """The throwaway cluster runs with durability off for speed; a soak that crashes it and
    counts acknowledged writes needs it on. ALTER SYSTEM survives the restarts."""
    with psycopg.connect(database_dsn(url), autocommit=True) as conn:
        for name in DURABILITY:
            conn.execute(f"ALTER SYSTEM SET {name} = on")
        conn.execute("SELECT pg_reload_conf()")


# --------------------------------------------------------------------------- the app's processes


class Stack:
    """gunicorn, the Celery worker and beat for one database and Redis, with their logs."""

    def __init__(self, url: str, redis_url: str, work: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.work = work
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "SPRIG_DATABASE_URL": url,
            "SPRIG_REDIS_URL": redis_url,
            "SPRIG_CELERY_EAGER": "0",
            "SPRIG_SECRET_KEY": "soak",
            "SPRIG_LOG_LEVEL": "WARNING",
            "SPRIG_WORKERS": "2",
            "SPRIG_EXPORT_DIR": str(work / "exports"),
            "PROMETHEUS_MULTIPROC_DIR": str(work / "metrics"),
            # The soak measures survival, not the limits: none of them refuses its traffic.
            **{f"SPRIG_RATE_LIMIT_{name}": "" for name in LIMITS_OFF},
        }
        self.master: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None
        self.beat: subprocess.Popen | None = None
        self.restarts = collections.Counter()

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen:
        log = (self.work / f"{name}.log").open("ab")
        return subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip

    def start_web(self) -> None:
        self.master = self._spawn("gunicorn", [
            str(BIN / "gunicorn"), "-c", "python:market.entrypoints.gunicorn_conf",
            "--bind", f"127.0.0.1:{self.port}", "market.app:create_app()",
        ])  # fmt: skip
        if not wait_for(self.web_ready, WEB_START_S, 0.5):
            raise RuntimeError(f"gunicorn did not serve; see {self.work / 'gunicorn.log'}")

    def web_ready(self) -> bool:
        if len(self.web_workers()) < 2:
            return False
        try:
            return requests.get(self.base + API + "/health", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def web_workers(self) -> list[int]:
        return live_children(self.master.pid) if self.master else []

    def start_worker(self) -> None:
        self.worker = self._spawn("celery-worker", [
            str(BIN / "celery"), "-A", "market.entrypoints.worker:celery", "worker",
            "--loglevel", "WARNING", "--concurrency", "2", "--without-mingle",
            "--without-gossip",
        ])  # fmt: skip

    def start_beat(self) -> None:
        self.beat = self._spawn("celery-beat", [
            str(BIN / "celery"), "-A", "market.entrypoints.worker:celery", "beat",
            "--loglevel", "WARNING", "--schedule", str(self.work / "beat-schedule"),
        ])  # fmt: skip

    def worker_processes(self) -> list[int]:
        return [self.worker.pid, *live_children(self.worker.pid)] if self.worker else []

    def stop_all(self) -> None:
        for process in (self.beat, self.worker, self.master):
            if process is not None:
                stop(process.pid)
                process.wait(timeout=5)


# --------------------------------------------------------------------------- the world


@dataclass
class Person:
    id: int
    token: str

    @property
    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass
class World:
    people: list[Person]
    service_headers: dict
    subagents: list[tuple[int, int, int]]  # (id, latest version id, author id), public ones
    # acknowledged installs, (person index, subagent id, version id): what may be rated
    installed: list[tuple[int, int, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def load_world(url: str, work: Path) -> World:
    """The demo community (the CLI, niced: the machine is shared), tokens for some people and
    for a service account with every service scope the traffic needs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPRIG_DATABASE_URL": url}
    with psycopg.connect(database_dsn(url), autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    for command in (["db", "upgrade"], ["demo", "--no-tokens"]):
        with (work / "load.log").open("ab") as log:
            subprocess.run(["nice", "-n", "5", str(BIN / "sprig"), *command], cwd=ROOT, env=env,
                           check=True, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip

    from sqlmodel import Session, select

    from market.identity.models import User
    from market.identity.tokens import issue_token
    from market.platform.db import make_engine

    engine = make_engine(url)
    try:
        with Session(engine) as session:
            people = session.exec(
                select(User).where(User.kind == "person").order_by(User.id).limit(
                    PEOPLE_WITH_TOKENS)
            ).all()  # fmt: skip
            tokens = [Person(user.id, issue_token(session, user, None, "soak")) for user in people]
            service = User(handle="soak-service", display_name="Soak", kind="service")
            session.add(service)
            session.flush()
            scopes = ["events:write", "recommend", "suggest", "exports"]
            service_token = issue_token(session, service, scopes, "soak")
            session.commit()
    finally:
        engine.dispose()
    with psycopg.connect(database_dsn(url), autocommit=True) as conn:
        subagents = conn.execute(
            "SELECT id, latest_version_id, author_id FROM subagent WHERE visibility = 'public' "
            "AND status = 'active' AND latest_version_id IS NOT NULL ORDER BY id"
        ).fetchall()
    return World(tokens, {"Authorization": f"Bearer {service_token}"}, list(subagents))


# --------------------------------------------------------------------------- traffic


@dataclass
class Outcome:
    route: str
    scheduled: float  # monotonic seconds
    latency_ms: float
    status: int  # 0: no answer (connection error); -1: hung (the client's timeout)
    retry_after: bool = False


@dataclass
class Ledger:
    """What the clients were told: acknowledged writes by id, refused ones by what was sent."""

    published: list[int] = field(default_factory=list)
    forked: list[int] = field(default_factory=list)
    installs: list[tuple[int, int]] = field(default_factory=list)  # (user, subagent)
    events: list[str] = field(default_factory=list)
    ratings: list[tuple[int, int]] = field(default_factory=list)  # (user, version)
    refused: collections.Counter = field(default_factory=collections.Counter)
    refused_titles: list[str] = field(default_factory=list)
    refused_events: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def bundle(note: str) -> dict:
    return {
        "manifest": {"name": "Soak", "entry": "index.html", "scopes": [], "hosts": []},
        "files": {"index.html": f"<!doctype html><title>Soak</title>{note}"},
    }


class Traffic:
    def __init__(self, base: str, world: World, ledger: Ledger, timeout: float, seed: int):
        self.base = base
        self.world = world
        self.ledger = ledger
        self.timeout = timeout
        self.rng = random.Random(seed)
        self.outcomes: list[Outcome] = []
        self.outcomes_lock = threading.Lock()
        self.local = threading.local()
        self.counter = iter(range(10**9))
        self.run_tag = uuid.uuid4().hex[:8]

    def session(self) -> requests.Session:
        if not hasattr(self.local, "session"):
            self.local.session = requests.Session()
        return self.local.session

    def plan(self, rate: float, seconds: float) -> list[tuple[float, str]]:
        """(offset in seconds, kind) of every request: evenly spaced at ``rate``, the kinds
        drawn from MIX."""
        kinds, weights = zip(*MIX.items(), strict=True)
        count = int(rate * seconds)
        return [(i / rate, self.rng.choices(kinds, weights)[0]) for i in range(count)]

    def call(self, route: str, scheduled: float, method: str, path: str, **kwargs):
        """One request; its outcome recorded with the latency from its scheduled moment.
        Returns the response when it was answered."""
        response = None
        try:
            response = self.session().request(
                method, self.base + path, timeout=self.timeout, **kwargs
            )
            status = response.status_code
        except requests.Timeout:
            status = -1
            self.local.__dict__.pop("session", None)
        except requests.RequestException:
            status = 0
            self.local.__dict__.pop("session", None)
        outcome = Outcome(
            route, scheduled, (time.monotonic() - scheduled) * 1000, status,
            bool(response is not None and response.headers.get("Retry-After")),
        )  # fmt: skip
        with self.outcomes_lock:
            self.outcomes.append(outcome)
        return response if response is not None and status > 0 else None

    def refuse(self, kind: str) -> None:
        with self.ledger.lock:
            self.ledger.refused[kind] += 1

    def run_one(self, kind: str, scheduled: float, rng: random.Random) -> None:
        world = self.world
        subagent_id, _version_id, author_id = rng.choice(world.subagents)
        person_index = rng.randrange(len(world.people))
        person = world.people[person_index]
        if kind == "browse":
            sort = rng.choice(("new", "top", "trending"))
            self.call(kind, scheduled, "GET", f"{API}/subagents?sort={sort}")
        elif kind == "search":
            self.call(kind, scheduled, "GET", f"{API}/subagents?q={rng.choice(SEARCH_WORDS)}")
        elif kind == "detail":
            self.call(kind, scheduled, "GET", f"{API}/subagents/{subagent_id}")
        elif kind == "tree":
            self.call(kind, scheduled, "GET", f"{API}/subagents/{subagent_id}/tree")
        elif kind in ("publish", "fork"):
            self.write_listing(kind, scheduled, person, subagent_id)
        elif kind == "install":
            response = self.call(
                kind, scheduled, "POST", f"{API}/subagents/{subagent_id}/install",
                json={}, headers=person.headers,
            )  # fmt: skip
            if response is not None and response.status_code in (200, 201):
                body = response.json()
                with self.ledger.lock:
                    self.ledger.installs.append((person.id, subagent_id))
                if author_id != person.id:
                    with world.lock:
                        world.installed.append((person_index, subagent_id, body["version_id"]))
            else:
                self.refuse(kind)
        elif kind == "events":
            self.send_events(scheduled, rng)
        elif kind == "rating":
            self.rate(scheduled, rng)
        elif kind == "suggestions":
            self.call(kind, scheduled, "POST", f"{API}/suggestions",
                      json={"request": rng.choice(SUGGESTION_REQUESTS)},
                      headers=world.service_headers)  # fmt: skip
        elif kind == "recommendations":
            body = {"user_id": person.id, "k": 5}
            self.call(kind, scheduled, "POST", f"{API}/recommendations", json=body,
                      headers=world.service_headers)  # fmt: skip

    def write_listing(self, kind: str, scheduled: float, person: Person, parent_id: int) -> None:
        title = f"Soak {self.run_tag} {kind} {next(self.counter)}"
        body = {"title": title, "bundle": bundle(title)}
        if kind == "publish":
            body |= {"summary": "A soak listing.", "story": "Written by the soak.",
                     "category": "hobby", "tags": ["soak"]}  # fmt: skip
            path = f"{API}/subagents"
        else:
            body["fork_request"] = "make it mine"
            path = f"{API}/subagents/{parent_id}/forks"
        response = self.call(kind, scheduled, "POST", path, json=body, headers=person.headers)
        if response is not None and response.status_code in (200, 201):
            with self.ledger.lock:
                (self.ledger.published if kind == "publish" else self.ledger.forked).append(
                    response.json()["id"]
                )
        else:
            with self.ledger.lock:
                self.ledger.refused[kind] += 1
                self.ledger.refused_titles.append(title)

    def send_events(self, scheduled: float, rng: random.Random) -> None:
        world = self.world
        now = datetime.now(UTC)
        items = []
        for _ in range(EVENTS_PER_BATCH):
            subagent_id, version_id, _author = rng.choice(world.subagents)
            kind = rng.choice(("open", "open", "action", "session_end", "error"))
            item = {
                "event_id": str(uuid.uuid4()),
                "user_id": rng.choice(world.people).id,
                "subagent_id": subagent_id,
                "version_id": version_id,
                "kind": kind,
                "occurred_at": (now - timedelta(seconds=rng.random() * 30)).isoformat(),
            }
            if kind == "session_end":
                item["duration_ms"] = rng.randrange(1000, 600_000)
            items.append(item)
        response = self.call("events", scheduled, "POST", f"{API}/events",
                             json={"events": items}, headers=world.service_headers)  # fmt: skip
        ids = [item["event_id"] for item in items]
        with self.ledger.lock:
            if response is not None and response.status_code == 202:
                results = response.json()["results"]
                self.ledger.events += [
                    ids[r["index"]] for r in results if r["status"] in ("stored", "duplicate")
                ]
            else:
                self.ledger.refused["events"] += 1
                self.ledger.refused_events += ids

    def rate(self, scheduled: float, rng: random.Random) -> None:
        world = self.world
        with world.lock:
            choice = rng.choice(world.installed) if world.installed else None
        if choice is None:
            return
        person_index, _subagent_id, version_id = choice
        person = world.people[person_index]
        response = self.call("rating", scheduled, "POST", f"{API}/feedback",
                             json={"version_id": version_id, "stars": rng.randint(1, 5)},
                             headers=person.headers)  # fmt: skip
        if response is not None and response.status_code in (200, 201):
            with self.ledger.lock:
                self.ledger.ratings.append((person.id, version_id))
        else:
            self.refuse("rating")

    def drive(self, plan: list[tuple[float, str]], start: float, threads: int, done) -> None:
        """Submit each request at its moment until ``done()``; a busy pool queues it, and its
        latency still counts from the moment it was due."""
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for index, (offset, kind) in enumerate(plan):
                if done():
                    break
                due = start + offset
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(self._safe_run, kind, due, random.Random(index))

    def _safe_run(self, kind: str, due: float, rng: random.Random) -> None:
        try:
            self.run_one(kind, due, rng)
        except Exception as error:  # a client bug must show, not vanish in the pool
            print(f"client error in {kind}: {type(error).__name__}: {error}", file=sys.stderr)
            with self.outcomes_lock:
                self.outcomes.append(Outcome(kind, due, 0.0, 0))


def run_export(traffic: Traffic, deadline: float) -> dict:
    """One reward-export run started through the API, polled until it ends (or ``deadline``)."""
    headers = traffic.world.service_headers
    started = time.monotonic()
    response = None
    while response is None or response.status_code >= 500:
        if time.monotonic() > deadline:
            return {"status": "not started"}
        response = traffic.call("export", time.monotonic(), "POST", f"{API}/exports",
                                json={}, headers=headers)  # fmt: skip
        if response is None or response.status_code >= 500:
            time.sleep(2)
    if response.status_code != 202:
        return {"status": f"refused {response.status_code}"}
    run_id = response.json()["id"]
    status = response.json()["status"]
    while status in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(2)
        polled = traffic.call("export", time.monotonic(), "GET", f"{API}/exports/{run_id}",
                              headers=headers)  # fmt: skip
        if polled is not None and polled.status_code == 200:
            status = polled.json()["status"]
    return {"id": run_id, "status": status, "seconds": round(time.monotonic() - started, 1)}


# --------------------------------------------------------------------------- faults


@dataclass
class Fault:
    name: str
    started: float
    recovered: float | None = None
    note: str = ""


def inject(name: str, stack: Stack, services: Services, work: Path) -> str:
    """Do the fault and bring back what it took down; a note of what happened."""
    if name == "web worker":
        workers = stack.web_workers()
        if not workers:
            return "no worker to kill"
        victim = random.choice(workers)
        os.kill(victim, signal.SIGKILL)
        if not wait_for(lambda: len(stack.web_workers()) >= 2 and victim not in
                        stack.web_workers(), 60, 0.2):  # fmt: skip
            return "the master did not replace the worker"
        return f"killed {victim}"
    if name == "celery worker":
        processes = stack.worker_processes()
        os.kill(processes[0], signal.SIGKILL)
        # Its pool's children lose their parent: they must go too, as they would with it.
        lingering = [pid for pid in processes[1:] if not wait_for(lambda p=pid: not alive(p), 10)]
        for pid in lingering:
            os.kill(pid, signal.SIGKILL)
        stack.worker.wait(timeout=5)
        stack.start_worker()
        stack.restarts["celery worker"] += 1
        return f"killed {processes[0]}" + (f", {len(lingering)} children lingered" if lingering
                                           else "")  # fmt: skip
    if name == "gunicorn master":
        master, workers = stack.master.pid, stack.web_workers()
        killed_at = time.monotonic()
        os.kill(master, signal.SIGKILL)
        stack.master.wait(timeout=5)
        # Orphaned workers notice their parent is gone, finish what they hold (the graceful
        # timeout) and exit; until then they hold the port.
        gone = wait_for(lambda: not any(alive(pid) for pid in workers), 30)
        orphans_s = time.monotonic() - killed_at
        stuck = {pid: threads_waiting(pid) for pid in workers if alive(pid)}
        for pid in stuck:
            os.kill(pid, signal.SIGKILL)
        stack.start_web()
        stack.restarts["gunicorn master"] += 1
        orphans = "exited" if gone else f"lingered past 30 s, killed (threads waiting in {stuck})"
        return f"killed {master}; its workers {orphans} after {orphans_s:.1f} s"
    if name == "redis":
        services.kill_redis()
        time.sleep(1)
        services.start_redis()
        return "killed and started"
    if name == "postgresql":
        services.restart_postgres()
        return "immediate restart"
    raise ValueError(name)


def fault_schedule(seconds: float, quick: bool) -> list[tuple[float, str]]:
    """Faults spread over the middle of the run (quiet at both ends): each once when quick,
    else cycling, one every ~90 seconds."""
    first, last = 0.12 * seconds, 0.85 * seconds
    count = len(FAULTS) if quick else max(len(FAULTS), int((last - first) / 90) + 1)
    step = (last - first) / max(1, count - 1)
    return [(first + i * step, FAULTS[i % len(FAULTS)]) for i in range(count)]


# The memory roles whose processes a fault replaces.
RESTARTED_BY = {
    "web worker": ("web workers",),
    "celery worker": ("celery worker",),
    "gunicorn master": ("gunicorn master", "web workers"),
    "redis": ("redis",),
    "postgresql": ("postgresql",),
}


def restarted_roles(faults: list[Fault]) -> dict[str, list[float]]:
    restarts = collections.defaultdict(list)
    for fault in faults:
        for role in RESTARTED_BY[fault.name]:
            restarts[role].append(fault.recovered or fault.started)
    return dict(restarts)


def run_faults(schedule, start, stack, services, work, faults: list[Fault], stop_event) -> None:
    for offset, name in schedule:
        delay = start + offset - time.monotonic()
        if delay > 0 and stop_event.wait(delay):
            return
        fault = Fault(name, time.monotonic())
        faults.append(fault)
        try:
            fault.note = inject(name, stack, services, work)
        except Exception as error:  # recorded: a fault that does not recover is a finding
            fault.note = f"FAILED: {type(error).__name__}: {error}"
        fault.recovered = time.monotonic()
        print(f"  fault {name}: {fault.note} ({fault.recovered - fault.started:.1f} s)",
              flush=True)  # fmt: skip


# --------------------------------------------------------------------------- memory


class MemorySampler:
    """Resident memory per role every few seconds (/proc), summed over the role's processes."""

    def __init__(self, stack: Stack, services: Services):
        self.stack = stack
        self.services = services
        # Per role: (moment, MB summed over its processes, how many processes).
        self.samples: dict[str, list[tuple[float, float, int]]] = collections.defaultdict(list)

    def roles(self) -> dict[str, tuple[list[int], bool]]:
        stack, services = self.stack, self.services
        pg = services.postgres_pid()
        redis_pid = services.redis_pid()
        worker = stack.worker_processes()
        return {
            "web workers": (stack.web_workers(), False),
            "gunicorn master": ([stack.master.pid] if stack.master else [], False),
            "celery worker": (worker, False),
            "celery beat": ([stack.beat.pid] if stack.beat else [], False),
            # Backends share the buffer pool: count each one's own pages, the postmaster whole.
            "postgresql": ([pg, *live_children(pg)] if pg else [], True),
            "redis": ([redis_pid] if redis_pid else [], False),
        }

    def sample(self) -> None:
        now = time.monotonic()
        for role, (pids, private) in self.roles().items():
            sizes = [rss_mb(pid, private=private and i > 0) for i, pid in enumerate(pids)]
            sizes = [size for size in sizes if size is not None]
            if sizes:
                self.samples[role].append((now, sum(sizes), len(sizes)))

    def loop(self, stop_event) -> None:
        while not stop_event.wait(SAMPLE_EVERY_S):
            self.sample()

    def report(self, warmed_up: float, restarts: dict[str, list[float]] | None = None) -> dict:
        """Per role, over each incarnation of its processes (a fault that restarts them starts
        a new one): the median of the first and of the last third of the samples taken once
        it warmed up (``warmed_up`` for the first, WARM_UP_S after a restart: a fresh process
        grows while it fills its pools, caches and indexes, which is not a leak). Flagged when
        the last is well above the first in any incarnation with enough samples, per process:
        PostgreSQL starts a backend per pooled connection, and pools refill after a fault at
        their own pace, so the sum grows with the count while no backend grows. The figures
        shown are the longest incarnation's, the sum and the count beside the per-process
        figure that is judged."""
        rows = {}
        for role, points in self.samples.items():
            starts = sorted((restarts or {}).get(role, []))
            bounds = [warmed_up, *(moment + WARM_UP_S for moment in starts)]
            ends = [*starts, float("inf")]
            judged = []
            for low, high in zip(bounds, ends, strict=True):
                window = [(mb, count) for moment, mb, count in points if low <= moment < high]
                if len(window) < MIN_SAMPLES:
                    continue
                third = len(window) // 3
                first, last = window[:third], window[-third:]
                each_first = statistics.median(mb / count for mb, count in first)
                each_last = statistics.median(mb / count for mb, count in last)
                growing = (
                    each_last > each_first * GROWTH_RATIO and each_last - each_first > GROWTH_MB
                )
                judged.append(
                    (
                        len(window),
                        statistics.median(mb for mb, _count in first),
                        statistics.median(mb for mb, _count in last),
                        statistics.median(count for _mb, count in first),
                        statistics.median(count for _mb, count in last),
                        each_first,
                        each_last,
                        growing,
                    )
                )
            longest = max(judged, default=None)
            shown = [round(figure, 1) for figure in longest[1:7]] if longest else [None] * 6
            rows[role] = {
                "first_mb": shown[0],
                "last_mb": shown[1],
                "processes_first": shown[2],
                "processes_last": shown[3],
                "per_process_first_mb": shown[4],
                "per_process_last_mb": shown[5],
                "max_mb": round(max(mb for _moment, mb, _count in points), 1),
                "samples": len(points),
                "incarnations_judged": len(judged),
                "flat": not any(figures[-1] for figures in judged),
            }
        return rows


# --------------------------------------------------------------------------- proofs


def check_writes(url: str, ledger: Ledger) -> dict:
    """Each acknowledged write in the database exactly once; nothing refused there twice."""
    with psycopg.connect(database_dsn(url), autocommit=True) as conn:

        def count_by(query: str, keys: list) -> collections.Counter:
            found = collections.Counter()
            for start in range(0, len(keys), 5000):
                chunk = keys[start : start + 5000]
                found.update(row[0] for row in conn.execute(query, (chunk,)).fetchall())
            return found

        results = {}
        listings = ledger.published + ledger.forked
        rows = count_by("SELECT id FROM subagent WHERE id = ANY(%s)", listings)
        results["listings"] = tally(listings, rows)
        refused = count_by("SELECT title FROM subagent WHERE title = ANY(%s)",
                           ledger.refused_titles)  # fmt: skip
        results["listings"]["refused_but_stored"] = len(refused)
        results["listings"]["refused_stored_twice"] = sum(1 for n in refused.values() if n > 1)

        events = ledger.events
        rows = count_by("SELECT event_id::text FROM usage_event WHERE event_id = ANY(%s::uuid[])",
                        events)  # fmt: skip
        results["events"] = tally(events, rows)
        refused = count_by(
            "SELECT event_id::text FROM usage_event WHERE event_id = ANY(%s::uuid[])",
            ledger.refused_events,
        )
        results["events"]["refused_but_stored"] = len(refused)
        results["events"]["refused_stored_twice"] = sum(1 for n in refused.values() if n > 1)

        installs = sorted(set(ledger.installs))
        found = collections.Counter(
            (u, s) for u, s in conn.execute("SELECT user_id, subagent_id FROM install").fetchall()
        )
        results["installs"] = tally(installs, found)
        ratings = sorted(set(ledger.ratings))
        found = collections.Counter(
            (u, v) for u, v in conn.execute("SELECT user_id, version_id FROM feedback").fetchall()
        )
        results["ratings"] = tally(ratings, found)
    return results


def tally(acknowledged: list, stored: collections.Counter) -> dict:
    unique = set(acknowledged)
    return {
        "acknowledged": len(acknowledged),
        "acknowledged_twice": len(acknowledged) - len(unique),
        "missing": sum(1 for key in unique if stored[key] == 0),
        "duplicated": sum(1 for key in unique if stored[key] > 1),
    }


def catch_up(url: str, redis_url: str) -> dict:
    """Ask the worker for a rollup and a ranking run until no mark waits and the ranking's
    watermark is the data's: what beat would do, sooner."""
    from celery import Celery
    from sqlmodel import Session, select

    from market.platform.db import make_engine
    from market.ranking.models import RankingRun
    from market.ranking.services import watermark
    from market.usage.rollups import rollup_pending

    sender = Celery("soak", broker=redis_url)
    engine = make_engine(url)
    started = time.monotonic()
    state = {"rollup_pending": True, "ranking_behind": True}
    try:
        while time.monotonic() - started < CATCH_UP_S:
            with Session(engine) as session:
                state["rollup_pending"] = rollup_pending(session)
                last = session.scalars(
                    select(RankingRun).where(RankingRun.mode != "skipped")
                    .order_by(RankingRun.id.desc())
                ).first()  # fmt: skip
                seen = last.parameters.get("watermark") if last is not None else None
                state["ranking_behind"] = seen != watermark(session)
            if not any(state.values()):
                break
            for task in ("sprig.rollup", "sprig.rank"):
                sender.send_task(task)
            time.sleep(15)
    finally:
        engine.dispose()
    return {**state, "seconds": round(time.monotonic() - started, 1)}


def recount_rollup(url: str, since: datetime) -> dict:
    """The rollup's tables against a recount from the raw rows: mark every (sub-agent, day)
    the soak could touch, run the rollup, compare, roll back."""
    from sqlalchemy import text
    from sqlmodel import Session

    from market.platform.db import make_engine
    from market.usage.rollups import mark_dirty, run_rollup

    days = []
    day = since.date() - timedelta(days=1)
    while day <= datetime.now(UTC).date():
        days.append(day)
        day += timedelta(days=1)
    engine = make_engine(url)
    try:
        with Session(engine) as session:

            def snapshot() -> tuple[set, set]:
                daily = set(session.execute(
                    text("SELECT * FROM daily_stats WHERE day = ANY(:days)"), {"days": days}
                ).all())  # fmt: skip
                daily = {tuple(v for k, v in row._mapping.items() if k != "id") for row in daily}
                cohorts = session.execute(
                    text("SELECT subagent_id, install_day, cohort_size, day1, day7, day30 "
                         "FROM retention_cohort WHERE install_day >= :low"),
                    {"low": days[0] - timedelta(days=31)},
                ).all()  # fmt: skip
                return daily, set(map(tuple, cohorts))

            before = snapshot()
            subagent_ids = session.execute(text("SELECT id FROM subagent")).scalars().all()
            mark_dirty(session, [(s, d) for s in subagent_ids for d in days])
            outcome = run_rollup(session)
            after = snapshot()
            session.rollback()
    finally:
        engine.dispose()
    return {
        "ran": not outcome.get("skipped"),
        "days": len(days),
        "daily_rows": len(after[0]),
        "daily_mismatches": len(before[0] ^ after[0]),
        "cohort_rows": len(after[1]),
        "cohort_mismatches": len(before[1] ^ after[1]),
    }


def recount_counters(url: str) -> dict:
    """Install and fork counters against ``recount_counters`` (rolled back): it reports what
    it had to fix."""
    from sqlmodel import Session

    from market.catalog.maintenance import recount_counters as recount
    from market.platform.db import make_engine

    engine = make_engine(url)
    try:
        with Session(engine) as session:
            fixed = recount(session)
            session.rollback()
    finally:
        engine.dispose()
    return fixed


# --------------------------------------------------------------------------- report


def fault_row(fault: Fault, start: float) -> dict:
    return {
        "name": fault.name,
        "at_s": round(fault.started - start, 1),
        "seconds": round((fault.recovered or fault.started) - fault.started, 1),
        "note": fault.note,
    }


def route_table(outcomes: list[Outcome], faults: list[Fault]) -> dict:
    windows = [(f.started, (f.recovered or f.started) + FAULT_WINDOW_AFTER_S) for f in faults]

    def in_fault(outcome: Outcome) -> bool:
        """Whether the request was due or still waiting for its answer in a fault's window."""
        low, high = outcome.scheduled, outcome.scheduled + outcome.latency_ms / 1000
        return any(low <= end and start <= high for start, end in windows)

    table = {}
    for route in sorted({o.route for o in outcomes}):
        row = {}
        for label, wanted in (("faults", True), ("steady", False)):
            chosen = [o for o in outcomes if o.route == route and in_fault(o) == wanted]
            ok = [o.latency_ms for o in chosen if 0 < o.status < 500]
            errors = [o for o in chosen if o.status >= 500 or o.status <= 0]
            row[label] = {
                "requests": len(chosen),
                "error_rate": round(len(errors) / len(chosen), 4) if chosen else 0.0,
                "p50_ms": round(percentile(ok, 50), 1) if ok else None,
                "p99_ms": round(percentile(ok, 99), 1) if ok else None,
                "4xx": sum(1 for o in chosen if 400 <= o.status < 500),
                "5xx": sum(1 for o in chosen if o.status >= 500),
                "5xx_without_retry_after": sum(
                    1 for o in chosen if o.status >= 500 and not o.retry_after
                ),
                "no_answer": sum(1 for o in chosen if o.status == 0),
                "hung": sum(1 for o in chosen if o.status == -1),
            }
        table[route] = row
    return table


def print_report(report: dict) -> None:
    print(f"\nsoak: {report['minutes']} min at {report['rate']} req/s, {report['requests']} "
          f"requests, load average {report['loadavg_1m']} (1 min) on {os.cpu_count()} CPUs, "
          f"timeout {report['timeout_s']} s")  # fmt: skip
    print("\nfaults:")
    for fault in report["faults"]:
        print(f"  +{fault['at_s']:>6.0f} s  {fault['name']:<16} {fault['seconds']:>5.1f} s  "
              f"{fault['note']}")  # fmt: skip
    header = f"{'route':<16}{'window':<8}{'reqs':>7}{'err%':>7}{'p50 ms':>9}{'p99 ms':>9}"
    print("\n" + header + f"{'4xx':>6}{'5xx':>6}{'5xx!RA':>7}{'noans':>6}{'hung':>5}")
    for route, row in report["routes"].items():
        for label, cell in row.items():
            print(
                f"{route:<16}{label:<8}{cell['requests']:>7}{100 * cell['error_rate']:>7.2f}"
                f"{cell['p50_ms'] or float('nan'):>9.1f}{cell['p99_ms'] or float('nan'):>9.1f}"
                f"{cell['4xx']:>6}{cell['5xx']:>6}{cell['5xx_without_retry_after']:>7}"
                f"{cell['no_answer']:>6}{cell['hung']:>5}"
            )
    print("\nacknowledged writes (in the database exactly once?):")
    for kind, row in report["writes"].items():
        print(f"  {kind:<9} " + ", ".join(f"{k} {v}" for k, v in row.items()))
    print("  refused (5xx, no answer, hung; may be absent): "
          + ", ".join(f"{k} {v}" for k, v in sorted(report["refused"].items())))  # fmt: skip
    print(f"\nrollup vs recount: {report['rollup_recount']}")
    print(f"counters recount fixed: {report['counters_recount']}")
    print(f"catch-up: {report['catch_up']}")
    print(f"export run: {report['export']}")
    print("\nresident memory (MB; medians of the first and last thirds after warm-up: summed "
          "per role, processes, per process, which is judged):")  # fmt: skip
    for role, row in report["memory"].items():
        shown = {key: float("nan") if value is None else value for key, value in row.items()}
        print(f"  {role:<16} {shown['first_mb']:>8.1f} -> {shown['last_mb']:>8.1f} in "
              f"{shown['processes_first']:.0f} -> {shown['processes_last']:.0f} processes, "
              f"{shown['per_process_first_mb']:.1f} -> {shown['per_process_last_mb']:.1f} each "
              f"(max {row['max_mb']:.1f}, {row['samples']} samples, "
              f"{row['incarnations_judged']} incarnations judged) "
              f"{'flat' if row['flat'] else 'GROWING'}")  # fmt: skip
    print("\nchecks: " + ("all passed" if not report["failed"] else
                          "FAILED " + ", ".join(report["failed"])))  # fmt: skip


def checks(report: dict) -> list[str]:
    failed = []
    for kind, row in report["writes"].items():
        for key in ("missing", "duplicated", "refused_stored_twice"):
            if row.get(key):
                failed.append(f"{kind}.{key}")
    hung = sum(cell["hung"] for row in report["routes"].values() for cell in row.values())
    if hung:
        failed.append("hung_requests")
    bare = sum(
        row["steady"]["5xx"] + row["faults"]["5xx_without_retry_after"]
        for row in report["routes"].values()
    )
    if bare:
        failed.append("5xx_outside_faults_or_without_retry_after")
    recount = report["rollup_recount"]
    if not recount["ran"] or recount["daily_mismatches"] or recount["cohort_mismatches"]:
        failed.append("rollup_equals_recount")
    if any(report["counters_recount"].values()):
        failed.append("counters_equal_recount")
    if report["catch_up"]["rollup_pending"] or report["catch_up"]["ranking_behind"]:
        failed.append("caught_up")
    if report["export"].get("status") != "succeeded":
        failed.append("export_run")
    if any(fault["note"].startswith("FAILED") for fault in report["faults"]):
        failed.append("fault_recovery")
    failed += [f"memory.{role}" for role, row in report["memory"].items() if not row["flat"]]
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="about 3 minutes, each fault once")
    parser.add_argument("--minutes", type=float, default=None, help="default 30 (3 with --quick)")
    parser.add_argument("--rate", type=float, default=5.0, help="requests per second")
    parser.add_argument("--timeout", type=float, default=30.0, help="client timeout (hung)")
    parser.add_argument("--threads", type=int, default=48, help="client threads")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not os.environ.get("SPRIG_TEST_SERVICES_DIR"):
        os.environ.pop("SPRIG_TEST_POSTGRES_URL", None)
        os.environ.pop("SPRIG_BENCH_DATABASE_URL", None)
    url = database_url_or_rerun_with_servers()
    minutes = args.minutes or (3.0 if args.quick else 30.0)
    seconds = minutes * 60
    redis_url = os.environ["SPRIG_TEST_REDIS_URL"]
    services = Services()
    work = Path(tempfile.mkdtemp(prefix="sprig-soak-"))
    print(f"soak: work dir {work} (logs), code {code_version()}", flush=True)

    loaded = time.monotonic()
    world = load_world(url, work)
    print(f"demo loaded in {time.monotonic() - loaded:.0f} s: {len(world.subagents)} public "
          f"sub-agents, {len(world.people)} people with tokens", flush=True)  # fmt: skip
    # Durable from here on, before any fault: the load itself need not wait for the disk.
    durable(url)

    stack = Stack(url, redis_url, work)
    ledger = Ledger()
    faults: list[Fault] = []
    stop_event = threading.Event()
    try:
        stack.start_worker()
        stack.start_beat()
        stack.start_web()
        traffic = Traffic(stack.base, world, ledger, args.timeout, args.seed)
        sampler = MemorySampler(stack, services)
        # Planned for twice the time: a fault that overran its slot (a slow restart) delays the
        # next ones, and traffic goes on until the last has been recovered from.
        plan = traffic.plan(args.rate, 2 * seconds)
        since = datetime.now(UTC)
        start = time.monotonic() + 1
        schedule = fault_schedule(seconds, args.quick)
        threads = [
            threading.Thread(target=sampler.loop, args=(stop_event,), daemon=True),
            threading.Thread(
                target=run_faults,
                args=(schedule, start, stack, services, work, faults, stop_event),
                daemon=True,
            ),
        ]
        for thread in threads:
            thread.start()
        export_result: dict = {}

        def export_later() -> None:
            time.sleep(max(0.0, start + 0.05 * seconds - time.monotonic()))
            export_result.update(run_export(traffic, start + seconds + 120))

        exporter = threading.Thread(target=export_later, daemon=True)
        exporter.start()
        print(f"driving {args.rate:g} requests/s for {minutes:g} min and until the faults "
              "are over ...", flush=True)  # fmt: skip
        fault_thread = threads[1]

        def done() -> bool:
            now = time.monotonic()
            if now < start + seconds or fault_thread.is_alive():
                return False
            last = max((f.recovered or now for f in faults), default=start)
            return now > last + QUIET_TAIL_S

        traffic.drive(plan, start, args.threads, done)
        stop_event.set()
        for thread in threads:
            thread.join(timeout=180)
        exporter.join(timeout=300)
        for role, check in (("redis", services.redis_up),):
            if not check():
                print(f"{role} was down at the end", flush=True)
        caught = catch_up(url, redis_url)
        report = {
            "bench": "soak",
            "minutes": round((time.monotonic() - start) / 60, 1),
            "rate": args.rate,
            "requests": len(traffic.outcomes),
            "loadavg_1m": round(os.getloadavg()[0], 2),
            "code": code_version(),
            "timeout_s": args.timeout,
            "faults": [fault_row(fault, start) for fault in faults],
            "routes": route_table(traffic.outcomes, faults),
            "hung": [
                [o.route, round(o.scheduled - start, 1)] for o in traffic.outcomes if o.status == -1
            ],
            "writes": check_writes(url, ledger),
            "refused": dict(ledger.refused),
            "catch_up": caught,
            "rollup_recount": recount_rollup(url, since),
            "counters_recount": recount_counters(url),
            "export": export_result or {"status": "not finished"},
            "memory": sampler.report(
                start + max(WARM_UP_S, WARM_UP_SHARE * seconds), restarted_roles(faults)
            ),
            "restarts": dict(stack.restarts),
        }
    finally:
        stop_event.set()
        stack.stop_all()
    report["failed"] = checks(report)
    print_report(report)
    print(json.dumps(report, default=str))
    sys.exit(1 if report["failed"] else 0)


if __name__ == "__main__":
    main()
