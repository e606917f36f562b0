"""A sub-agent's counters, ``install_count`` and ``fork_count``, set from the rows they count.

A write that changes what a counter counts (an install or uninstall; a fork made, or a fork
made private, yanked, quarantined or released) first locks the counted sub-agent with
``lock_subagent``, then makes its change, then sets the counter from a count of the rows in
the same transaction. The lock makes those writers take turns, so each one reads what the one
before it committed, and the count the last of them writes includes every row committed before
it: the counter is exact whatever the interleaving. Adding +1/-1 is not enough: two requests
that both read "this install is active" before either wrote both subtracted one.
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.orm import aliased
from sqlmodel import Session

from market.access import counted_fork_clause
from market.db import begin_writing
from market.models import Install, SubAgent

_CHILD = aliased(SubAgent, name="child")


def active_installs(subagent_id):
    """The number of active installs of a sub-agent (an id, or a column to correlate with)."""
    return (
        select(func.count(Install.id))
        .where(Install.subagent_id == subagent_id, Install.active)
        .scalar_subquery()
    )


def counted_forks(subagent_id):
    """The number of direct forks a sub-agent's ``fork_count`` counts (see access.py)."""
    return (
        select(func.count(_CHILD.id))
        .where(_CHILD.parent_id == subagent_id, counted_fork_clause(_CHILD))
        .scalar_subquery()
    )


def lock_subagent(session: Session, subagent_id: int) -> SubAgent:
    """Hold this sub-agent until the transaction ends, and return it as now committed.

    Every write that recounts a counter of the sub-agent, or must not be done twice by
    concurrent requests (a first install, a fork request), takes this first, before reading
    what it decides on. PostgreSQL locks the row FOR NO KEY UPDATE (rows that merely reference
    it, such as events and ratings, are still inserted meanwhile); SQLite has a single writer,
    so its write lock is taken instead."""
    if session.get_bind().dialect.name == "postgresql":
        return session.get(
            SubAgent, subagent_id, with_for_update={"key_share": True}, populate_existing=True
        )
    begin_writing(session)
    return session.get(SubAgent, subagent_id, populate_existing=True)


def recount_installs(session: Session, subagent_id: int) -> None:
    """Set ``install_count`` from the install rows (the caller holds ``lock_subagent``)."""
    session.flush()
    session.execute(
        update(SubAgent)
        .where(SubAgent.id == subagent_id)
        .values(install_count=active_installs(subagent_id))
    )


def recount_forks(session: Session, subagent_id: int) -> None:
    """Set ``fork_count`` from the fork rows (the caller holds ``lock_subagent``)."""
    session.flush()
    session.execute(
        update(SubAgent)
        .where(SubAgent.id == subagent_id)
        .values(fork_count=counted_forks(subagent_id))
    )
