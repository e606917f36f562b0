"""A sub-agent's counters, ``install_count`` and ``fork_count``, kept exact under concurrency.

A write that changes what a counter counts (an install or uninstall; a fork made, or a fork
made private, yanked, quarantined or released) first locks the counted sub-agent with
``lock_subagent``, then reads the rows it decides on, makes its change and updates the counter
in the same transaction. The lock makes those writers take turns, so each one reads what the
one before it committed: only the request that really turned an install on (or off) moves
``install_count``, by one, and ``fork_count`` is set from a count of the fork rows. Without
the lock, eight uninstalls that all read "this install is active" each subtracted one.

Installs move by one instead of a recount because a popular sub-agent has millions of them
(a count per install would grow with its popularity); its forks are few and indexed by
parent, and whether a fork counts depends on its visibility and status, so those are
recounted. ``market.catalog.maintenance.recount_counters`` checks both against the rows nightly.
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.orm import aliased
from sqlmodel import Session

from market.catalog.models import Install, SubAgent
from market.identity.access import counted_fork_clause
from market.platform.db import begin_writing

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


def count_install_change(session: Session, subagent_id: int, delta: int) -> None:
    """Move ``install_count`` by ``delta`` (+1 or -1) for an install row this request turned on
    or off, having read it under ``lock_subagent``."""
    session.execute(
        update(SubAgent)
        .where(SubAgent.id == subagent_id)
        .values(install_count=SubAgent.install_count + delta)
    )


def recount_forks(session: Session, subagent_id: int) -> None:
    """Set ``fork_count`` from the fork rows (the caller holds ``lock_subagent``)."""
    session.flush()
    session.execute(
        update(SubAgent)
        .where(SubAgent.id == subagent_id)
        .values(fork_count=counted_forks(subagent_id))
    )
