"""Health endpoints for orchestrators and load balancers.

``/livez`` says the process answers (no I/O: a failing database must not get every web process
restarted). ``/readyz`` says this process can serve: the database answers and its schema is at
the migrations' head (a web process started before ``sprig db upgrade`` finished would fail on
new columns), and Redis answers when one is configured. Both answer a small JSON body naming
each check; ``/readyz`` is 503 when any fails. Its result is kept for
``SPRIG_READY_CACHE_SECONDS`` so a probe storm costs one round of checks per process.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from alembic.script import ScriptDirectory
from flask import Blueprint, Flask, jsonify
from sqlalchemy import Engine, text

from market.platform.celery_app import REDIS_TIMEOUT_S
from market.platform.config import Settings
from market.platform.migrate import alembic_config
from market.platform.state import app_state

log = logging.getLogger(__name__)

bp = Blueprint("health", __name__)


@functools.lru_cache(maxsize=1)
def migration_heads() -> frozenset[str]:
    """The revisions the code expects (read once: the scripts do not change while it runs)."""
    return frozenset(ScriptDirectory.from_config(alembic_config("")).get_heads())


def check_database(engine: Engine) -> str | None:
    """None when the database answers and is migrated to head, else why not."""
    try:
        connection = engine.connect()
    except Exception as error:  # any driver error means "not ready"; the reason is reported
        return f"unreachable: {type(error).__name__}"
    with connection:
        try:
            rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
        except Exception:  # no alembic_version table: never migrated
            return "not migrated: run `sprig db upgrade`"
    found = frozenset(row[0] for row in rows)
    expected = migration_heads()
    if found != expected:
        return f"schema at {sorted(found) or 'nothing'}, code expects {sorted(expected)}"
    return None


def redis_check(redis_url: str) -> Callable[[], str | None]:
    import redis

    client = redis.Redis.from_url(
        redis_url, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S
    )

    def check() -> str | None:
        try:
            client.ping()
        except Exception as error:  # any client error means "not ready"
            return f"unreachable: {type(error).__name__}"
        return None

    return check


@dataclass(frozen=True)
class Report:
    ready: bool
    checks: dict[str, str]

    def body(self) -> dict:
        return {"status": "ok" if self.ready else "unavailable", "checks": self.checks}


class Readiness:
    """The readiness checks of one app, with their last result kept ``cache_seconds``."""

    def __init__(self, checks: dict[str, Callable[[], str | None]], cache_seconds: float):
        self._checks = checks
        self._cache_seconds = cache_seconds
        self._lock = threading.Lock()
        self._last: tuple[float, Report] | None = None

    def report(self) -> Report:
        with self._lock:
            now = time.monotonic()
            if self._last is not None and now - self._last[0] < self._cache_seconds:
                return self._last[1]
            problems = {name: check() for name, check in self._checks.items()}
            report = Report(
                ready=not any(problems.values()),
                checks={name: problem or "ok" for name, problem in problems.items()},
            )
            if not report.ready:
                log.warning("not ready: %s", report.checks)
            self._last = (now, report)
            return report


@bp.get("/livez")
def livez():
    return jsonify(status="ok", checks={"process": "ok"})


@bp.get("/readyz")
def readyz():
    report = app_state().readiness.report()
    response = jsonify(report.body())
    response.status_code = 200 if report.ready else 503
    response.headers["Cache-Control"] = "no-store"
    return response


def readiness_checks(settings: Settings, engine: Engine) -> Readiness:
    """What /readyz checks for an app with these settings and this engine."""
    checks: dict[str, Callable[[], str | None]] = {"database": lambda: check_database(engine)}
    if settings.redis_url:
        checks["redis"] = redis_check(settings.redis_url)
    return Readiness(checks, settings.ready_cache_seconds)


def install_health(app: Flask) -> None:
    app.register_blueprint(bp)
