"""Settings, read from ``SPRIG_*`` environment variables when the app is built.

Nothing here runs at import time: :func:`load_settings` is called by ``create_app``.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from sqlalchemy.engine import make_url

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
    # PostgreSQL cancels a web request's statement past this (0: never), so a lock wait or a
    # runaway plan fails that one request with a 503 instead of holding a worker thread for
    # good. Celery workers have task time limits instead (market/entrypoints/worker.py), and
    # where tasks run inline in requests (no worker) there is no statement limit either.
    request_statement_timeout_ms: int = 15_000
    # Largest request body accepted at all; bundle caps are checked again while reading.
    max_request_bytes: int = 4 * 1024 * 1024
    # Anonymous catalog reads are cached per worker for this long (PostgreSQL only, where
    # LISTEN/NOTIFY invalidates them on every catalog write, so this only bounds how stale an
    # install count can be); 0 turns the cache off.
    read_cache_seconds: int = 30
    # What those cached bodies may hold per worker, least recently read dropped first.
    read_cache_mib: int = 64
    # Rate limits, each "<count>/<seconds>" per client (the signed-in user, else the client's
    # address; market/platform/limits.py), an empty value for none. Events a client may send
    # (distinct-user counts make floods harmless to stats; this protects the database): a
    # main-agent service posts its users' events in bulk, batches of up to 1,000.
    rate_limit_events: str = "3000000/60"
    # A person publishes (a new sub-agent or a new version) a few times an hour, a busy
    # creator iterating perhaps a dozen: 30 an hour is generous for them and stops a script
    # from filling the catalog.
    rate_limit_publish: str = "30/3600"
    # Forks and fork requests are a person's "make it mine": more of them than publishes,
    # still a handful an hour.
    rate_limit_fork: str = "60/3600"
    # Searches (browse with a query, page or API): a person types a few a minute; anonymous
    # visitors share their address (an office, a phone carrier's NAT), so it has room.
    rate_limit_search: str = "300/60"
    # A coding agent service asks for suggestions at every step of its work, for all of its
    # users at once: ten a second.
    rate_limit_suggestions: str = "600/60"
    # A main-agent service asks for recommendations at each of its users' requests.
    rate_limit_recommendations: str = "600/60"
    # Failed token checks (API bearer tokens, the sign-in page) from one address: a person
    # mistypes a few; tokens are 256 random bits, so this is not what keeps them secret, but it
    # stops scripted guessing and credential stuffing from costing a lookup each.
    rate_limit_auth_failures: str = "30/600"
    # How many proxies in front of the app set X-Forwarded-For (and -Proto): the client's
    # address is read from that header only when this says how many hops to trust; 0 (direct
    # clients) ignores it, since anyone can send it.
    trusted_proxy_hops: int = 0
    page_limit_max: int = 100
    tree_depth_max: int = 6
    tree_nodes_max: int = 2000
    # Reward-dataset exports: one immutable run-NNNNN-<fingerprint> directory each, under this
    # directory (shared by web and worker in production). A run reads feedback written up to its
    # start minus the settle time, so a rating still being committed is left whole for the next
    # run.
    export_dir: str = str(Path("var") / "exports")
    export_settle_seconds: int = 5
    # The suggestion index's snapshot (market.suggestions.snapshot): the gunicorn master keeps
    # it here, so that a restarted master serves in seconds instead of rebuilding the index
    # (minutes at a million sub-agents); empty: none. One older than this is rebuilt.
    index_snapshot_dir: str = str(Path("var") / "index")
    index_snapshot_max_age_hours: int = 24
    # Where runs are kept instead of export_dir: an S3-compatible URL, s3://bucket/prefix, so
    # web and worker on different machines share no volume and trainers read the bucket; its
    # endpoint (empty: AWS) and credentials (empty: the client's own lookup). Empty: export_dir.
    export_storage: str = ""
    export_storage_endpoint: str = ""
    export_storage_key_id: str = ""
    export_storage_secret: str = ""
    # The main agent's context text logged with each exposure (the user's request in their
    # own words) is erased this many days after the decision (nightly job).
    context_retention_days: int = 30
    # Raw usage events are dropped a whole month at a time once the month ended this many
    # days ago and the rollup no longer reads it (PostgreSQL; market.usage.partitions); the
    # daily stats and cohorts built from them stay. 0 keeps every event; else at least 200.
    event_retention_days: int = 400
    # How long a new API token works unless its maker says otherwise (0: never expires). A
    # person's: a quarter of daily use, so a token pasted somewhere and forgotten stops
    # working on its own. A service's: a year, because it runs unattended and an unnoticed
    # expiry would silently stop its events and suggestions; its operators rotate it, and
    # revoke it at once if it leaks.
    person_token_days: int = 90
    service_token_days: int = 365
    log_level: str = "INFO"
    # host:port where the Celery worker serves its task metrics (it has no web app for
    # /metrics, and no token check there: a private address only); empty: not served.
    worker_metrics_address: str = ""
    # How gunicorn, the worker and beat write log lines on stdout: `json` (one object a line,
    # for a log collector) or `console` (plain text for a person; `make run`).
    log_format: str = "json"
    # Prometheus metrics: request timing, pool gauges and /metrics (off: none of them; the
    # services' counters still count, at a few microseconds each).
    metrics: bool = True
    testing: bool = False
    # The web sign-in picker that lets anyone act as any demo person: only for the embedded
    # demo (`make run` turns it on), never in production.
    demo_signin: bool = False
    # Send the web session cookie only over HTTPS (on in production, behind TLS).
    session_cookie_secure: bool = False
    # /readyz keeps its result this long, so frequent probes cost one round of checks.
    ready_cache_seconds: int = 2
    # Hard time limits of the Celery tasks (the worker kills a task past it); each gets a soft
    # limit a little earlier, which raises inside it so its transaction rolls back cleanly.
    # Sized from what each does: the rollup drains for 50 s per run (beat: every minute), a
    # ranking run recomputes every score, a reward export writes the whole dataset, and the
    # nightly maintenance rewrites counters across the catalog.
    rollup_time_limit_seconds: int = 120
    rank_time_limit_seconds: int = 900
    export_time_limit_seconds: int = 3600
    maintenance_time_limit_seconds: int = 1800

    @property
    def tasks_run_inline(self) -> bool:
        """Embedded mode: Celery runs each task in its caller, and no worker or beat exists, so
        what beat would start (a rollup, a due ranking run, an export) is run by the request
        that needs it."""
        return self.celery_eager or not self.redis_url

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


# Settings that may carry a secret: each is also read from the file ``SPRIG_<NAME>_FILE`` names
# (a Docker or Kubernetes secret), so it need not sit in the environment or a compose file.
SECRET_SETTINGS = ("database_url", "database_password", "redis_url", "secret_key")
SECRET_SETTINGS += ("export_storage_key_id", "export_storage_secret")


def _raw_value(environ: dict[str, str], name: str) -> str | None:
    variable = f"SPRIG_{name.upper()}"
    path = environ.get(f"{variable}_FILE")
    if path is None or name not in SECRET_SETTINGS:
        return environ.get(variable)
    if variable in environ:
        raise ValueError(f"set {variable} or {variable}_FILE, not both")
    try:
        # A secret file usually ends with a newline the value never has.
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ValueError(f"{variable}_FILE: cannot read {path}: {error.strerror}") from None


def load_settings(environ: dict[str, str] | None = None) -> Settings:
    """Build settings from ``SPRIG_<NAME>`` variables (e.g. ``SPRIG_DATABASE_URL``), secrets
    also from ``SPRIG_<NAME>_FILE``. ``SPRIG_DATABASE_PASSWORD`` is put into the database URL,
    so the URL itself can be ordinary configuration."""
    environ = os.environ if environ is None else environ
    base = Settings()
    values = {}
    for f in fields(Settings):
        raw = _raw_value(environ, f.name)
        if raw is not None:
            values[f.name] = _coerce(raw, getattr(base, f.name))
    password = _raw_value(environ, "database_password")
    if password:
        url = make_url(values.get("database_url", base.database_url))
        values["database_url"] = url.set(password=password).render_as_string(hide_password=False)
    return replace(base, **values)
