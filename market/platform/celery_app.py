"""The Celery application: a worker and beat in production, eager (in the caller) embedded.

The application factory makes one per app (:func:`celery_init_app`); every task runs in that
app's context, so it uses the app's settings and engine. Tasks live in each domain's ``tasks``
module (``TASK_MODULES``) as short wrappers around service functions, declared with
``shared_task`` (they belong to whichever app runs them), so tests call the service directly
and no task needs a broker to be exercised. Each is found by its explicit name (``sprig.…``).
"""

from __future__ import annotations

import logging
import threading

from celery import Celery, Task, signals
from celery._state import _set_task_join_will_block
from celery.schedules import crontab
from celery.signals import task_postrun, task_prerun
from flask import Flask
from sqlalchemy.exc import OperationalError

from market.platform.config import Settings
from market.platform.logs import enter_task, leave_task, task_headers

# Named, not imported: the platform knows no domain, and a worker imports these at start.
TASK_MODULES = [
    "market.catalog.tasks",
    "market.usage.tasks",
    "market.ranking.tasks",
    "market.exports.tasks",
]

# Redis calls must never hang a request when Redis is away: short timeouts, then the
# caller falls back (the rate limiter to a local count) or answers 503.
REDIS_TIMEOUT_S = 1.0
# Redis re-delivers a task not acknowledged within the visibility timeout to a second worker;
# with acks_late a task is acknowledged when it ends, so the timeout must outlast the longest
# hard time limit (which ends any task), with this margin for the queue wait before it starts.
VISIBILITY_MARGIN_S = 600
VISIBILITY_TIMEOUT_FLOOR_S = 3600
# A worker process is replaced after this many tasks, so memory a long-lived process gathers
# (fragmentation, caches a task filled) is given back; each replacement builds its engine anew.
MAX_TASKS_PER_CHILD = 200
# The soft limit raises SoftTimeLimitExceeded inside the task this long before the hard limit
# kills it, so the task's transaction rolls back and the failure is logged cleanly.
SOFT_LIMIT_FRACTION = 0.9

log = logging.getLogger(__name__)


def task_time_limits(settings: Settings) -> dict[str, tuple[int, int]]:
    """Each task's (soft, hard) time limit in seconds, from the settings."""
    hard = {
        "sprig.rollup": settings.rollup_time_limit_seconds,
        "sprig.rank": settings.rank_time_limit_seconds,
        "sprig.export_rewards": settings.export_time_limit_seconds,
        "sprig.recount_counters": settings.maintenance_time_limit_seconds,
        "sprig.forget_old_contexts": settings.maintenance_time_limit_seconds,
        "sprig.delete_dead_web_sessions": settings.maintenance_time_limit_seconds,
        "sprig.refresh_near_copies": settings.maintenance_time_limit_seconds,
        "sprig.create_event_partitions": settings.maintenance_time_limit_seconds,
        "sprig.drop_expired_events": settings.maintenance_time_limit_seconds,
        "sprig.propose_upstream_updates": settings.maintenance_time_limit_seconds,
        "sprig.offer_pending_upstream": settings.maintenance_time_limit_seconds,
    }
    return {name: (max(1, int(limit * SOFT_LIMIT_FRACTION)), limit) for name, limit in hard.items()}


def visibility_timeout(settings: Settings) -> int:
    longest = max(hard for _soft, hard in task_time_limits(settings).values())
    return max(VISIBILITY_TIMEOUT_FLOOR_S, longest + VISIBILITY_MARGIN_S)


def celery_config(settings: Settings) -> dict:
    visibility = visibility_timeout(settings)
    return {
        "broker_url": settings.redis_url or "memory://",
        "result_backend": settings.redis_url or None,
        # Nothing reads a task's result (each writes what it did to the database), and asking
        # for one made every send first subscribe to the result store: with Redis away that
        # retried for 19 s inside the request (a publish's upstream offer, an export), where
        # the send alone fails in about a second and the request answers 503.
        "task_ignore_result": True,
        "task_always_eager": settings.tasks_run_inline,
        "task_eager_propagates": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "worker_max_tasks_per_child": MAX_TASKS_PER_CHILD,
        "task_annotations": {
            name: {"soft_time_limit": soft, "time_limit": hard}
            for name, (soft, hard) in task_time_limits(settings).items()
        },
        "task_serializer": "json",
        "accept_content": ["json"],
        "timezone": "UTC",
        "broker_transport_options": {
            "visibility_timeout": visibility,
            "socket_timeout": REDIS_TIMEOUT_S,
            "socket_connect_timeout": REDIS_TIMEOUT_S,
        },
        "result_backend_transport_options": {"visibility_timeout": visibility},
        "redis_socket_timeout": REDIS_TIMEOUT_S,
        "redis_socket_connect_timeout": REDIS_TIMEOUT_S,
        "beat_schedule": {
            "rollup-usage": {"task": "sprig.rollup", "schedule": 60.0},
            # A run with nothing new returns at once (watermark), so every 5 minutes is cheap.
            "rank-subagents": {"task": "sprig.rank", "schedule": 300.0},
            "recount-catalog-counters": {
                "task": "sprig.recount_counters",
                "schedule": crontab(minute=17, hour=3),
            },
            "forget-old-exposure-contexts": {
                "task": "sprig.forget_old_contexts",
                "schedule": crontab(minute=47, hour=3),
            },
            # Re-signing every sub-agent takes minutes at 100,000; it happens only when the
            # template text learned from the catalog changed.
            "refresh-near-copies": {
                "task": "sprig.refresh_near_copies",
                "schedule": crontab(minute=57, hour=2),
            },
            # The new versions whose offer task was lost after their commit.
            "offer-pending-upstream": {"task": "sprig.offer_pending_upstream", "schedule": 600.0},
            "delete-dead-web-sessions": {
                "task": "sprig.delete_dead_web_sessions",
                "schedule": crontab(minute=7, hour=4),
            },
            # Daily, though a partition is needed only monthly: a missed run changes nothing.
            "create-event-partitions": {
                "task": "sprig.create_event_partitions",
                "schedule": crontab(minute=27, hour=2),
            },
            "drop-expired-events": {
                "task": "sprig.drop_expired_events",
                "schedule": crontab(minute=37, hour=4),
            },
        },
    }


class _EagerTasks:
    """How many tasks run eagerly in this process right now, across threads.

    Celery's eager ``apply_async`` marks "inside a task" in one process-wide flag and puts back
    the value it found when the task ends. Two threads running eager tasks at once (a threaded
    web worker in the embedded mode, racing requests) can put those back out of order and leave
    the flag set for good; every ``.get()`` on a result in the process then fails with "Never
    call result.get() within a task". Once the last eager task of the process has ended, the
    flag is cleared here."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0

    def enter(self) -> None:
        with self.lock:
            self.running += 1

    def leave(self) -> None:
        with self.lock:
            self.running -= 1
            if self.running == 0:
                _set_task_join_will_block(False)


EAGER_TASKS = _EagerTasks()


def celery_init_app(app: Flask, settings: Settings) -> Celery:
    """The Celery app of ``app``, configured from its settings: each task runs inside the app's
    context (``market.platform.state.app_state`` gives it the app's engine). It becomes the
    default app, the one ``shared_task`` tasks are sent through and run by."""

    class FlaskTask(Task):
        flask_app = app

        def __call__(self, *args, **kwargs):
            with app.app_context():
                return self.run(*args, **kwargs)

        def apply_async(self, args=None, kwargs=None, **options):
            # The request that starts a task lends it its id (in a worker and when eager).
            request_headers = task_headers()
            if request_headers:
                options["headers"] = {**request_headers, **(options.get("headers") or {})}
            if not self.app.conf.task_always_eager:
                return super().apply_async(args, kwargs, **options)
            EAGER_TASKS.enter()
            try:
                return super().apply_async(args, kwargs, **options)
            finally:
                EAGER_TASKS.leave()

    celery = Celery("sprig", task_cls=FlaskTask, include=TASK_MODULES)
    celery.conf.update(celery_config(settings))
    celery.set_default()
    # Signals are process-wide: connected once however many apps are built (tests build many).
    task_prerun.connect(_enter_task, weak=False, dispatch_uid="sprig-log-context-enter")
    task_postrun.connect(_leave_task, weak=False, dispatch_uid="sprig-log-context-leave")
    return celery


# Retried on a database error that a later attempt can get past (the database restarting, a
# failover, a dropped connection), never on a bug or a time limit. Only for idempotent tasks:
# every scheduled one (a rerun recomputes the same counts, scores and deletions, and the rollup
# resumes from marks it has not drained). Not the reward export: a failed run is recorded as
# failed with its reason, and a new run is the operator's call.
RETRY_TRANSIENT = {
    "autoretry_for": (OperationalError,),
    "retry_backoff": 5,
    "retry_backoff_max": 120,
    "max_retries": 5,
}


@signals.worker_process_init.connect
def _fresh_engines_in_child(**_kwargs) -> None:
    """A prefork child inherits its parent's connection pools: drop them (without closing the
    parent's sockets) so the child opens its own connections on the app's one engine."""
    from celery import current_app as celery

    flask_app = getattr(celery.Task, "flask_app", None)
    if flask_app is None:
        return
    from market.platform.state import app_state

    state = app_state(flask_app)
    state.engine.dispose(close=False)
    state.read_engine.dispose(close=False)


@signals.task_failure.connect
def _log_task_failure(sender=None, task_id=None, exception=None, **_kwargs) -> None:
    name = getattr(sender, "name", sender)
    log.error(
        "task %s [%s] failed: %s: %s",
        name,
        task_id,
        type(exception).__name__,
        exception,
    )


@signals.task_retry.connect
def _log_task_retry(request=None, reason=None, **_kwargs) -> None:
    log.warning("task %s [%s] will be retried: %s", request.task, request.id, reason)


def _enter_task(task=None, **_signal):
    enter_task(task)


def _leave_task(task=None, **_signal):
    leave_task(task)
