"""Celery tasks of the nightly maintenance: short wrappers around service functions (tests
call the services), each in a unit of work on the app's engine."""

from __future__ import annotations

from celery import shared_task

from market.catalog import near_copies
from market.catalog.maintenance import (
    delete_dead_web_sessions,
    forget_old_contexts,
    recount_counters,
)
from market.platform.celery_app import RETRY_TRANSIENT
from market.platform.state import app_state
from market.platform.time import utcnow


@shared_task(name="sprig.recount_counters", **RETRY_TRANSIENT)
def recount_counters_task() -> dict:
    with app_state().unit_of_work() as unit:
        done = recount_counters(unit.session)
        unit.commit()
    return done


@shared_task(name="sprig.forget_old_contexts", **RETRY_TRANSIENT)
def forget_old_contexts_task() -> dict:
    """Erase exposure context text older than SPRIG_CONTEXT_RETENTION_DAYS (beat: nightly)."""
    state = app_state()
    with state.unit_of_work() as unit:
        done = forget_old_contexts(unit.session, utcnow(), state.settings.context_retention_days)
        unit.commit()
    return done


@shared_task(name="sprig.delete_dead_web_sessions", **RETRY_TRANSIENT)
def delete_dead_web_sessions_task() -> dict:
    with app_state().unit_of_work() as unit:
        done = delete_dead_web_sessions(unit.session, utcnow())
        unit.commit()
    return done


@shared_task(name="sprig.refresh_near_copies", **RETRY_TRANSIENT)
def refresh_near_copies_task() -> dict:
    """Re-learn the near-copy boilerplate, sign what is unsigned, and report the offers left
    unanswered past their window (beat: nightly)."""
    with app_state().unit_of_work() as unit:
        done = near_copies.refresh(unit.session)
        done.update(near_copies.report_ignored(unit.session, utcnow()))
        unit.commit()
    return done
