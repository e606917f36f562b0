"""Hostile or absurd input: text a database cannot store, JSON nested absurdly deep,
secrets and personal data in a listing's text, bodies of the wrong type or JSON ``null``, and
the headers every response carries. Every case is a clear 4xx that changes nothing, on every
backend. The over-long URL is checked through a real gunicorn at the bottom.
"""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
import requests
from sqlalchemy import func, select

from market.catalog.models import ForkRequest, Report, SubAgent, Version
from market.platform.db import session_scope
from market.platform.migrate import upgrade
from market.usage.models import Feedback, UsageEvent
from tests import gunicorn_server as gunicorn
from tests.factories import bundle, listing, make_user, publish

API = "/api/v1"
PROBLEM = "application/problem+json"


def count(engine, model) -> int:
    with session_scope(engine) as session:
        return session.execute(select(func.count()).select_from(model)).scalar_one()


def assert_problem(response, *statuses: int) -> dict:
    assert response.status_code in statuses, response.get_data(as_text=True)[:500]
    assert response.mimetype == PROBLEM
    body = response.get_json()
    assert body["status"] == response.status_code and body["detail"]
    return body


def locations(problem: dict) -> list[str]:
    return [error.get("location", "") for error in problem.get("errors", [])]


def raw_json(value) -> bytes:
    """JSON as a client may send it: ``json.dumps`` writes a lone surrogate as the escape
    ``\\ud800`` (valid JSON text, not valid Unicode) and NUL as ``\\u0000``."""
    return json.dumps(value).encode()


@pytest.fixture
def alice(engine):
    return make_user(engine, "alice", email="alice.baker@example.org", phone="+1 555 010 7788")


@pytest.fixture
def bob(engine):
    return make_user(engine, "bob")


@pytest.fixture
def collector(engine):
    return make_user(engine, "collector", kind="service", scopes=["events:write"])


# ---- text PostgreSQL cannot store -------------------------------------------------------

NUL = "a\u0000b"
LONE = "a\ud800b"


def _event(user_id: int, sub: dict, **fields) -> dict:
    body = {
        "event_id": str(uuid.uuid4()),
        "user_id": user_id,
        "subagent_id": sub["id"],
        "version_id": sub["latest_version"]["id"],
        "kind": "open",
        "occurred_at": (datetime.now(UTC) - timedelta(minutes=5)).isoformat(),
    }
    body.update(fields)
    return body


@pytest.mark.parametrize("text", [NUL, LONE], ids=["nul", "lone-surrogate"])
def test_one_unstorable_event_is_rejected_alone_and_the_rest_stored(
    app, client, engine, alice, bob, collector, text
):
    app.config["PROPAGATE_EXCEPTIONS"] = False  # a crash answers 500, as in production
    sub = publish(client, alice)
    good = [_event(bob.id, sub, properties={"n": i}) for i in range(3)]
    bad = [
        _event(bob.id, sub, properties={"note": text}),
        _event(bob.id, sub, properties={text: 1}),
        _event(bob.id, sub, properties={"deep": [{"x": text}]}),
        _event(bob.id, sub, properties={"a": 1, f"b{text}": "x"}),
    ]
    items = [good[0], bad[0], good[1], bad[1], bad[2], good[2], bad[3]]
    response = client.post(
        f"{API}/events",
        data=raw_json({"events": items}),
        content_type="application/json",
        headers=collector.headers,
    )
    assert response.status_code == 202, response.get_data(as_text=True)[:500]
    body = response.get_json()
    assert (body["stored"], body["rejected"]) == (3, 4)
    statuses = [r["status"] for r in body["results"]]
    assert statuses == [
        "stored",
        "rejected",
        "stored",
        "rejected",
        "rejected",
        "stored",
        "rejected",
    ]
    for result in body["results"]:
        if result["status"] == "rejected":
            assert "properties" in result["reason"]
    with session_scope(engine) as session:
        stored = {str(i) for i in session.execute(select(UsageEvent.event_id)).scalars()}
    assert stored == {e["event_id"] for e in good}
    # The client's retry of the same batch is answered the same way, not looped on a 500.
    again = client.post(
        f"{API}/events",
        data=raw_json({"events": items}),
        content_type="application/json",
        headers=collector.headers,
    )
    assert again.status_code == 202
    assert [r["status"] for r in again.get_json()["results"]] == [
        "duplicate" if s == "stored" else s for s in statuses
    ]


# (method, path, who, body fields, the field the problem must name). `{id}` is alice's root.
WRITE_PATHS = {
    "publish title": ("post", "/subagents", "alice", {"title": "T{x}"}, "title"),
    "publish summary": ("post", "/subagents", "alice", {"summary": "{x}"}, "summary"),
    "publish story": ("post", "/subagents", "alice", {"story": "{x}"}, "story"),
    "publish tags": ("post", "/subagents", "alice", {"tags": ["ok", "t{x}"]}, "tags"),
    "publish file": ("post", "/subagents", "alice", {"file": "{x}"}, "app.js"),
    "publish manifest": ("post", "/subagents", "alice", {"manifest": "{x}"}, "description"),
    "publish data_schema": ("post", "/subagents", "alice", {"schema": "{x}"}, "data_schema"),
    "fork title": ("post", "/subagents/{id}/forks", "bob", {"title": "F{x}"}, "title"),
    "fork summary": ("post", "/subagents/{id}/forks", "bob", {"summary": "{x}"}, "summary"),
    "fork story": ("post", "/subagents/{id}/forks", "bob", {"story": "{x}"}, "story"),
    "fork request": ("post", "/subagents/{id}/forks", "bob", {"fork_request": "{x}"}, "fork_"),
    "version changelog": ("post", "/subagents/{id}/versions", "alice", {"changelog": "{x}"}, "ch"),
    "patch title": ("patch", "/subagents/{id}", "alice", {"title": "T{x}"}, "title"),
    "patch summary": ("patch", "/subagents/{id}", "alice", {"summary": "{x}"}, "summary"),
    "patch story": ("patch", "/subagents/{id}", "alice", {"story": "{x}"}, "story"),
    "patch tags": ("patch", "/subagents/{id}", "alice", {"tags": ["t{x}"]}, "tags"),
    "fork-request text": (
        "post",
        "/subagents/{id}/fork-requests",
        "bob",
        {"text": "ab{x}"},
        "text",
    ),
    "report detail": ("post", "/subagents/{id}/report", "bob", {"detail": "{x}"}, "detail"),
    "feedback comment": ("post", "/feedback", "bob", {"comment": "{x}"}, "comment"),
    "feedback tags": ("post", "/feedback", "bob", {"tags": ["t{x}"]}, "tags"),
    "yank reason": ("post", "/subagents/{id}/yank", "alice", {"reason": "abc{x}"}, "reason"),
}


def _put(value, text: str):
    if isinstance(value, list):
        return [_put(v, text) for v in value]
    return value.replace("{x}", text)


def _write_body(path: str, fields: dict, text: str, sub: dict) -> dict:
    """A valid body for ``path`` with ``text`` put where ``fields`` says."""
    note = f"unstorable {uuid.uuid4()}"
    files = bundle(note)
    fields = {k: _put(v, text) for k, v in fields.items()}
    if "file" in fields:
        files["files"]["app.js"] += fields.pop("file")
    if "manifest" in fields:
        files["manifest"]["description"] = fields.pop("manifest")
    if "schema" in fields:
        files["manifest"]["data_schema"] = {"type": "object", "title": fields.pop("schema")}
    base = {
        "/subagents": lambda: listing(bundle=files),
        "/subagents/{id}/forks": lambda: {"title": "F", "fork_request": "x", "bundle": files},
        "/subagents/{id}/versions": lambda: {"bundle": files},
        "/subagents/{id}/report": lambda: {"reason": "spam"},
        "/subagents/{id}/fork-requests": lambda: {"text": "for kids"},
        "/feedback": lambda: {"version_id": sub["latest_version"]["id"], "stars": 4},
        "/subagents/{id}/yank": lambda: {"reason": "broken"},
    }.get(path, dict)()
    return {**base, **fields}


def _snapshot(engine) -> tuple:
    with session_scope(engine) as session:
        rows = session.execute(select(SubAgent.title, SubAgent.summary, SubAgent.story)).all()
        listed = sorted(tuple(row) for row in rows)
    return (
        listed,
        count(engine, Version),
        count(engine, ForkRequest),
        count(engine, Report),
        count(engine, Feedback),
    )


@pytest.mark.parametrize("text", [NUL, LONE], ids=["nul", "lone-surrogate"])
@pytest.mark.parametrize("name", sorted(WRITE_PATHS))
def test_unstorable_text_is_a_4xx_naming_the_field_on_every_write_path(
    app, client, engine, alice, bob, name, text
):
    app.config["PROPAGATE_EXCEPTIONS"] = False
    method, path, who, fields, field = WRITE_PATHS[name]
    sub = publish(client, alice)
    actor = {"alice": alice, "bob": bob}[who]
    before = _snapshot(engine)
    response = client.open(
        API + path.format(id=sub["id"]),
        method=method.upper(),
        data=raw_json(_write_body(path, fields, text, sub)),
        content_type="application/json",
        headers=actor.headers,
    )
    problem = assert_problem(response, 422)
    assert field in json.dumps(problem["errors"]), problem
    assert _snapshot(engine) == before


# ---- JSON nested absurdly deep ----------------------------------------------------------


def _deep(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


DEEP_ENDPOINTS = {
    "publish": ("post", "/subagents", "alice"),
    "patch": ("patch", "/subagents/{id}", "alice"),
    "versions": ("post", "/subagents/{id}/versions", "alice"),
    "forks": ("post", "/subagents/{id}/forks", "bob"),
    "feedback": ("post", "/feedback", "bob"),
    "suggestions": ("post", "/suggestions", "bob"),
    "events": ("post", "/events", "collector"),
    "install": ("post", "/subagents/{id}/install", "bob"),
}


@pytest.mark.parametrize("name", sorted(DEEP_ENDPOINTS))
def test_json_nested_100000_deep_is_a_4xx_on_every_body(
    app, client, engine, alice, bob, collector, name
):
    app.config["PROPAGATE_EXCEPTIONS"] = False
    method, path, who = DEEP_ENDPOINTS[name]
    sub = publish(client, alice)
    actor = {"alice": alice, "bob": bob, "collector": collector}[who]
    before = _snapshot(engine)
    for body in (
        b'{"title":' + _deep(100_000) + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"events":[' + _deep(100_000) + b"]}",
    ):
        response = client.open(
            API + path.format(id=sub["id"]),
            method=method.upper(),
            data=body,
            content_type="application/json",
            headers=actor.headers,
        )
        problem = assert_problem(response, 400, 413)
        assert "deep" in problem["detail"]
    assert _snapshot(engine) == before


def _zip(manifest_bytes: bytes, files: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", manifest_bytes)
        for path, text in files.items():
            archive.writestr(path, text)
    return buffer.getvalue()


def _nested_schema(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


@pytest.mark.parametrize("how", ["json", "zip", "multipart metadata"])
def test_a_data_schema_nested_300_deep_is_refused_and_nothing_stored(
    app, client, engine, alice, how
):
    app.config["PROPAGATE_EXCEPTIONS"] = False
    files = bundle("deep")
    files["manifest"]["data_schema"] = _nested_schema(150)  # two levels a step: 300 deep
    assert len(json.dumps(files["manifest"]["data_schema"])) < 32 * 1024  # under the size cap
    metadata = {k: v for k, v in listing().items() if k != "bundle"}
    if how == "json":
        response = client.post(
            f"{API}/subagents", json=listing(bundle=files), headers=alice.headers
        )
    else:
        manifest = json.dumps(files["manifest"]).encode()
        if how == "multipart metadata":  # the deep part rides in the listing instead
            metadata["summary"] = _nested_schema(150)
            manifest = json.dumps(bundle("deep")["manifest"]).encode()
        response = client.post(
            f"{API}/subagents",
            data={
                "metadata": json.dumps(metadata),
                "bundle": (io.BytesIO(_zip(manifest, files["files"])), "b.zip"),
            },
            content_type="multipart/form-data",
            headers=alice.headers,
        )
    problem = assert_problem(response, 400, 413, 422)
    assert "deep" in json.dumps(problem)
    assert count(engine, SubAgent) == 0 and count(engine, Version) == 0


def test_a_data_schema_within_the_depth_cap_is_stored_and_read_back(client, alice):
    files = bundle("nested")
    files["manifest"]["data_schema"] = _nested_schema(15)
    sub = publish(client, alice, bundle=files)
    detail = client.get(f"{API}/subagents/{sub['id']}")
    assert detail.status_code == 200
    assert detail.get_json()["latest_version"]["manifest"]["data_schema"] == _nested_schema(15)
    versions = client.get(f"{API}/subagents/{sub['id']}/versions")
    assert versions.status_code == 200
    bundle_url = f"{API}/subagents/{sub['id']}/versions/{sub['latest_version']['id']}/bundle"
    assert client.get(bundle_url).status_code == 200
    assert client.get(bundle_url + "?format=zip").status_code == 200


# ---- secrets and personal data in a listing's text -------------------------------------

AWS_KEY = "AKIA" + "Q3EXAMPLEKEY7ZZ9"  # the shape of an AWS access key id


LISTING_LEAKS = {
    "publish story secret": ("post", "/subagents", {"story": f"key {AWS_KEY}"}, "story"),
    "publish title email": ("post", "/subagents", {"title": "alice.baker@example.org"}, "title"),
    "publish summary phone": ("post", "/subagents", {"summary": "call 555 010 7788"}, "summary"),
    "fork summary secret": ("post", "/subagents/{id}/forks", {"summary": AWS_KEY}, "summary"),
    "fork story email": (
        "post",
        "/subagents/{id}/forks",
        {"story": "mail alice.baker@example.org"},
        "story",
    ),
    "version changelog secret": (
        "post",
        "/subagents/{id}/versions",
        {"changelog": f"rotated {AWS_KEY}"},
        "changelog",
    ),
    "patch title secret": ("patch", "/subagents/{id}", {"title": f"App {AWS_KEY}"}, "title"),
    "patch story email": (
        "patch",
        "/subagents/{id}",
        {"story": "write to alice.baker@example.org"},
        "story",
    ),
}


@pytest.mark.parametrize("name", sorted(LISTING_LEAKS))
def test_secrets_and_personal_data_in_listing_text_are_refused(client, engine, alice, name):
    method, path, fields, field = LISTING_LEAKS[name]
    sub = publish(client, alice)
    body = _write_body(path, {}, "", sub) | fields
    if path.endswith("/forks"):
        body["title"] = body.get("title", "Fork")
    before = _snapshot(engine)
    response = client.open(
        API + path.format(id=sub["id"]), method=method.upper(), json=body, headers=alice.headers
    )
    problem = assert_problem(response, 422)
    assert any(location.startswith(field) for location in locations(problem)), problem
    assert AWS_KEY not in json.dumps(problem) and "alice.baker" not in json.dumps(problem)
    assert _snapshot(engine) == before


# ---- bodies: JSON only where JSON is expected, and never `null` ------------------------


def test_patch_with_text_plain_is_415_and_changes_nothing(client, engine, alice):
    sub = publish(client, alice)
    before = _snapshot(engine)
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        response = client.patch(
            f"{API}/subagents/{sub['id']}",
            data=json.dumps({"title": "Renamed"}),
            content_type=content_type,
            headers=alice.headers,
        )
        assert_problem(response, 415)
    assert _snapshot(engine) == before
    ok = client.patch(
        f"{API}/subagents/{sub['id']}", json={"title": "Renamed"}, headers=alice.headers
    )
    assert ok.status_code == 200 and ok.get_json()["title"] == "Renamed"


def test_other_json_endpoints_refuse_other_content_types(client, engine, alice, bob, collector):
    sub = publish(client, alice)
    cases = [
        (f"{API}/subagents/{sub['id']}/install", bob, {}),
        (f"{API}/subagents/{sub['id']}/report", bob, {"reason": "spam"}),
        (f"{API}/events", collector, {"events": []}),
        (f"{API}/subagents", alice, listing()),
    ]
    for url, actor, body in cases:
        response = client.post(
            url, data=json.dumps(body), content_type="text/plain", headers=actor.headers
        )
        assert_problem(response, 415)
    assert count(engine, SubAgent) == 1


def test_a_json_null_body_is_400(app, client, engine, alice, bob):
    exporter = make_user(engine, "trainer", kind="service", scopes=["exports"])
    sub = publish(client, alice)
    cases = [
        (f"{API}/subagents/{sub['id']}/install", bob),
        (f"{API}/exports", exporter),
        (f"{API}/subagents/{sub['id']}/report", bob),
        (f"{API}/subagents", alice),
    ]
    for url, actor in cases:
        response = client.post(
            url, data="null", content_type="application/json", headers=actor.headers
        )
        problem = assert_problem(response, 400)
        assert "null" in problem["detail"]
    patched = client.patch(
        f"{API}/subagents/{sub['id']}",
        data="null",
        content_type="application/json",
        headers=alice.headers,
    )
    assert_problem(patched, 400)
    assert client.get(f"{API}/me/installs", headers=bob.headers).get_json()["items"] == []
    assert client.get(f"{API}/exports/1", headers=exporter.headers).status_code == 404


# ---- a Content-Security-Policy on every response ---------------------------------------


def test_every_response_has_a_csp(client):
    for url in (f"{API}/docs", f"{API}/nope", "/no/such/page", f"{API}/openapi.json", "/"):
        response = client.get(url)
        assert response.headers.get("Content-Security-Policy"), url
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"], url
    docs = client.get(f"{API}/docs").headers["Content-Security-Policy"]
    assert "script-src 'self'" in docs and "unsafe-eval" not in docs
    assert client.get(f"{API}/nope").headers["Content-Security-Policy"] == (
        "default-src 'none'; frame-ancestors 'none'"
    )


# ---- the document says all of this -------------------------------------------------------


def test_the_document_describes_these_answers(client):
    spec = client.get(f"{API}/openapi.json").get_json()
    operations = [
        (path, method, operation)
        for path, item in spec["paths"].items()
        for method, operation in item.items()
    ]
    assert [f"{m} {p}" for p, m, op in operations if "414" not in op["responses"]] == []
    with_body = [(p, m, op) for p, m, op in operations if "requestBody" in op]
    assert with_body
    assert [f"{m} {p}" for p, m, op in with_body if "415" not in op["responses"]] == []
    assert "429" in spec["paths"][f"{API}/events"]["post"]["responses"]
    created = spec["paths"][f"{API}/subagents"]["post"]["responses"]["201"]["links"]
    assert {"GetSubAgent", "ListVersions", "Fork", "Install", "GetLatestBundle"} <= set(created)
    download = spec["paths"][f"{API}/exports/{{run_id}}/files/{{path}}"]["get"]["responses"]["200"]
    assert {"text/markdown", "application/vnd.apache.parquet"} <= set(download["content"])


def test_an_over_long_url_is_414_problem_json_in_process(client):
    response = client.get(f"{API}/health?pad=" + "x" * 5000)
    problem = assert_problem(response, 414)
    assert "4096" in problem["detail"]
    assert client.get(f"{API}/health?pad=" + "x" * 4000).status_code == 200


# ---- an over-long URL through gunicorn -------------------------------------------------


@pytest.fixture
def gunicorn_server(tmp_path):
    """A real gunicorn on a fresh SQLite database: its request-line limit comes before Flask."""
    url = f"sqlite:///{tmp_path / 'sprig.db'}"
    upgrade(url)
    settings = {"SPRIG_DATABASE_URL": url, "SPRIG_THREADS": "2", "SPRIG_SECRET_KEY": "long-url"}
    served = gunicorn.start(settings, tmp_path / "gunicorn.log")
    try:
        yield served.base
    finally:
        gunicorn.stop(served)


@pytest.mark.parametrize("length", [5 * 1024, 7 * 1024])
def test_an_over_long_url_gets_problem_json_through_gunicorn(gunicorn_server, length):
    url = f"{gunicorn_server}{API}/subagents?q=" + "x" * length  # q itself is capped lower
    response = requests.get(url, timeout=10)
    assert response.status_code == 414, response.text[:300]
    assert response.headers["Content-Type"] == PROBLEM
    body = response.json()
    assert body["status"] == 414 and "4096" in body["detail"]
    assert response.headers.get("Content-Security-Policy")
    # The documented limit is the app's: a URL just under it is served.
    ok = requests.get(f"{gunicorn_server}{API}/health?pad=" + "x" * 4000, timeout=10)
    assert ok.status_code == 200
