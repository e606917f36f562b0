"""What the event benchmarks share: a migrated PostgreSQL with people, public sub-agents and a
service account holding an ``events:write`` token; valid random events as API JSON or COPY rows;
and the report's common parts (the code measured, the load average, the checks)."""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import subprocess
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from bench.catalog import copy_people

ROOT = Path(__file__).resolve().parent.parent
PATH = "/api/v1/events"
BATCH = 1000
DUPLICATE_SHARE = 0.05
# open 8, action 7, session_end 4, error 1 (out of 20)
KIND_TABLE = ("open",) * 8 + ("action",) * 7 + ("session_end",) * 4 + ("error",)
EVENT_COLUMNS = (
    "event_id, client_id, user_id, subagent_id, version_id, kind, occurred_at, occurred_day, "
    "duration_ms, properties, exposure_id, received_at"
)
ACTION_PROPERTIES = '{"screen":"home"}'
NULL = "\\N"  # COPY text format


def database_dsn(url: str) -> str:
    """The SQLAlchemy URL as a libpq connection string, for psycopg."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def add_world_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--subagents", type=int, default=2_000)


# --------------------------------------------------------------------------- setup
def setup(url: str, n_users: int, n_subagents: int, seed: int) -> dict:
    """Migrate a fresh schema; COPY people, public sub-agents (one version each) and a service
    account; issue the service a token with ``events:write``; read the ids back."""
    import psycopg
    from sqlmodel import Session

    from market.identity.models import User
    from market.identity.tokens import issue_token
    from market.platform.db import make_engine
    from market.platform.migrate import upgrade

    dsn = database_dsn(url)
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


# --------------------------------------------------------------------------- synthetic events
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


def truncate(url: str, *tables: str) -> None:
    import psycopg

    with psycopg.connect(database_dsn(url), autocommit=True) as conn:
        conn.execute(f"TRUNCATE {', '.join(tables)}")


# --------------------------------------------------------------------------- report
def code_version() -> str:
    """The commit measured, and whether the ingest path differs from it in the work tree."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "diff", "--quiet", "HEAD", "--", "feedback", "market"],
            cwd=ROOT,
            capture_output=True,
        ).returncode
    except OSError:
        return "unknown"
    return f"{sha or 'unknown'}{'+local changes' if dirty else ''}"


def print_load(phases: dict) -> None:
    """The 1-minute load average after each phase, flagged when other processes competed."""
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


def take_checks(phases: dict) -> list[str]:
    """Remove each phase's ``checks`` and print them; the names of those that failed."""
    checks = {name: phase.pop("checks") for name, phase in phases.items()}
    failed = [f"{k}.{c}" for k, v in checks.items() for c, ok in v.items() if not ok]
    print("checks: " + ("all passed" if not failed else "FAILED " + ", ".join(failed)))
    return failed
