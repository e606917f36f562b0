"""Eager tasks run by several threads at once (the embedded mode's threaded web worker) leave
the process able to wait on a task's result: Celery's own bookkeeping of "inside a task" is one
process-wide flag that two threads can leave set (``market.platform.celery_app._EagerTasks``)."""

from __future__ import annotations

import threading

from celery import shared_task
from celery.result import task_join_will_block

from market.platform.state import app_state

first_started = threading.Event()
second_started = threading.Event()
first_done = threading.Event()


@shared_task(name="tests.eager_first")
def eager_first() -> str:
    first_started.set()
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
    for event in (first_started, second_started, first_done):
        event.clear()
    results = {}

    def run_first():
        results["first"] = celery.tasks["tests.eager_first"].delay()
        first_done.set()

    def run_second():
        # Enters its task only once the first is inside its own.
        assert first_started.wait(10)
        results["second"] = celery.tasks["tests.eager_second"].delay()

    threads = [threading.Thread(target=run_first), threading.Thread(target=run_second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert not task_join_will_block()
    # Waited on once both have ended (while another thread is inside an eager task, Celery
    # refuses any wait in the process: its flag is not per thread).
    assert {name: result.get() for name, result in results.items()} == {
        "first": "first",
        "second": "second",
    }
    assert celery.tasks["sprig.delete_dead_web_sessions"].delay().get() is not None
