"""Database engine and sessions.

SQLite (the embedded default) runs in WAL mode with a busy timeout so readers never block the
single writer; PostgreSQL is used as configured. One unit of work per request, tool call, task
or command, committed once at the service boundary.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, TypeVar

import psycopg
from psycopg.pq import ExecStatus
from sqlalchemy import (
    ARRAY,
    BigInteger,
    Engine,
    Integer,
    String,
    TypeDecorator,
    any_,
    bindparam,
    cast,
    create_engine,
    event,
    func,
    select,
    text,
    tuple_,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

log = logging.getLogger(__name__)
T = TypeVar("T")


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(
    url: str,
    *,
    busy_timeout_ms: int = 5000,
    autocommit: bool = False,
    statement_timeout_ms: int = 0,
) -> Engine:
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
    options_of_session = ["-c timezone=UTC", "-c jit=off"]
    if statement_timeout_ms > 0:
        options_of_session.append(f"-c statement_timeout={int(statement_timeout_ms)}")
    return create_engine(
        url,
        **options,
        pool_size=10,
        max_overflow=10,
        # No pre-ping: it costs a round trip per request. A connection broken by a database
        # restart fails one request with 503 (see market/platform/problems.py) and is then replaced.
        pool_recycle=1800,
        # Fail fast instead of hanging when PostgreSQL is away; UTC so a timestamp's date is
        # the UTC day whatever the server's zone. No JIT: at a million sub-agents a recursive
        # lineage read is estimated at thousands of rows, past PostgreSQL's JIT threshold, and
        # compiling it took 47 ms of a 50 ms dashboard query that ran in 3; every query here
        # reads a few rows through an index, where compiling never pays.
        connect_args={
            "connect_timeout": 3,
            "options": " ".join(options_of_session),
            "cursor_factory": DescribedOnReadCursor,
        },
    )


class _DescriptionOnRead(Sequence):
    """A result's ``cursor.description``, its ``Column`` objects built when first read. It
    holds what ``psycopg.Column`` reads of a cursor, taken from the result it describes (the
    cursor may have run another statement by the time it is read), and stands in for the
    cursor when the columns are built."""

    __slots__ = ("_columns", "_encoding", "adapters", "pgresult")

    def __init__(self, cursor: psycopg.Cursor) -> None:
        self.pgresult, self.adapters = cursor.pgresult, cursor.adapters
        self._encoding = cursor._encoding  # what Column decodes names with (psycopg pinned)
        self._columns: list[psycopg.Column] | None = None

    def _built(self) -> list[psycopg.Column]:
        if self._columns is None:
            self._columns = [psycopg.Column(self, index) for index in range(len(self))]
        return self._columns

    def __len__(self) -> int:
        return self.pgresult.nfields

    def __getitem__(self, index):
        return self._built()[index]

    def __iter__(self):
        return iter(self._built())


_ROWS_RESULT = {ExecStatus.TUPLES_OK, ExecStatus.SINGLE_TUPLE, ExecStatus.TUPLES_CHUNK}


class DescribedOnReadCursor(psycopg.Cursor):
    """A psycopg cursor whose ``description`` builds its columns only when read.

    SQLAlchemy asks for ``cursor.description`` after every statement, but a statement it has
    compiled before keeps its result's metadata (``_cached_metadata``) and only checks that a
    description is there. psycopg builds a ``Column`` per column on every ask, about 4 µs
    each: a detail's 69 columns took a fifth of its statement's time (1.02 ms → 0.82)."""

    @property
    def description(self):
        result = self.pgresult
        if result and (result.nfields or result.status in _ROWS_RESULT):
            return _DescriptionOnRead(self)
        return None


# What a transaction changed that something outside the database must hear of once it commits
# (``note_change``): the kinds of change, and which rows.
# What anonymous catalog reads show (each change as its NOTIFY payload: market.platform.read_cache)
CATALOG_CHANGED = "catalog_changed"
SUBAGENTS_PUBLISHED = "subagents_published"  # sub-agents given a version (their ids)
NEW_VERSIONS = "new_versions"  # versions after a sub-agent's first (their ids)
_CHANGES = "changes_to_announce"

# Runs after a commit with the session and the changes it made (kind → ids).
AfterCommit = Callable[[Session, Mapping[str, set]], None]


def note_change(session: Session, kind: str, *ids: int | str) -> None:
    """Note that this transaction made a change of ``kind`` (to rows ``ids``, or described by
    them). Its unit of work hands the notes to its after-commit hooks once it commits, and
    drops them if it does not: nothing is announced for a transaction that did not commit."""
    session.info.setdefault(_CHANGES, {}).setdefault(kind, set()).update(ids)


class UnitOfWork:
    """One transaction's session, for one request, tool call, task or command: the only thing
    that commits. ``commit`` commits once and then runs the after-commit hooks (a process's
    own caches and indexes catching up), so they never see work that did not commit. Used as a
    context manager it rolls back on an error and always closes; it never commits by itself.
    The session stays usable after ``commit`` (objects are not expired) to build a response."""

    def __init__(self, engine: Engine, hooks: Sequence[AfterCommit] = ()):
        self.session = Session(engine, expire_on_commit=False)
        self._hooks = hooks

    def __enter__(self) -> UnitOfWork:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if kind is not None:
                self.rollback()
        finally:
            self.close()

    def commit(self) -> None:
        changes = self.session.info.pop(_CHANGES, {})
        self.session.commit()
        if changes:
            for hook in self._hooks:
                self._run_hook(hook, changes)

    def _run_hook(self, hook: AfterCommit, changes: Mapping[str, set]) -> None:
        """The commit stands whatever a hook does: a hook that fails (the database restarted
        just after the commit, under a re-read) must neither turn committed work into an error
        its caller would retry, nor keep the hooks after it from running. What it missed, each
        catches up on its own later (the suggestion index from its marks, the read cache from
        the database's notices); the log says which hook and which changes."""
        try:
            hook(self.session, changes)
        except Exception:
            log.exception(
                "%s failed after a commit (%s)",
                getattr(hook, "__qualname__", repr(hook)),
                ", ".join(f"{kind}: {len(ids)}" for kind, ids in sorted(changes.items())),
            )
            # Its statement may have left the session's new transaction failed; the response
            # is still built from this session.
            self.session.rollback()

    def rollback(self) -> None:
        self.session.info.pop(_CHANGES, None)
        self.session.rollback()

    def close(self) -> None:
        self.session.info.pop(_CHANGES, None)
        self.session.close()


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A unit of work without hooks that commits when the block ends without an error: for
    scripts and the demo loader, which run outside the app (other processes catch up with
    their changes as they do with any other process's)."""
    with UnitOfWork(engine) as unit:
        yield unit.session
        unit.commit()


def begin_writing(session: Session) -> None:
    """On SQLite, make this transaction the writer now, waiting for the write lock as long as
    the busy timeout allows; nothing on PostgreSQL, which locks rows where they are written.

    SQLite has one writer at a time and its driver opens a transaction only at the first
    INSERT, UPDATE or DELETE. Without this, a savepoint opened before that becomes the
    transaction itself, and releasing it commits half a write; and a write whose statement
    reads first (a foreign key check or a trigger does) fails at once with
    "database is locked" when another writer holds the lock, instead of waiting its turn."""
    connection = session.connection()
    if connection.dialect.name != "sqlite":
        return
    if not connection.connection.dbapi_connection.in_transaction:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


@enum.unique
class Lock(enum.IntEnum):
    """Every PostgreSQL advisory lock Sprig takes, named here so that no two share a key:
    ``enum.unique`` refuses a value given twice. The values are any constants, kept as they
    were when each lock lived in its own module, so that workers of two releases still
    exclude each other while a deploy rolls."""

    RANKING = 0x72616E6B  # a ranking run ("rank" in ASCII)
    TASTE = 0x74617374  # the taste fit after a full run ("tast")
    ROLLUP = 0x5B816  # the usage rollup
    PARTITIONS = 0x5B817  # creating and dropping the event table's partitions
    EXPORT_BUILD = 0x5E7  # with a run's id (the two-key form): building that export run


def wait_for_lock(session: Session, lock: Lock) -> None:
    """Hold ``lock`` until this transaction ends, waiting while another transaction holds it
    (PostgreSQL)."""
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": int(lock)})


def try_lock(session: Session, lock: Lock) -> bool:
    """Whether this transaction now holds ``lock`` until it ends; False at once while another
    transaction holds it (PostgreSQL)."""
    statement = text("SELECT pg_try_advisory_xact_lock(:key)")
    return bool(session.execute(statement, {"key": int(lock)}).scalar())


@contextmanager
def holding_alone(engine: Engine, lock: Lock, number: int) -> Iterator[bool]:
    """Whether this process alone holds ``lock`` for ``number`` (a run's id), held until the
    block ends, for work longer than a transaction should stay open (PostgreSQL).

    A session lock on a connection of its own, idle (no transaction) meanwhile: it ends with
    that connection, so work whose process died is taken up by the next one to ask."""
    key = {"lock_class": int(lock), "number": number}
    with engine.connect() as connection:
        alone = connection.execute(
            text("SELECT pg_try_advisory_lock(:lock_class, :number)"), key
        ).scalar()
        connection.commit()
        try:
            yield bool(alone)
        finally:
            if alone:
                _release_session_lock(connection, key)


def _release_session_lock(connection, key: dict) -> None:
    try:
        connection.execute(text("SELECT pg_advisory_unlock(:lock_class, :number)"), key)
        connection.commit()
    except Exception:
        # Back in the pool still holding the lock, the connection would keep the work from
        # everyone after; closed, it takes the lock with it.
        connection.invalidate()
        raise


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


class IntegerArray(TypeDecorator):
    """An ``integer[]`` parameter sent as its text, ``{1,2,3}``, and cast in the statement.

    psycopg dumps a Python list element by element through a dumper each: 0.20 ms for the 300
    ids of a search's pool, against 0.03 ms to write and send the text, and a search binds
    several such lists. Each id goes through ``int``, so nothing but integers reaches it."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return None if value is None else "{" + ",".join(str(int(v)) for v in value) + "}"

    def bind_expression(self, bindvalue):
        return cast(bindvalue, ARRAY(Integer))


class PlainInteger(TypeDecorator):
    """An integer parameter bound as a plain ``int``: SQLite binds NumPy's ``int64`` as bytes,
    and an id held that way would match nothing. (On PostgreSQL ``IntegerArray`` does this.)"""

    impl = Integer
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return None if value is None else int(value)


def id_in(session: Session, column, ids):
    """``column IN (ids)`` (integers, or strings such as hashes) as SQL whose text does not
    depend on how many ids there are. On
    PostgreSQL it is one array parameter (``= ANY(...)``): psycopg prepares the statement once
    and the server stops parsing and planning a new text for every list length, which halves
    the cost of reading a figure for a page of 150 nodes. SQLite gets an ordinary IN."""
    if session.get_bind().dialect.name == "postgresql":
        # ``IntegerArray`` turns each id into a plain int as it writes the parameter.
        return column == any_(bindparam(None, list(ids), type_=_array_of(column.type)))
    if isinstance(column.type, Integer):
        return column.in_(bindparam(None, list(ids), expanding=True, type_=PlainInteger()))
    return column.in_(list(ids))


def pairs_in(session: Session, first, second, pairs):
    """``(first, second) IN (pairs)``. On PostgreSQL the pairs are two array parameters,
    unnested side by side and joined: a list of row values is planned as one OR arm per pair
    (a bitmap index scan each) and bound as two parameters per pair, about 11 ms for the
    rollup's 400 (sub-agent, day) pairs against 3. SQLite gets an ordinary row-value IN."""
    pairs = list(pairs)
    if session.get_bind().dialect.name == "postgresql":
        listed = (
            func.unnest(
                bindparam(None, [a for a, _ in pairs], type_=_array_of(first.type)),
                bindparam(None, [b for _, b in pairs], type_=_array_of(second.type)),
            )
            .table_valued("first", "second")
            .render_derived(name="pairs")
        )
        return tuple_(first, second).in_(select(listed.c.first, listed.c.second))
    return tuple_(first, second).in_(pairs)


def _array_of(item):
    """The array parameter type for a column of ``item``: ``IntegerArray`` for ``integer``
    ids (a bigint's values would not fit its cast)."""
    plain_integer = isinstance(item, Integer) and not isinstance(item, BigInteger)
    return IntegerArray() if plain_integer else ARRAY(item)


def in_bound_ids(dialect: str, column, name: str):
    """``id_in`` for a statement built once, its ids bound at each execution under ``name``:
    one array parameter on PostgreSQL, an expanding IN on SQLite."""
    if dialect == "postgresql":
        return column == any_(bindparam(name, type_=IntegerArray()))
    return column.in_(bindparam(name, expanding=True, type_=PlainInteger()))


class PerDatabase(Generic[T]):
    """Statements built once for each database Sprig runs on, and picked by a session's.

    Built at each request, a page's expressions cost SQLAlchemy about as much Python as their
    reads take in the database (a creator's dashboard: about 5 ms of its 25). Built once,
    each is found compiled in SQLAlchemy's cache straight away. Their values are bound
    parameters, and their id lists ``in_bound_ids``, whose form depends on the database."""

    DATABASES = ("postgresql", "sqlite")

    def __init__(self, build: Callable[[str], T]) -> None:
        self._built = {dialect: build(dialect) for dialect in self.DATABASES}

    def __call__(self, session: Session) -> T:
        return self._built[session.get_bind().dialect.name]


def ranked_in(session: Session, column, ids):
    """``(column IN ids, where column stands in ids, join)``: the filter and the ORDER BY of a
    list ranked in Python (a search's best matches), the position 1 for the first id, and what
    a statement that orders by that position must be given (``join(statement)``).

    On PostgreSQL the ids are one array parameter, sent once: the filter is ``= ANY`` and the
    position comes from joining ``unnest(ids) WITH ORDINALITY`` (a LEFT JOIN, so rows the filter
    lets in by another branch, a viewer's own, have none). The statement's text is the same for
    any number of ids, so psycopg prepares it once. ``array_position`` per row, as before, walked
    the array for each of 300 rows: 3.5 ms of a search's pool query against 1.6 ms joined. A
    ``CASE`` with a branch per id, before that, made SQLAlchemy bind 600 values (~5 ms). On
    SQLite the position is looked up in the list as JSON, and nothing is joined. An id repeated
    keeps its first place (joined twice, its row would come back twice)."""
    ids = list(dict.fromkeys(int(i) for i in ids))
    if session.get_bind().dialect.name == "postgresql":
        listed = bindparam(None, ids, type_=IntegerArray())
        ranked = (
            func.unnest(listed)
            .table_valued("id", with_ordinality="position")
            .render_derived(name="ranked")
        )
        return (
            column == any_(listed),
            ranked.c.position,
            lambda statement: statement.outerjoin(ranked, ranked.c.id == column),
        )
    positions = select(text("key + 1")).select_from(
        func.json_each(bindparam(None, json.dumps(ids))).table_valued("key", "value")
    )
    position = positions.where(text("value") == column).scalar_subquery()
    return column.in_(ids), position, lambda statement: statement
