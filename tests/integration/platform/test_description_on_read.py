"""The PostgreSQL engine's cursors build ``description`` only when it is read
(``market.platform.db.DescribedOnReadCursor``): what is read must be what psycopg itself
describes, for the result it was asked about, whatever the cursor ran since."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text

from market.platform.db import DescribedOnReadCursor, make_engine


@pytest.fixture
def engine(database_url, backend):
    if backend != "postgresql":
        pytest.skip("a psycopg cursor: PostgreSQL only")
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def _described(description) -> list[tuple]:
    return [(column.name, column.type_code, column.internal_size) for column in description]


def test_the_engine_s_cursors_describe_on_read(engine):
    with engine.connect() as connection:
        cursor = connection.connection.dbapi_connection.cursor()
        assert isinstance(cursor, DescribedOnReadCursor)


def test_a_description_is_psycopg_s_own_for_the_result_it_was_asked_about(engine):
    query = "SELECT 1 AS one, 'x'::text AS letter, now() AS at, NULL::numeric(5, 2) AS amount"
    with engine.connect() as connection:
        raw = connection.connection.dbapi_connection
        plain = psycopg.Cursor(raw)
        plain.execute(query)
        expected = _described(plain.description)

        cursor = raw.cursor()
        cursor.execute(query)
        description = cursor.description
        # The cursor moves on before the description is read: it still tells the first result.
        cursor.execute("SELECT 2 AS two")
        assert len(description) == 4
        assert _described(description) == expected
        assert description[1].name == "letter"
        assert [column.name for column in description[1:3]] == ["letter", "at"]
        assert _described(cursor.description) == [("two", 23, 4)]


def test_a_statement_without_rows_has_no_description_and_an_empty_select_has_an_empty_one(
    engine,
):
    with engine.connect() as connection:
        cursor = connection.connection.dbapi_connection.cursor()
        cursor.execute("SET LOCAL statement_timeout = 0")
        assert cursor.description is None
        cursor.execute("SELECT")
        assert cursor.description is not None
        assert len(cursor.description) == 0
        assert list(cursor.description) == []


def test_sqlalchemy_reads_names_from_a_statement_it_has_not_compiled_before(engine):
    """A textual statement has no cached metadata: SQLAlchemy reads the description's names."""
    with engine.connect() as connection:
        row = connection.execute(text("SELECT 7 AS seven, 'ok' AS word")).mappings().one()
        assert dict(row) == {"seven": 7, "word": "ok"}
