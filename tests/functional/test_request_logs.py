"""Request ids and access lines, in process: the id a request gets, its one access line, and
the id carried into a Celery task it starts (eager here: the same apply_async and the same
task_prerun/task_postrun signals as a worker; the real worker is in test_request_logs_live)."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from datetime import datetime, timedelta

import pytest

from market.platform.logs import (
    REQUEST_ID_HEADER,
    AccessLineHandler,
    ContextFilter,
    console_formatter,
    json_formatter,
    logging_config,
)
from market.usage.tasks import rollup_task
from tests.factories import make_user

API = "/api/v1"
NEW_ID = re.compile(r"[0-9a-f]{32}")


class Lines(logging.Handler):
    """Log lines as production writes them (the context filter, the JSON formatter), parsed."""

    def __init__(self) -> None:
        super().__init__()
        self.addFilter(ContextFilter())
        self.setFormatter(json_formatter())
        self.raw: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.raw.append(self.format(record))

    def parsed(self, logger: str | None = None) -> list[dict]:
        lines = [json.loads(line) for line in self.raw]
        return [line for line in lines if logger is None or line["logger"] == logger]


@pytest.fixture
def lines():
    handler = Lines()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


@pytest.mark.parametrize("given", ["abc-123", "7f1c2a9e-5b1d-4c47-9a55-2b7f0e8d9c10", "a" * 64])
def test_a_safe_request_id_is_echoed(client, given):
    assert (
        client.get(f"{API}/health", headers={REQUEST_ID_HEADER: given}).headers[REQUEST_ID_HEADER]
        == given
    )


@pytest.mark.parametrize("given", ["a" * 65, "two words", "<script>", "id;drop", "é"])
def test_an_unsafe_request_id_is_replaced(client, given):
    echoed = client.get(f"{API}/health", headers={REQUEST_ID_HEADER: given}).headers[
        REQUEST_ID_HEADER
    ]
    assert NEW_ID.fullmatch(echoed)


def test_a_request_without_an_id_gets_a_new_one_each_time(client):
    first, second = (client.get(f"{API}/health").headers[REQUEST_ID_HEADER] for _ in range(2))
    assert NEW_ID.fullmatch(first) and NEW_ID.fullmatch(second) and first != second


def test_error_answers_carry_the_id_too(client):
    response = client.get(f"{API}/subagents/99999", headers={REQUEST_ID_HEADER: "missing-1"})
    assert response.status_code == 404
    assert response.headers[REQUEST_ID_HEADER] == "missing-1"


def test_one_access_line_per_request_with_route_status_caller_and_no_personal_text(
    client, engine, lines
):
    alice = make_user(engine, "alice", email="alice.baker@example.org", phone="+1 555 010 7788")
    searched = "alice.baker@example.org +1 555 010 7788"
    response = client.get(f"{API}/subagents", query_string={"q": searched}, headers=alice.headers)
    detail = client.get(f"{API}/subagents/4242", headers={REQUEST_ID_HEADER: "detail-1"})

    access = lines.parsed("market.access")
    assert len(access) == 2
    search_line, detail_line = access
    assert search_line["method"] == "GET"
    assert search_line["route"] == f"{API}/subagents"
    assert search_line["status"] == response.status_code == 200
    assert search_line["user_id"] == alice.id
    assert search_line["request_id"] == response.headers[REQUEST_ID_HEADER]
    assert isinstance(search_line["duration_ms"], float) and search_line["duration_ms"] >= 0
    # The answer tells its own server time, the access line's figure (API and pages alike).
    for answer, line in ((response, search_line), (detail, detail_line)):
        assert answer.headers["Server-Timing"] == f"app;dur={line['duration_ms']:.1f}"
    assert detail_line["route"] == f"{API}/subagents/<subagent_id>"
    assert detail_line["ids"] == {"subagent_id": 4242}
    assert detail_line["status"] == detail.status_code == 404
    assert detail_line["request_id"] == "detail-1"
    assert "user_id" not in detail_line and "service_id" not in detail_line
    written = "\n".join(lines.raw)
    for secret in (alice.token, "alice.baker", "555 010", "Bearer", "q="):
        assert secret not in written


def test_a_service_is_named_by_its_service_id(client, engine, lines):
    service = make_user(engine, "trainer", kind="service", scopes=["exports"])
    client.get(f"{API}/exports", headers=service.headers)
    (line,) = lines.parsed("market.access")
    assert line["service_id"] == service.id and "user_id" not in line


def test_the_access_line_written_straight_is_the_json_formatters_line(
    client, engine, lines, tmp_path
):
    """Production writes access lines past the logging machinery (AccessLineHandler); the line
    must be the one a record through the JSON formatter makes: same keys, same order, same
    values (all but the clock's)."""
    alice = make_user(engine, "alice")
    headers = {REQUEST_ID_HEADER: "same-1", **alice.headers}
    access = logging.getLogger("market.access")
    written = tmp_path / "access.log"
    with written.open("w") as stream:
        handler = AccessLineHandler(stream)
        access.addHandler(handler)
        access.propagate = False
        try:
            client.get(f"{API}/subagents/4242/lineage", headers=headers)
        finally:
            access.removeHandler(handler)
            access.propagate = True
    client.get(f"{API}/subagents/4242/lineage", headers=headers)  # as a record, this time

    (direct_text,) = written.read_text().splitlines()
    direct = json.loads(direct_text)
    assert lines.parsed("market.access"), "the second request went through a record"
    (formatted,) = lines.parsed("market.access")
    assert list(direct) == list(formatted)
    for line in (direct, formatted):
        assert re.fullmatch(
            r"GET /api/v1/subagents/<subagent_id>/lineage 404 \d+\.\dms", line.pop("message")
        )
        assert datetime.fromisoformat(line.pop("time")).utcoffset() == timedelta(0)
        assert isinstance(line.pop("duration_ms"), float)
    assert direct == formatted
    assert direct["user_id"] == alice.id and direct["request_id"] == "same-1"
    assert direct["ids"] == {"subagent_id": 4242} and direct["process"] == os.getpid()


def test_the_json_configuration_sends_access_lines_straight_and_nothing_else(tmp_path):
    config = logging_config("json")
    assert config["handlers"]["access"]["()"] is AccessLineHandler
    assert config["loggers"]["market.access"] == {"handlers": ["access"], "propagate": False}
    assert "market.access" not in logging_config("console")["loggers"]


def test_a_task_started_by_a_request_logs_with_its_request_id(app, lines, caplog):
    """Eager: the task runs inside the request, through FlaskTask.apply_async (which adds the
    header) and Celery's tracer (which sends task_prerun/task_postrun and logs the success)."""
    caplog.set_level(logging.INFO, logger="celery.app.trace")
    with app.test_request_context(headers={REQUEST_ID_HEADER: "from-a-request"}):
        app.preprocess_request()
        result = rollup_task.delay()
    task_lines = [line for line in lines.parsed() if line.get("task") == "sprig.rollup"]
    assert task_lines, lines.raw
    for line in task_lines:
        assert line["request_id"] == "from-a-request"
        assert line["task_id"] == result.id
    # Outside the request, the task's context is gone with it.
    logging.getLogger("market.probe").warning("after the request")
    assert "request_id" not in lines.parsed("market.probe")[0]


def test_a_task_started_outside_a_request_has_no_request_id(app, lines, caplog):
    caplog.set_level(logging.INFO, logger="celery.app.trace")
    rollup_task.delay()
    task_lines = [line for line in lines.parsed() if line.get("task") == "sprig.rollup"]
    assert task_lines and all("request_id" not in line for line in task_lines)


def test_an_unknown_log_format_is_refused_by_name():
    with pytest.raises(ValueError, match="SPRIG_LOG_FORMAT must be one of json, console"):
        logging_config("xml")


def test_console_lines_name_the_request_for_a_person_at_a_terminal(client, capsys):
    handler = logging.StreamHandler(sys.stdout)
    handler.addFilter(ContextFilter())
    handler.setFormatter(console_formatter())
    access = logging.getLogger("market.access")
    access.addHandler(handler)
    try:
        client.get(f"{API}/health", headers={REQUEST_ID_HEADER: "console-1"})
    finally:
        access.removeHandler(handler)
    (line,) = capsys.readouterr().out.splitlines()
    assert f" INFO    market.access [console-1] GET {API}/health 200 " in line
    assert line.endswith("ms") and not line.startswith("{")
