"""Prometheus metrics at /metrics: only for a token with the ``metrics:read`` scope; every
listed series is exposed; and the counters move by exactly what the traffic did.

The metrics live in the test process's default registry, shared by every app the session
builds, so each test compares two scrapes and asserts deltas.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import requests
from celery import Celery
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from market.exports.tasks import export_rewards_task  # noqa: F401 - the task registers
from market.platform.errors import BadRequest
from market.platform.metrics import (
    POOL_SAMPLE_SECONDS,
    install_task_metrics,
    serve_worker_metrics,
)
from market.ranking.tasks import rank_task
from market.usage.tasks import rollup_task
from tests.conftest import make_app
from tests.factories import Actor, bundle, fork, make_user, publish
from tests.gunicorn_server import free_port

METRICS = "/metrics"
API = "/api/v1"
DETAIL_ROUTE = f"{API}/subagents/<int(max=2147483647):subagent_id>"

SERIES = [
    "sprig_http_request_duration_seconds",
    "sprig_events",
    "sprig_feedback",
    "sprig_publishes",
    "sprig_suggestion_duration_seconds",
    "sprig_suggestions",
    "sprig_rollup_duration_seconds",
    "sprig_rollup_marks",
    "sprig_rollup_last_finished_timestamp_seconds",
    "sprig_rollup_pending_marks",
    "sprig_ranking_duration_seconds",
    "sprig_ranking_last_run_timestamp_seconds",
    "sprig_read_cache_answers",
    "sprig_export_runs",
    "sprig_celery_task_duration_seconds",
    "sprig_celery_task_failures",
    "sprig_celery_task_retries",
    "sprig_db_pool_checked_out",
    "sprig_db_pool_size",
]


def scrape(client, actor: Actor) -> dict[tuple[str, frozenset], float]:
    """Every sample of a scrape, keyed by its name and labels."""
    response = client.get(METRICS, headers=actor.headers)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    assert response.mimetype == "text/plain"
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.get_data(as_text=True))
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: dict, name: str, **labels) -> float:
    """The sum over every series of ``name`` carrying at least these labels."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in samples.items() if n == name and wanted <= have)


@pytest.fixture
def monitor(engine) -> Actor:
    return make_user(engine, "prometheus", kind="service", scopes=["metrics:read"])


def test_metrics_refuse_callers_without_the_scope(client, engine, monitor):
    assert client.get(METRICS).status_code == 401
    person = make_user(engine, "alice")
    assert client.get(METRICS, headers=person.headers).status_code == 403
    collector = make_user(engine, "collector", kind="service", scopes=["events:write"])
    refused = client.get(METRICS, headers=collector.headers)
    assert refused.status_code == 403
    assert "metrics:read" in refused.get_json()["detail"]
    assert client.get(METRICS, headers=monitor.headers).status_code == 200


def test_a_person_cannot_be_given_the_metrics_scope(engine):
    with pytest.raises(BadRequest, match="metrics:read"):
        make_user(engine, "alice", scopes=["metrics:read"])


def test_every_listed_series_is_exposed(client, monitor):
    text = client.get(METRICS, headers=monitor.headers).get_data(as_text=True)
    exposed = {family.name for family in text_string_to_metric_families(text)}
    assert set(SERIES) <= exposed, set(SERIES) - exposed


def test_the_metrics_endpoint_is_not_in_the_api_document(client):
    paths = client.get(f"{API}/openapi.json").get_json()["paths"]
    assert METRICS not in paths


def test_counters_move_by_exactly_the_traffic(client, engine, monitor, app):
    install_task_metrics()
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    service = make_user(
        engine,
        "agent",
        kind="service",
        scopes=["events:write", "feedback:on-behalf", "suggest", "exports"],
    )
    before = scrape(client, monitor)

    root = publish(client, alice, title="Water Tracker")
    fork(client, bob, root["id"], note="smaller glasses")
    new_version = client.post(
        f"{API}/subagents/{root['id']}/versions",
        json={"changelog": "v2", "bundle": bundle("v2")},
        headers=alice.headers,
    )
    assert new_version.status_code == 201, new_version.get_json()
    for _ in range(3):
        assert client.get(f"{API}/subagents/{root['id']}").status_code == 200
    assert client.get(f"{API}/subagents/999999").status_code == 404

    version_id = root["latest_version"]["id"]
    fresh = [usage_event(bob.id, root["id"], version_id) for _ in range(2)]
    unknown = usage_event(bob.id, 999999, version_id)
    batch = client.post(
        f"{API}/events", json={"events": [*fresh, fresh[0], unknown]}, headers=service.headers
    )
    assert batch.status_code == 202, batch.get_json()
    assert (batch.get_json()["stored"], batch.get_json()["duplicates"]) == (2, 1)

    rating = {"version_id": version_id, "stars": 4}
    assert client.post(f"{API}/feedback", json=rating, headers=bob.headers).status_code == 201
    rating["stars"] = 5
    assert client.post(f"{API}/feedback", json=rating, headers=bob.headers).status_code == 200

    suggested = client.post(
        f"{API}/suggestions", json={"request": "track my water"}, headers=service.headers
    )
    assert suggested.status_code == 200, suggested.get_json()
    verdict = suggested.get_json()["verdict"]

    exported = client.post(f"{API}/exports", json={}, headers=service.headers)
    assert exported.status_code == 202, exported.get_json()
    export_status = exported.get_json()["status"]

    middle = scrape(client, monitor)
    pending = value(middle, "sprig_rollup_pending_marks")
    assert pending > 0  # the events and the ratings marked days for the rollup
    with app.app_context():
        rollup_task.delay().get()
        rank_task.delay(force=True).get()
    after = scrape(client, monitor)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    detail_ok = {"route": DETAIL_ROUTE, "method": "GET", "status": "200"}
    assert delta("sprig_http_request_duration_seconds_count", **detail_ok) == 3
    assert delta("sprig_http_request_duration_seconds_bucket", le="+Inf", **detail_ok) == 3
    assert delta("sprig_http_request_duration_seconds_sum", **detail_ok) > 0
    detail_missing = {**detail_ok, "status": "404"}
    assert delta("sprig_http_request_duration_seconds_count", **detail_missing) == 1
    # never a raw path: the unknown id is not a label anywhere
    assert not any("999999" in str(labels) for _name, labels in after)

    assert delta("sprig_publishes_total", kind="root") == 1
    assert delta("sprig_publishes_total", kind="fork") == 1
    assert delta("sprig_publishes_total", kind="version") == 1
    assert delta("sprig_events_total", status="stored") == 2
    assert delta("sprig_events_total", status="duplicate") == 1
    assert delta("sprig_events_total", status="rejected") == 1
    assert delta("sprig_feedback_total", outcome="created") == 1
    assert delta("sprig_feedback_total", outcome="replaced") == 1
    assert delta("sprig_suggestions_total", verdict=verdict) == 1
    assert delta("sprig_suggestion_duration_seconds_count") == 1
    assert delta("sprig_export_runs_total", status=export_status) == 1

    assert delta("sprig_rollup_marks_total") == pending
    assert value(after, "sprig_rollup_pending_marks") == 0
    assert delta("sprig_rollup_duration_seconds_count") >= 1
    assert value(after, "sprig_rollup_last_finished_timestamp_seconds") > 0
    ranking_runs = total(after, "sprig_ranking_duration_seconds_count") - total(
        before, "sprig_ranking_duration_seconds_count"
    )
    assert ranking_runs >= 1  # the forced run (reads of scores may run one more)
    assert value(after, "sprig_ranking_last_run_timestamp_seconds") > 0

    for task in ("sprig.rollup", "sprig.rank"):
        assert delta("sprig_celery_task_duration_seconds_count", task=task, state="SUCCESS") == 1


def test_task_failures_and_retries_are_counted():
    install_task_metrics()
    celery = Celery("metrics-test", set_as_current=False)
    attempts = []

    @celery.task(name="tests.metrics_fails")
    def fails():
        raise RuntimeError("boom")

    @celery.task(name="tests.metrics_retries", bind=True, max_retries=1)
    def retries_once(task):
        attempts.append(task.request.retries)
        if task.request.retries == 0:
            raise task.retry(countdown=0)
        return "done"

    def sample(name: str, task: str) -> float:
        return REGISTRY.get_sample_value(name, {"task": task}) or 0.0

    failures, retries = "sprig_celery_task_failures_total", "sprig_celery_task_retries_total"
    failed_before = sample(failures, "tests.metrics_fails")
    retried_before = sample(retries, "tests.metrics_retries")
    # A worker does not propagate a task's error: neither does this run.
    assert fails.apply(throw=False).failed()
    retries_once.apply(throw=False)
    assert attempts == [0, 1]
    assert sample(failures, "tests.metrics_fails") == failed_before + 1
    assert sample(retries, "tests.metrics_retries") == retried_before + 1
    assert sample(failures, "tests.metrics_retries") == 0


def test_the_pool_gauge_counts_connections_in_use(client, engine, monitor):
    before = scrape(client, monitor)
    held = engine.connect()
    try:
        during = scrape(client, monitor)
    finally:
        held.close()
    after = scrape(client, monitor)
    in_use = "sprig_db_pool_checked_out"
    assert value(during, in_use, pool="write") == value(before, in_use, pool="write") + 1
    assert value(after, in_use, pool="write") == value(before, in_use, pool="write")


def test_the_pool_gauge_follows_the_pool_between_scrapes(client, engine, monitor):
    """Each process samples its pools once a second on a thread of its own: an idle worker,
    never scraped itself, still reports what it holds (it is summed into another's scrape)."""
    scrape(client, monitor)  # leaves the gauge at what the scrape itself held

    def follows(expected: int) -> bool:
        deadline = time.monotonic() + 10 * POOL_SAMPLE_SECONDS
        while time.monotonic() < deadline:
            sampled = REGISTRY.get_sample_value("sprig_db_pool_checked_out", {"pool": "write"})
            if sampled == expected:
                return True
            time.sleep(POOL_SAMPLE_SECONDS / 10)
        return False

    assert follows(0)
    held = [engine.connect(), engine.connect()]
    try:
        assert engine.pool.checkedout() == 2 and follows(2)
    finally:
        for connection in held:
            connection.close()
    assert follows(0)
    assert any(thread.name == "sprig-pool-sampler" for thread in threading.enumerate())


def usage_event(user_id: int, subagent_id: int, version_id: int) -> dict:
    return {
        "event_id": str(uuid.uuid4()),
        "user_id": user_id,
        "subagent_id": subagent_id,
        "version_id": version_id,
        "kind": "open",
        "occurred_at": (datetime.now(UTC) - timedelta(minutes=5)).isoformat(),
    }


def test_the_worker_serves_its_task_metrics_on_its_own_address():
    port = free_port()
    server = serve_worker_metrics(f"127.0.0.1:{port}")
    try:
        page = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    finally:
        server.shutdown()
        server.server_close()
    assert page.status_code == 200
    exposed = {family.name for family in text_string_to_metric_families(page.text)}
    assert {"sprig_celery_task_duration_seconds", "sprig_celery_task_failures"} <= exposed


def test_metrics_off_times_nothing_and_serves_no_endpoint(database_url):
    """SPRIG_METRICS=0 (the overhead bench's baseline): no /metrics, no request timing."""
    labels = {"route": "/api/v1/health", "method": "GET", "status": "200"}
    name = "sprig_http_request_duration_seconds_count"
    with make_app(database_url, metrics=False) as app:
        client = app.test_client()
        before = REGISTRY.get_sample_value(name, labels) or 0
        assert client.get(f"{API}/health").status_code == 200
        assert (REGISTRY.get_sample_value(name, labels) or 0) == before
        assert client.get(METRICS).status_code == 404


def test_a_made_up_method_adds_no_series_of_its_own(database_url):
    """Any token is a method to HTTP: each one a client invents is counted as ``other``, so a
    scanner cannot grow the series (and the scrape) without bound."""
    name = "sprig_http_request_duration_seconds_count"
    # A method the route does not allow fails in routing, before a rule is matched.
    other = {"route": "unmatched", "method": "other", "status": "405"}
    with make_app(database_url) as app:
        client = app.test_client()
        before = REGISTRY.get_sample_value(name, other) or 0
        for method in ("BREW", "PROPFIND", "X-ODD"):
            assert client.open(f"{API}/health", method=method).status_code == 405
        assert (REGISTRY.get_sample_value(name, other) or 0) == before + 3
        for method in ("BREW", "PROPFIND", "X-ODD"):
            assert REGISTRY.get_sample_value(name, {**other, "method": method}) is None
