"""Fixtures: the app on every configured database backend, schema built by the migrations.

SQLite always runs; PostgreSQL runs when ``SPRIG_TEST_POSTGRES_URL`` is set (``make test``
starts a real server and sets it). Under CI a missing PostgreSQL is an error, not a skip.

``make_app`` builds every test app (per test: ``app``; per module: ``demo_app`` with the demo
community loaded, and the modules that seed a world of their own), so each starts and ends
on an empty database and leaves no engine open.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from flask import Flask
from sqlalchemy import text
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
            connection.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
        else:
            connection.execute(text("PRAGMA foreign_keys=OFF"))
            for table in reversed(tables):
                connection.execute(text(f"DELETE FROM {table}"))  # noqa: S608 - our table names
            connection.execute(text("PRAGMA foreign_keys=ON"))


# Tests act as a handful of clients making hundreds of calls in seconds: the rate limits are
# off unless a test sets one (tests/functional/test_rate_limits.py).
NO_RATE_LIMITS = {f"rate_limit_{name}": "" for name in LIMIT_CLASSES}


@contextmanager
def make_app(database_url: str, **settings) -> Iterator[Flask]:
    """A test app on ``database_url``: the read cache off (its own tests turn it on), so counts
    are read fresh; the database wiped before and after, the engines disposed after."""
    app = create_app(
        {
            "database_url": database_url,
            "testing": True,
            "secret_key": "test",
            "read_cache_seconds": 0,
            **NO_RATE_LIMITS,
            **settings,
        }
    )
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
class DemoApp:
    app: Flask
    engine: Engine
    stats: dict[str, int]  # what load_demo reports it made
    seconds: float  # how long loading took
    now: datetime  # the clock reading the whole demo is anchored at


@pytest.fixture(scope="module")
def demo_app(database_url) -> Iterator[DemoApp]:
    """The demo community loaded once per module (it takes seconds): tests only read it."""
    with make_app(database_url) as app:
        engine = app_state(app).engine
        started, now = time.perf_counter(), datetime.now(UTC)
        stats = load_demo(engine, seed=DEMO_SEED, now=now)
        yield DemoApp(app, engine, stats, time.perf_counter() - started, now)


@pytest.fixture
def engine(app):
    return app_state(app).engine


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def backend(database_url) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"
