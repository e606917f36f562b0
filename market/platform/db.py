"""Database engine and sessions.

SQLite (the embedded default) runs in WAL mode with a busy timeout so readers never block the
single writer; PostgreSQL is used as configured. One session per request, committed once at
the service boundary.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import ARRAY, Engine, Integer, any_, bindparam, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url: str, *, busy_timeout_ms: int = 5000, autocommit: bool = False) -> Engine:
    if is_sqlite(url):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # pragma: no cover - trivial
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            cursor.execute("PRAGMA foreign_keys=ON")
            # NORMAL is durable in WAL mode against process crashes (not power loss).
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    options = {"isolation_level": "AUTOCOMMIT"} if autocommit else {}
    return create_engine(
        url,
        **options,
        pool_size=10,
        max_overflow=10,
        # No pre-ping: it costs a round trip per request. A connection broken by a database
        # restart fails one request with 503 (see market/platform/problems.py) and is then replaced.
        pool_recycle=1800,
        # Fail fast instead of hanging when PostgreSQL is away; UTC so a timestamp's date is
        # the UTC day whatever the server's zone.
        connect_args={"connect_timeout": 3, "options": "-c timezone=UTC"},
    )


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    session = Session(engine, expire_on_commit=False)
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def begin_writing(session: Session) -> None:
    """On SQLite, make this transaction the writer now, waiting for the write lock as long as
    the busy timeout allows; nothing on PostgreSQL, which locks rows where they are written.

    SQLite has one writer at a time and its driver opens a transaction only at the first
    INSERT, UPDATE or DELETE. Without this, a savepoint opened before that becomes the
    transaction itself, and releasing it commits half a write; and a write whose statement
    reads first (the full-text index trigger of ``subagent`` does) fails at once with
    "database is locked" when another writer holds the lock, instead of waiting its turn."""
    connection = session.connection()
    if connection.dialect.name != "sqlite":
        return
    if not connection.connection.dbapi_connection.in_transaction:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def insert_unless_exists(session: Session, row, find):
    """Insert ``row``, or return the row a concurrent request inserted first under the same
    unique key: ``(row, True)`` or ``(existing, False)``, as a repeated request would get.

    The insert runs in a savepoint, so its unique violation leaves the transaction usable.
    Both databases report the violation only once the other transaction has committed, so
    ``find`` (a read of the row by that key) then sees its row."""
    begin_writing(session)
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        existing = find()
        if existing is None:
            raise
        return existing, False
    return row, True


def id_in(session: Session, column, ids):
    """``column IN (ids)`` as SQL whose text does not depend on how many ids there are. On
    PostgreSQL it is one array parameter (``= ANY(...)``): psycopg prepares the statement once
    and the server stops parsing and planning a new text for every list length, which halves
    the cost of reading a figure for a page of 150 nodes. SQLite gets an ordinary IN."""
    if session.get_bind().dialect.name == "postgresql":
        return column == any_(bindparam(None, list(ids), type_=ARRAY(Integer)))
    return column.in_(list(ids))


# Sub-agents given a version in a session, for the suggestion index to pick up after the
# commit (market.suggestions.services); an uncommitted publish must never be suggested.
INDEX_UPDATES = "suggestion_updates"


def commit_catalog_write(session: Session, *, read_cache=None, suggestions=None) -> None:
    """Commit, then bring this process's own caches up to date: the anonymous read cache
    (other processes hear the NOTIFY sent in the transaction; this one must not even wait)
    and the suggestion index (suggestable at once here; other processes catch up from
    ``updated_at``). Nothing is announced for a transaction that did not commit."""
    changed = session.info.pop("catalog_changed", False)
    published = session.info.pop(INDEX_UPDATES, None)
    session.commit()
    if changed and read_cache is not None:
        read_cache.invalidate()
    if published and suggestions is not None:
        suggestions.note_committed(session, published)
