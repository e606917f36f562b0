"""Eager tasks run by several threads at once (the embedded mode's threaded web worker) leave
the process able to wait on a task's result: Celery's own bookkeeping of "inside a task" is one
process-wide flag that two threads can leave set (``market.platform.celery_app._EagerTasks``)."""

from __future__ import annotations

import threading

from celery import shared_task
from celery.result import task_join_will_block

from market.platform.state import app_state

first_done = threading.Event()
second_started = threading.Event()


@shared_task(name="tests.eager_first")
def eager_first() -> str:
    # Still running when the second thread's task starts: both are inside a task at once.
    assert second_started.wait(10)
    return "first"


@shared_task(name="tests.eager_second")
def eager_second() -> str:
    second_started.set()
    # Ends after the first has ended: the order that used to leave the flag set.
    assert first_done.wait(10)
    return "second"


def test_tasks_racing_in_threads_leave_results_waitable(app):
    celery = app_state(app).celery
    assert celery.conf.task_always_eager
    first_done.clear()
    second_started.clear()
    results: dict[str, str] = {}

    def run_first():
        results["first"] = celery.tasks["tests.eager_first"].delay().get()
        first_done.set()

    def run_second():
        results["second"] = celery.tasks["tests.eager_second"].delay().get()

    threads = [threading.Thread(target=run_first), threading.Thread(target=run_second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert results == {"first": "first", "second": "second"}
    assert not task_join_will_block()
    # And a task after them can be waited on, as the beat and export tests do.
    assert celery.tasks["sprig.delete_dead_web_sessions"].delay().get() is not None
