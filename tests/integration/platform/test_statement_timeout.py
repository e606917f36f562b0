"""A web request's SQL statement that waits past ``request_statement_timeout_ms`` is cancelled
by PostgreSQL: the request answers 503 with Retry-After and keeps nothing, instead of holding
its worker thread for as long as the lock it waits for is held. Celery workers and apps that
run tasks inline carry no such limit."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from sqlalchemy import text

from market.platform.db import make_engine
from market.platform.state import app_state
from tests.conftest import make_app
from tests.factories import make_user, publish
from tests.xdist_worker import own_redis_url


@pytest.fixture
def production_app(database_url, backend):
    """An app as a web node runs it: tasks go to a worker (a real broker), so its requests
    carry the statement limit, here a short one."""
    if backend != "postgresql" or not os.environ.get("SPRIG_TEST_REDIS_URL"):
        pytest.skip("needs PostgreSQL and Redis (scripts/test-services.sh)")
    with make_app(
        database_url,
        redis_url=own_redis_url(os.environ["SPRIG_TEST_REDIS_URL"], 10),
        celery_eager=False,
        request_statement_timeout_ms=300,
    ) as app:
        yield app


def test_a_request_waiting_on_a_held_lock_is_cancelled_with_a_503_and_changes_nothing(
    production_app, database_url
):
    client = production_app.test_client()
    author = make_user(app_state(production_app).engine, "author")
    subagent = publish(client, author, title="Water Tracker")
    holder = make_engine(database_url)
    try:
        with holder.connect() as connection:
            transaction = connection.begin()
            connection.execute(
                text("SELECT id FROM subagent WHERE id = :id FOR UPDATE"), {"id": subagent["id"]}
            )
            # Without the limit the request would wait for good: the lock is let go after
            # 20 s, so that such a request ends (and the test fails) rather than hangs.
            release = threading.Timer(20, transaction.rollback)
            release.start()
            stuck = client.patch(
                f"/api/v1/subagents/{subagent['id']}",
                json={"title": "Renamed while locked"},
                headers=author.headers,
            )
            release.cancel()
            release.join()
            if transaction.is_active:
                transaction.rollback()
        assert stuck.status_code == 503, stuck.get_json()
        assert stuck.headers["Retry-After"] == "5"
        assert "cancelled" in stuck.get_json()["detail"]
        shown = client.get(f"/api/v1/subagents/{subagent['id']}").get_json()
        assert shown["title"] == "Water Tracker"
        # The lock gone, the same request goes through.
        renamed = client.patch(
            f"/api/v1/subagents/{subagent['id']}",
            json={"title": "Renamed"},
            headers=author.headers,
        )
        assert renamed.status_code == 200, renamed.get_json()
        assert client.get(f"/api/v1/subagents/{subagent['id']}").get_json()["title"] == "Renamed"
    finally:
        holder.dispose()


SHOW_LIMIT = """
import sys
from sqlalchemy import text
from market.platform.state import app_state
if sys.argv[1] == "worker":
    from market.entrypoints.worker import _state as state
else:
    from market.app import create_app
    state = app_state(create_app())
with state.engine.connect() as connection:
    print(connection.execute(text("SHOW statement_timeout")).scalar())
"""


@pytest.mark.parametrize(
    ("role", "broker", "limit"),
    [("web", True, "15s"), ("worker", True, "0"), ("web", False, "0")],
    ids=["web node", "celery worker", "embedded, tasks inline"],
)
def test_only_a_web_node_that_hands_tasks_to_workers_limits_statements(
    database_url, backend, role, broker, limit
):
    """As each entry point builds its app from the environment: gunicorn's and the worker's."""
    if backend != "postgresql" or not os.environ.get("SPRIG_TEST_REDIS_URL"):
        pytest.skip("needs PostgreSQL and Redis (scripts/test-services.sh)")
    env = {
        **os.environ,
        "SPRIG_DATABASE_URL": database_url,
        "SPRIG_REDIS_URL": os.environ["SPRIG_TEST_REDIS_URL"] if broker else "",
        "SPRIG_CELERY_EAGER": "false",
        "SPRIG_SECRET_KEY": "test",
    }
    env.pop("SPRIG_REQUEST_STATEMENT_TIMEOUT_MS", None)
    shown = subprocess.run(
        [sys.executable, "-c", SHOW_LIMIT, role],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert shown.stdout.strip().splitlines()[-1] == limit


def test_a_web_workers_own_index_build_reads_without_the_limit(production_app):
    """When the gunicorn master's build failed, each worker reads the whole catalog itself,
    minutes at a million sub-agents: that read is not cut at a request's limit."""
    from sqlmodel import Session

    from market.suggestions.services import IndexBuild

    with Session(app_state(production_app).engine) as session:
        assert session.execute(text("SHOW statement_timeout")).scalar() == "300ms"
        IndexBuild.read(session)
        assert session.execute(text("SHOW statement_timeout")).scalar() == "0"
        session.rollback()
        assert session.execute(text("SHOW statement_timeout")).scalar() == "300ms"
