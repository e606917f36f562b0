"""``ranked_in``: a list ranked in Python, filtered and ordered by the database in that rank,
with rows another branch of the filter lets in placed after the ranked ones (a search's own
unlisted matches), on both databases."""

from __future__ import annotations

from sqlalchemy import func, or_, select

from market.identity.models import User
from market.platform.db import UnitOfWork, ranked_in


def _handles(engine, ranked_ids, *, also=None):
    with UnitOfWork(engine) as unit:
        session = unit.session
        match, position, join = ranked_in(session, User.id, ranked_ids)
        where = match if also is None else or_(match, User.handle == also)
        statement = join(select(User.handle).where(where))
        order = (func.coalesce(position, len(ranked_ids) + 1), User.id.desc())
        return list(session.execute(statement.order_by(*order)).scalars())


def test_rows_come_back_in_the_given_rank_and_others_after_them(engine):
    with UnitOfWork(engine) as unit:
        users = [User(handle=f"ranked-{i}", display_name=f"Ranked {i}") for i in range(6)]
        unit.session.add_all(users)
        unit.commit()
        ids = [user.id for user in users]
    rank = [ids[4], ids[1], ids[5], ids[0]]
    assert _handles(engine, rank) == ["ranked-4", "ranked-1", "ranked-5", "ranked-0"]
    # A row the filter lets in by another branch has no position: it follows the ranked ones.
    with_other = _handles(engine, rank, also="ranked-2")
    assert with_other == ["ranked-4", "ranked-1", "ranked-5", "ranked-0", "ranked-2"]
    # An id with no row, repeated ids and an empty rank change nothing else.
    assert _handles(engine, [10**9, ids[3], ids[3]]) == ["ranked-3"]
    assert _handles(engine, [], also="ranked-2") == ["ranked-2"]
