"""Nightly jobs: repairing denormalized counters, forgetting old request text, and deleting
web sessions that signed no one in any more.

``install_count`` and ``fork_count`` are kept exact by every write that changes them
(``market.catalog.counters``); a nightly recount with the same definitions catches any drift left by
manual fixes of the rows.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, or_, select, text, update
from sqlmodel import Session

from market.catalog.counters import active_installs, counted_forks
from market.catalog.models import SubAgent
from market.identity.models import WebSession
from market.recommend.models import Exposure


def recount_counters(session: Session) -> dict:
    installs = active_installs(SubAgent.id)
    forks = counted_forks(SubAgent.id)
    drifted = session.execute(
        select(func.count(SubAgent.id)).where(
            (SubAgent.install_count != installs) | (SubAgent.fork_count != forks)
        )
    ).scalar_one()
    if drifted:
        session.execute(update(SubAgent).values(install_count=installs, fork_count=forks))
    return {"drifted": drifted}


# The exposure's raw context text set to JSON null, its other keys kept; only rows that still
# have text, so a second run touches nothing. (No portable JSON update: one statement each.)
_FORGET_CONTEXT = {
    "postgresql": (
        "UPDATE exposure SET context = jsonb_set(context::jsonb, '{context}', 'null')::json "
        "WHERE created_at < :cutoff AND context->>'context' IS NOT NULL"
    ),
    "sqlite": (
        "UPDATE exposure SET context = json_set(context, '$.context', json('null')) "
        "WHERE created_at < :cutoff AND json_extract(context, '$.context') IS NOT NULL"
    ),
}


def forget_old_contexts(session: Session, now: datetime, keep_days: int) -> dict:
    """Erase the main agent's context text from exposures older than ``keep_days``.

    The context is what a user asked for, in their own words ("something for my pregnancy
    diet"): personal data that is never exported or shown, kept only so that a recent decision
    can be replayed. After ``keep_days`` it is erased; the rest of the decision (category,
    propensities, slot distributions, pool settings) stays for off-policy evaluation."""
    cutoff = now - timedelta(days=keep_days)
    statement = text(_FORGET_CONTEXT[session.get_bind().dialect.name]).bindparams(
        # Typed as the column, so the time is written the way the column stores it.
        bindparam("cutoff", type_=Exposure.__table__.c.created_at.type)
    )
    erased = session.execute(statement, {"cutoff": cutoff}).rowcount
    return {"erased": erased, "before": cutoff.isoformat()}


def delete_dead_web_sessions(session: Session, now: datetime) -> dict:
    """Delete the rows of web sessions that were signed out or ran out: they sign no one in
    again (a missing row and an ended one are refused alike), and each keeps who signed in
    from which token and when."""
    deleted = session.execute(
        delete(WebSession).where(or_(WebSession.ended_at.is_not(None), WebSession.expires_at < now))
    ).rowcount
    return {"deleted": deleted}
