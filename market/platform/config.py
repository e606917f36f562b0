"""Settings, read from ``SPRIG_*`` environment variables when the app is built.

Nothing here runs at import time: :func:`load_settings` is called by ``create_app``.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

DEFAULT_DB_PATH = Path("var") / "sprig.db"


@dataclass(frozen=True)
class Settings:
    database_url: str = f"sqlite:///{DEFAULT_DB_PATH}"
    # Empty means "no Redis": the embedded default runs Celery eagerly and needs no broker.
    redis_url: str = ""
    secret_key: str = field(default_factory=lambda: secrets.token_hex(32))
    celery_eager: bool = True
    # SQLite waits this long for the single writer lock before giving up.
    sqlite_busy_timeout_ms: int = 5000
    # Largest request body accepted at all; bundle caps are checked again while reading.
    max_request_bytes: int = 4 * 1024 * 1024
    # Anonymous catalog reads are cached per worker for this long (PostgreSQL only, where
    # LISTEN/NOTIFY invalidates them on every catalog write, so this only bounds how stale an
    # install count can be); 0 turns the cache off.
    read_cache_seconds: int = 30
    # Events a client may send per minute (distinct-user counts make floods harmless to
    # stats; this protects the database).
    events_per_minute: int = 3_000_000
    page_limit_max: int = 100
    tree_depth_max: int = 6
    tree_nodes_max: int = 2000
    # Reward-dataset exports: one immutable run-NNNNN-<fingerprint> directory each, under this
    # directory (shared by web and worker in production). A run reads feedback written up to its
    # start minus the settle time, so a rating still being committed is left whole for the next
    # run.
    export_dir: str = str(Path("var") / "exports")
    export_settle_seconds: int = 5
    # The main agent's context text logged with each exposure (the user's request in their
    # own words) is erased this many days after the decision (nightly job).
    context_retention_days: int = 30
    # How long a new API token works unless its maker says otherwise (0: never expires). A
    # person's: a quarter of daily use, so a token pasted somewhere and forgotten stops
    # working on its own. A service's: a year, because it runs unattended and an unnoticed
    # expiry would silently stop its events and suggestions; its operators rotate it, and
    # revoke it at once if it leaks.
    person_token_days: int = 90
    service_token_days: int = 365
    log_level: str = "INFO"
    # How gunicorn, the worker and beat write log lines on stdout: `json` (one object a line,
    # for a log collector) or `console` (plain text for a person; `make run`).
    log_format: str = "json"
    testing: bool = False
    # The web sign-in picker that lets anyone act as any demo person: only for the embedded
    # demo (`make run` turns it on), never in production.
    demo_signin: bool = False
    # Send the web session cookie only over HTTPS (on in production, behind TLS).
    session_cookie_secure: bool = False

    def with_overrides(self, overrides: dict | None) -> Settings:
        if not overrides:
            return self
        known = {f.name for f in fields(self)}
        unknown = set(overrides) - known
        if unknown:
            raise ValueError(f"unknown settings: {sorted(unknown)}")
        return replace(self, **overrides)


def _coerce(raw: str, template: object) -> object:
    if isinstance(template, bool):
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    if isinstance(template, int):
        return int(raw)
    return raw


def load_settings(environ: dict[str, str] | None = None) -> Settings:
    """Build settings from ``SPRIG_<NAME>`` variables (e.g. ``SPRIG_DATABASE_URL``)."""
    environ = os.environ if environ is None else environ
    base = Settings()
    values = {}
    for f in fields(Settings):
        raw = environ.get(f"SPRIG_{f.name.upper()}")
        if raw is not None:
            values[f.name] = _coerce(raw, getattr(base, f.name))
    return replace(base, **values)
