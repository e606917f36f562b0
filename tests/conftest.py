"""Fixtures: the app on every configured database backend, schema built by the migrations.

SQLite always runs; PostgreSQL runs when ``SPRIG_TEST_POSTGRES_URL`` is set (``make test``
starts a real server and sets it). Under CI a missing PostgreSQL is an error, not a skip.

``make_app`` builds every test app (per test: ``app``; per module: the modules that seed a
world of their own), so each starts and ends on an empty database and leaves no engine open.
The demo community is loaded once per backend (``demo_template_of``); each module that reads
it (``demo_app``), the browser tests' server and the backup drill get a copy of their own
(``copy_of_demo``).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from filelock import FileLock
from flask import Flask
from sqlalchemy import make_url, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from market.app import create_app
from market.demo.loader import load_demo
from market.platform.db import make_engine
from market.platform.limits import LIMIT_CLASSES
from market.platform.migrate import upgrade
from market.platform.schema_registry import import_all_models
from market.platform.state import app_state
from tests.log_scanner import LogScanner
from tests.xdist_worker import WORKER_ID, own_database, own_redis_url, worker_index


def pytest_configure(config) -> None:
    """Under pytest-xdist, point this worker at test servers' databases of its own before any
    test (or any server a test starts, which inherits the environment) reads the URLs."""
    if not WORKER_ID:
        return
    if url := os.environ.get("SPRIG_TEST_POSTGRES_URL"):
        name = own_database(make_url(url).database)
        _admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')
        os.environ["SPRIG_TEST_POSTGRES_URL"] = _database_named(url, name)
    if url := os.environ.get("SPRIG_TEST_REDIS_URL"):
        os.environ["SPRIG_TEST_REDIS_URL"] = own_redis_url(url)


@pytest.fixture(scope="session", autouse=True)
def log_scanner() -> Iterator[LogScanner]:
    """Every log record of the session, from any logger at any level that is on, is checked:
    no API token and no personal value of the test factories may be logged. A leak fails the
    session (an error at the last test's teardown) naming the logger and what leaked."""
    scanner = LogScanner()
    root = logging.getLogger()
    root.addHandler(scanner)
    try:
        yield scanner
    finally:
        root.removeHandler(scanner)
    if scanner.findings:
        shown = "\n".join(f"  {name}: {', '.join(found)}" for name, found in scanner.findings[:20])
        pytest.fail(f"{len(scanner.findings)} log lines leak a secret or personal data:\n{shown}")


def _backends() -> list[str]:
    backends = ["sqlite"]
    if os.environ.get("SPRIG_TEST_POSTGRES_URL"):
        backends.append("postgresql")
    elif os.environ.get("CI"):
        raise RuntimeError("CI must test PostgreSQL: set SPRIG_TEST_POSTGRES_URL")
    return backends


@pytest.fixture(scope="session", params=_backends())
def database_url(request, tmp_path_factory) -> str:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'sprig.db'}"
    else:
        url = os.environ["SPRIG_TEST_POSTGRES_URL"]
        engine = make_engine(url)
        with engine.begin() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
        engine.dispose()
    upgrade(url)
    return url


def _wipe(engine) -> None:
    import_all_models()
    tables = [t.name for t in SQLModel.metadata.sorted_tables]
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            # Not under the app's request limit (request_statement_timeout_ms, 300 ms in its
            # own tests): on a loaded machine a TRUNCATE of every table can take longer.
            connection.execute(text("SET LOCAL statement_timeout = 0"))
            connection.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
        else:
            connection.execute(text("PRAGMA foreign_keys=OFF"))
            for table in reversed(tables):
                connection.execute(text(f"DELETE FROM {table}"))  # noqa: S608 - our table names
            connection.execute(text("PRAGMA foreign_keys=ON"))


# Tests act as a handful of clients making hundreds of calls in seconds: the rate limits are
# off unless a test sets one (tests/functional/test_rate_limits.py).
NO_RATE_LIMITS = {f"rate_limit_{name}": "" for name in LIMIT_CLASSES}


def configured_app(database_url: str, **settings) -> Flask:
    """A test app on ``database_url``: the read cache off (its own tests turn it on), so counts
    are read fresh, and no rate limit."""
    return create_app(
        {
            "database_url": database_url,
            "testing": True,
            "secret_key": "test",
            "read_cache_seconds": 0,
            **NO_RATE_LIMITS,
            **settings,
        }
    )


@contextmanager
def make_app(database_url: str, **settings) -> Iterator[Flask]:
    """A :func:`configured_app` on a database wiped before and after, its engines disposed after."""
    app = configured_app(database_url, **settings)
    state = app_state(app)
    _wipe(state.engine)  # whatever an earlier module left behind
    try:
        yield app
    finally:
        _wipe(state.engine)
        state.engine.dispose()
        state.read_engine.dispose()


@pytest.fixture
def app(database_url, tmp_path):
    # Exports go to the test's own directory and read feedback up to the very moment they start.
    with make_app(
        database_url, export_dir=str(tmp_path / "exports"), export_settle_seconds=0
    ) as app:
        yield app


DEMO_SEED = 7  # what `sprig demo` loads by default


@dataclass
class DemoTemplate:
    url: str  # a database of its own holding the loaded demo, never served from
    stats: dict[str, int]  # what load_demo reports it made
    seconds: float  # how long loading took
    now: datetime  # the clock reading the whole demo is anchored at
    progress: list[str]  # the lines load_demo told the person waiting


@dataclass
class DemoApp:
    app: Flask
    engine: Engine
    template: DemoTemplate  # the load this app's database is a copy of


# One loaded demo per backend for the whole run, shared by every xdist worker (each database of
# a copy is its worker's own).
DEMO_TEMPLATE_DB = "sprig_demo_template"


def _database_named(database_url: str, name: str) -> str:
    return make_url(database_url).set(database=name).render_as_string(hide_password=False)


def _admin(database_url: str, *statements: str) -> None:
    """Run ``statements`` on the server's ``postgres`` database, outside a transaction
    (``CREATE DATABASE`` and ``DROP DATABASE`` refuse to run inside one)."""
    admin = make_engine(_database_named(database_url, "postgres"), autocommit=True)
    try:
        with admin.connect() as connection:
            for statement in statements:
                connection.execute(text(statement))
    finally:
        admin.dispose()


def _dispose(app: Flask) -> None:
    state = app_state(app)
    state.engine.dispose()
    state.read_engine.dispose()


@contextmanager
def _demo_template_lock(tmp_path_factory, backend: str) -> Iterator[Path]:
    """Held while the run's demo template of ``backend`` is made or copied: the path of its
    description, in a folder every xdist worker of this run shares (pytest's own temporary
    folder of the run)."""
    shared = tmp_path_factory.getbasetemp()
    if WORKER_ID:
        shared = shared.parent
    description = shared / f"demo-template-{backend}.json"
    with FileLock(f"{description}.lock"):
        yield description


def _postgres_server_url() -> str:
    """This worker's own PostgreSQL database (pytest_configure), whose server holds the
    template and its copies."""
    return os.environ["SPRIG_TEST_POSTGRES_URL"]


def demo_template_of(backend: str, tmp_path_factory) -> DemoTemplate:
    """The demo community loaded once per backend for the whole run (a minute and more), by
    the first xdist worker to need it while the others wait, into a database of its own that
    is only ever copied (:func:`copy_of_demo`). The throwaway servers of
    scripts/test-services.sh and pytest's temporary folders take it away after the run."""
    with _demo_template_lock(tmp_path_factory, backend) as description:
        if description.is_file():
            made = json.loads(description.read_text())
            return DemoTemplate(**{**made, "now": datetime.fromisoformat(made["now"])})
        if backend == "postgresql":
            server = _postgres_server_url()
            url = _database_named(server, DEMO_TEMPLATE_DB)
            _admin(
                server,
                f'DROP DATABASE IF EXISTS "{DEMO_TEMPLATE_DB}" WITH (FORCE)',
                f'CREATE DATABASE "{DEMO_TEMPLATE_DB}"',
            )
        else:
            url = f"sqlite:///{description.parent / 'demo-template-sqlite.db'}"
        upgrade(url)
        app = configured_app(url)
        try:
            started, now = time.perf_counter(), datetime.now(UTC)
            progress: list[str] = []
            stats = load_demo(
                app_state(app).engine, seed=DEMO_SEED, now=now, progress=progress.append
            )
            seconds = time.perf_counter() - started
        finally:
            _dispose(app)  # a template must have no open connection to be copied
        template = DemoTemplate(url, stats, seconds, now, progress)
        description.write_text(json.dumps({**asdict(template), "now": now.isoformat()}))
        return template


def copy_of_demo(backend: str, where: str | Path, tmp_path_factory) -> tuple[str, DemoTemplate]:
    """A fresh copy of the run's demo template: the database named ``where`` on the test
    PostgreSQL server (dropped first if it exists), or the SQLite file at path ``where``. Its
    URL, and the template it copies."""
    template = demo_template_of(backend, tmp_path_factory)
    # One copy at a time: PostgreSQL copies a template only while no one else is using it.
    with _demo_template_lock(tmp_path_factory, backend):
        if backend == "postgresql":
            server = _postgres_server_url()
            url = _database_named(server, str(where))
            _admin(
                server,
                f'DROP DATABASE IF EXISTS "{where}" WITH (FORCE)',
                f'CREATE DATABASE "{where}" TEMPLATE "{DEMO_TEMPLATE_DB}"',
            )
        else:
            url = f"sqlite:///{where}"
            source = sqlite3.connect(make_url(template.url).database)
            target = sqlite3.connect(where)
            with target:
                source.backup(target)  # a consistent copy, whatever the journal mode
            source.close()
            target.close()
    return url, template


# The fixtures that copy the demo template, and the backend each copies (None: the test's
# database_url). Only for loading templates ahead (below): one missing here is loaded when
# first needed, as before.
DEMO_COPIERS = {"demo_app": None, "live_app": "sqlite", "drill": "postgresql"}


@pytest.fixture(scope="session", autouse=True)
def _demo_templates_ahead(request, tmp_path_factory) -> None:
    """Under xdist, the first workers each load one backend's demo template before their first
    test, side by side (gw0 SQLite's, gw1 PostgreSQL's), when the run has tests that copy it.
    Loaded when first needed instead, one worker loads both in a row while the others, needing
    them, wait: each takes one to three minutes."""
    backends = _backends()
    if not WORKER_ID or worker_index() >= len(backends):
        return
    backend = backends[worker_index()]
    for item in request.session.items:
        for fixture, copied in DEMO_COPIERS.items():
            if fixture not in item.fixturenames:
                continue
            params = getattr(item, "callspec", None)
            wanted = copied or (params.params.get("database_url") if params else None)
            if wanted == backend:
                demo_template_of(backend, tmp_path_factory)
                return


@pytest.fixture(scope="module")
def demo_app(database_url, request, tmp_path_factory) -> Iterator[DemoApp]:
    """The demo community for one module, in a copy of the session's loaded template: tests
    read it (and may write to it) without loading it again or touching other modules."""
    backend = backend_of(database_url)
    if backend == "postgresql":
        where = own_database(f"sprig_demo_{zlib.crc32(request.module.__name__.encode()):08x}")
    else:
        where = tmp_path_factory.mktemp("demo") / "sprig.db"
    url, template = copy_of_demo(backend, where, tmp_path_factory)
    app = configured_app(url)
    try:
        yield DemoApp(app, app_state(app).engine, template)
    finally:
        _dispose(app)
        if backend == "postgresql":
            _admin(url, f'DROP DATABASE IF EXISTS "{where}" WITH (FORCE)')


@pytest.fixture
def engine(app):
    return app_state(app).engine


@pytest.fixture
def client(app):
    return app.test_client()


def backend_of(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


@pytest.fixture
def backend(database_url) -> str:
    return backend_of(database_url)
