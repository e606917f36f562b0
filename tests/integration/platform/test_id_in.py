"""``id_in`` and ``in_bound_ids``: a list of ids as one parameter, on both databases.

On PostgreSQL an integer list is sent as the text of an ``integer[]`` and cast in the
statement (``market.platform.db.IntegerArray``), which is cheaper than psycopg dumping the
list element by element. The ids that come back must be the ones asked for, whatever integer
type the caller holds them in, and a value that is not an integer never reaches the SQL.
"""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.exc import StatementError

from market.identity.models import User
from market.platform.db import UnitOfWork, id_in, in_bound_ids


@pytest.fixture
def user_ids(engine) -> list[int]:
    with UnitOfWork(engine) as unit:
        users = [User(handle=f"among-{i}", display_name=f"Among {i}") for i in range(5)]
        unit.session.add_all(users)
        unit.commit()
        return [user.id for user in users]


def _found(engine, ids) -> set[int]:
    with UnitOfWork(engine) as unit:
        session = unit.session
        return set(session.execute(select(User.id).where(id_in(session, User.id, ids))).scalars())


def test_the_rows_asked_for_come_back_however_the_ids_are_held(engine, user_ids):
    first, second, *_ = user_ids
    assert _found(engine, [first, second]) == {first, second}
    assert _found(engine, np.array([first, second], dtype=np.int64)) == {first, second}
    assert _found(engine, (i for i in [second, second, 2**31 - 1])) == {second}
    assert _found(engine, []) == set()
    # A thousand ids in one parameter: the statement's text is the same at any length.
    assert _found(engine, range(first, first + 1000)) == set(user_ids)


def test_ids_bound_at_each_execution_come_back_too(engine, user_ids):
    with UnitOfWork(engine) as unit:
        session = unit.session
        dialect = session.get_bind().dialect.name
        statement = select(User.id).where(in_bound_ids(dialect, User.id, "ids"))
        found = session.execute(statement, {"ids": user_ids[1:3]}).scalars()
        assert set(found) == set(user_ids[1:3])
        held_by_numpy = list(np.array(user_ids[1:3], dtype=np.int64))  # NumPy's int64s
        found = session.execute(statement, {"ids": held_by_numpy}).scalars()
        assert set(found) == set(user_ids[1:3])


@pytest.mark.parametrize("hostile", ["1}, {2", "1); DROP TABLE user_account; --", 1.5j])
def test_a_value_that_is_not_an_integer_never_reaches_the_statement(engine, user_ids, hostile):
    with UnitOfWork(engine) as unit:
        session = unit.session
        if session.get_bind().dialect.name != "postgresql":
            pytest.skip("SQLite binds each id as a value of its own")
        statement = select(User.id).where(
            in_bound_ids(session.get_bind().dialect.name, User.id, "ids")
        )
        with pytest.raises(StatementError) as refused:
            session.execute(statement, {"ids": [user_ids[0], hostile]})
        assert isinstance(refused.value.orig, ValueError | TypeError)
    assert _found(engine, user_ids) == set(user_ids)
