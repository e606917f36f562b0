"""Celery tasks of the catalog (the nightly maintenance, upstream updates): short wrappers
around service functions (tests call the services), each in a unit of work on the app's
engine."""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task

from market.catalog import near_copies, upstream
from market.catalog.maintenance import (
    delete_dead_web_sessions,
    forget_old_contexts,
    recount_counters,
)
from market.platform.celery_app import RETRY_TRANSIENT
from market.platform.db import NEW_VERSIONS
from market.platform.state import app_state
from market.platform.time import utcnow

log = logging.getLogger(__name__)


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


@shared_task(name="sprig.propose_upstream_updates", **RETRY_TRANSIENT)
def propose_upstream_updates_task(version_id: int) -> dict:
    """Offer a parent's new version to its forks (idempotent: one proposal per fork and
    upstream version, however often it runs)."""
    return {
        "version": version_id,
        "proposals": upstream.propose_updates(app_state().engine, version_id),
    }


# A version's own task normally offers it within seconds; the sweep takes only what is older,
# so that it rarely runs beside that task (it would find the same proposals if it did).
OFFER_GRACE = timedelta(minutes=5)


@shared_task(name="sprig.offer_pending_upstream", **RETRY_TRANSIENT)
def offer_pending_upstream_task() -> dict:
    """Offer the new versions whose own task was lost (beat: every 10 minutes)."""
    offered = upstream.offer_pending(app_state().engine, older_than=OFFER_GRACE)
    return {"versions": len(offered), "proposals": sum(map(len, offered.values()))}


def enqueue_upstream_proposals(_session, changes) -> None:
    """A unit of work's after-commit hook: each new version of a sub-agent is offered to its
    forks by a task. The publish has committed by now, so a queue that is away fails only the
    offer, never the publish: it is logged with the version, and the sweep
    (``offer_pending_upstream_task``) offers it later."""
    # Sent through this app's own Celery app, not the shared task's current default: a
    # process that built several apps (the tests' live server beside the others) would run
    # the task on the newest one, against its database.
    task = app_state().celery.tasks[propose_upstream_updates_task.name]
    for version_id in sorted(changes.get(NEW_VERSIONS, ())):
        try:
            task.delay(version_id)
        except Exception:
            log.exception("upstream updates of version %s were not offered", version_id)


@shared_task(name="sprig.refresh_near_copies", **RETRY_TRANSIENT)
def refresh_near_copies_task() -> dict:
    """Re-learn the near-copy boilerplate, sign what is unsigned, and report the offers left
    unanswered past their window (beat: nightly)."""
    with app_state().unit_of_work() as unit:
        done = near_copies.refresh(unit.session)
        done.update(near_copies.report_ignored(unit.session, utcnow()))
        unit.commit()
    return done
