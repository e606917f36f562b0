"""Repair jobs for denormalized counters.

``install_count`` and ``fork_count`` are kept in step by the write paths with atomic
increments; a nightly recount from the source rows catches any drift (a crash between
statements cannot cause one, since both happen in one transaction, but manual fixes can).
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlmodel import Session

from market.models import Install, SubAgent


def recount_counters(session: Session) -> dict:
    installs = (
        select(func.count(Install.id))
        .where(Install.subagent_id == SubAgent.id, Install.active)
        .scalar_subquery()
    )
    child = SubAgent.__table__.alias("child")
    forks = (
        select(func.count(child.c.id))
        .where(child.c.parent_id == SubAgent.id, child.c.visibility != "private")
        .scalar_subquery()
    )
    drifted = session.execute(
        select(func.count(SubAgent.id)).where(
            (SubAgent.install_count != installs) | (SubAgent.fork_count != forks)
        )
    ).scalar_one()
    if drifted:
        session.execute(update(SubAgent).values(install_count=installs, fork_count=forks))
    return {"drifted": drifted}
