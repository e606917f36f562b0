"""/livez and /readyz against real databases and Redis: down, behind the migrations, back up."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy.engine import make_url

from market.app import create_app
from market.platform.health import migration_heads
from market.platform.migrate import upgrade
from market.platform.state import app_state

# The revision before the newest: a database left there is "behind".
PREVIOUS_REVISION = "0009"


def _dead_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def health_app(database_url: str, **settings) -> Iterator:
    app = create_app(
        {
            "database_url": database_url,
            "testing": True,
            "secret_key": "test",
            "read_cache_seconds": 0,
            "ready_cache_seconds": 0,
            **settings,
        }
    )
    try:
        yield app.test_client()
    finally:
        app_state(app).engine.dispose()
        app_state(app).read_engine.dispose()


def test_livez_answers_without_a_database(tmp_path):
    with health_app(f"sqlite:///{tmp_path / 'missing' / 'sprig.db'}") as client:
        response = client.get("/livez")
        assert response.status_code == 200
        assert response.get_json() == {"status": "ok", "checks": {"process": "ok"}}
        assert client.get("/api/v1/health").status_code == 200


def test_readyz_is_ready_on_a_migrated_database(database_url):
    with health_app(database_url) as client:
        response = client.get("/readyz")
        assert response.status_code == 200, response.get_json()
        assert response.get_json() == {"status": "ok", "checks": {"database": "ok"}}
        assert response.headers["Cache-Control"] == "no-store"


def test_readyz_fails_while_the_database_is_unreachable_and_recovers(tmp_path):
    """The database path is a directory, which SQLite cannot open; once it is gone, the same
    process sees an empty database (not migrated), then once migrated it is ready."""
    path = tmp_path / "sprig.db"
    url = f"sqlite:///{path}"
    with health_app(url) as client:
        path.mkdir()
        down = client.get("/readyz")
        assert down.status_code == 503
        assert down.get_json()["status"] == "unavailable"
        assert down.get_json()["checks"]["database"].startswith("unreachable")

        path.rmdir()
        not_migrated = client.get("/readyz")
        assert not_migrated.status_code == 503
        assert not_migrated.get_json()["checks"]["database"].startswith("not migrated")

        upgrade(url)
        assert client.get("/readyz").status_code == 200


def test_readyz_fails_when_postgresql_is_down():
    url = f"postgresql+psycopg://sprig:x@127.0.0.1:{_dead_port()}/sprig"
    with health_app(url) as client:
        response = client.get("/readyz")
        assert response.status_code == 503
        assert response.get_json()["checks"]["database"].startswith("unreachable")
        assert client.get("/livez").status_code == 200


def test_readyz_fails_until_the_schema_reaches_head(tmp_path):
    assert PREVIOUS_REVISION not in migration_heads()
    url = f"sqlite:///{tmp_path / 'sprig.db'}"
    upgrade(url, PREVIOUS_REVISION)
    with health_app(url) as client:
        behind = client.get("/readyz")
        assert behind.status_code == 503
        assert f"schema at ['{PREVIOUS_REVISION}']" in behind.get_json()["checks"]["database"]
        upgrade(url)
        assert client.get("/readyz").status_code == 200


def test_readyz_keeps_its_result_for_the_cache_time(tmp_path):
    url = f"sqlite:///{tmp_path / 'sprig.db'}"
    with health_app(url, ready_cache_seconds=3600) as client:
        assert client.get("/readyz").status_code == 503
        upgrade(url)
        assert client.get("/readyz").status_code == 503  # the kept result


def test_readyz_checks_redis_when_configured(database_url):
    redis_url = os.environ.get("SPRIG_TEST_REDIS_URL")
    if not redis_url:
        pytest.skip("needs SPRIG_TEST_REDIS_URL (scripts/test-services.sh)")
    with health_app(database_url, redis_url=redis_url) as client:
        response = client.get("/readyz")
        assert response.status_code == 200, response.get_json()
        assert response.get_json()["checks"] == {"database": "ok", "redis": "ok"}
    dead = str(make_url(redis_url).set(port=_dead_port()))
    with health_app(database_url, redis_url=dead) as client:
        response = client.get("/readyz")
        assert response.status_code == 503
        assert response.get_json()["checks"]["redis"].startswith("unreachable")
        assert response.get_json()["checks"]["database"] == "ok"
