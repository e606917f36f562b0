"""The Celery application: a worker and beat in production, eager (in the caller) embedded.

The application factory makes one per app (:func:`celery_init_app`); every task runs in that
app's context, so it uses the app's settings and engine. Tasks live in each domain's ``tasks``
module (``TASK_MODULES``) as short wrappers around service functions, declared with
``shared_task`` (they belong to whichever app runs them), so tests call the service directly
and no task needs a broker to be exercised. Each is found by its explicit name (``sprig.…``).
"""

from __future__ import annotations

from celery import Celery, Task
from celery.schedules import crontab
from celery.signals import task_postrun, task_prerun
from flask import Flask

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
# Longer than any task runs, or Redis re-delivers a running task to a second worker.
VISIBILITY_TIMEOUT_S = 3600


def celery_config(settings: Settings) -> dict:
    eager = settings.celery_eager or not settings.redis_url
    return {
        "broker_url": settings.redis_url or "memory://",
        "result_backend": settings.redis_url or None,
        "task_always_eager": eager,
        "task_eager_propagates": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_serializer": "json",
        "accept_content": ["json"],
        "timezone": "UTC",
        "broker_transport_options": {
            "visibility_timeout": VISIBILITY_TIMEOUT_S,
            "socket_timeout": REDIS_TIMEOUT_S,
            "socket_connect_timeout": REDIS_TIMEOUT_S,
        },
        "result_backend_transport_options": {"visibility_timeout": VISIBILITY_TIMEOUT_S},
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
            "delete-dead-web-sessions": {
                "task": "sprig.delete_dead_web_sessions",
                "schedule": crontab(minute=7, hour=4),
            },
        },
    }


def celery_init_app(app: Flask, settings: Settings) -> Celery:
    """The Celery app of ``app``, configured from its settings: each task runs inside the app's
    context (``market.platform.state.app_state`` gives it the app's engine). It becomes the
    default app, the one ``shared_task`` tasks are sent through and run by."""

    class FlaskTask(Task):
        def __call__(self, *args, **kwargs):
            with app.app_context():
                return self.run(*args, **kwargs)

        def apply_async(self, args=None, kwargs=None, **options):
            # The request that starts a task lends it its id (in a worker and when eager).
            request_headers = task_headers()
            if request_headers:
                options["headers"] = {**request_headers, **(options.get("headers") or {})}
            return super().apply_async(args, kwargs, **options)

    celery = Celery("sprig", task_cls=FlaskTask, include=TASK_MODULES)
    celery.conf.update(celery_config(settings))
    celery.set_default()
    # Signals are process-wide: connected once however many apps are built (tests build many).
    task_prerun.connect(_enter_task, weak=False, dispatch_uid="sprig-log-context-enter")
    task_postrun.connect(_leave_task, weak=False, dispatch_uid="sprig-log-context-leave")
    return celery


def _enter_task(task=None, **_signal):
    enter_task(task)


def _leave_task(task=None, **_signal):
    leave_task(task)
