"""Fixtures: the app on every configured database backend, schema built by the migrations.

SQLite always runs; PostgreSQL runs when ``SPRIG_TEST_POSTGRES_URL`` is set (``make test``
starts a real server and sets it). Under CI a missing PostgreSQL is an error, not a skip.
"""

from __future__ import annotations

import os

import pytest
from sqlalchemy import text
from sqlmodel import SQLModel

from market.app import create_app
from market.platform.db import make_engine
from market.platform.migrate import upgrade
from market.platform.schema_registry import import_all_models
from market.platform.state import app_state


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


@pytest.fixture
def app(database_url, tmp_path):
    # The read cache is off here (its own tests turn it on): counts must be read fresh.
    # Exports go to the test's own directory and read feedback up to the very moment they start.
    app = create_app(
        {
            "database_url": database_url,
            "testing": True,
            "secret_key": "test",
            "read_cache_seconds": 0,
            "export_dir": str(tmp_path / "exports"),
            "export_settle_seconds": 0,
        }
    )
    engine = app_state(app).engine
    yield app
    _wipe(engine)
    engine.dispose()
    app_state(app).read_engine.dispose()


@pytest.fixture
def engine(app):
    return app_state(app).engine


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def backend(database_url) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"
