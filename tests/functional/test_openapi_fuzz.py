"""Schemathesis fuzzing of every operation in /api/v1/openapi.json, in process, on every backend.

Goal: no 5xx anywhere, and every response conforms to the published document (status code,
content type, body schema, headers), with every check schemathesis has: schema-valid data
accepted, schema-invalid data refused, auth not ignored. Two runs per operation: a person's
token (the author of the seeded root) and a service token (publish:on-behalf, suggest).
``test_api_workflows`` then runs stateful scenarios: chains of calls that follow the
document's links (and those schemathesis infers), where the checks that need history
(a created resource is found, a deleted one is gone) run too.

How the schema is loaded: ``schemathesis.pytest.from_fixture`` cannot be used with the pinned
pytest 9.2 (schemathesis 4.32.5's lazy loader reads ``request.node._nodeid``, which pytest 9
removed: AttributeError on every test). The OpenAPI document does not depend on the database,
so it is loaded once from an app that never connects, and every case is sent to the seeded
per-test ``app`` (``call(app=...)``), which keeps the SQLite/PostgreSQL parametrization.

The test calls ``case.call`` then ``case.validate_response`` (what ``call_and_validate`` does)
so that a known SQLite-only bug can be stamped out of the body before validation.

Known server bugs are not hidden: each has its own strict-xfail test at the bottom of this
file, and ``_known`` (used by the ``filter_failure`` hook) drops exactly that failure shape
from the fuzz run, nothing else, so the fuzzer keeps looking for new ones. When a bug is
fixed its test XPASSes (a strict failure): remove its xfail and its clause in ``_known``.
A few rejections are by design (opaque cursors, bundle content checks, rules that depend on
the caller or on stored rows, a stats window's span, a private sub-agent made for someone
else); ``_known`` says which.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
import zipfile
from dataclasses import replace

import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from schemathesis.core.failures import AcceptedNegativeData
from schemathesis.openapi.checks import (
    EnsureResourceAvailability,
    RejectedPositiveData,
    UndefinedContentType,
    UndefinedStatusCode,
    UnsupportedMethodResponse,
)
from sqlalchemy.exc import DataError

from market.app import create_app
from market.platform.pagination import encode_cursor
from market.platform.ratelimit import RateLimiter
from market.platform.state import app_state, install_state
from market.ranking.services import EmbeddedSchedule
from market.suggestions.services import SuggestionService
from tests.conftest import _wipe as wipe
from tests.factories import bundle, fork, listing, make_user, publish

API = "/api/v1"
INT32_MAX = 2**31 - 1
PROBLEM = "application/problem+json"

# Building the spec needs no database: the engine is created lazily and never connected.
_spec_app = create_app({"database_url": "sqlite://", "testing": True, "secret_key": "spec"})
schema = schemathesis.openapi.from_wsgi(f"{API}/openapi.json", _spec_app)
SPEC = _spec_app.test_client().get(f"{API}/openapi.json").get_json()

# Operations that answer 200 instead of 201 when the same request was already applied.
IDEMPOTENT_CREATES = [
    ("post", "/subagents"),
    ("post", "/subagents/{subagent_id}/forks"),
    ("post", "/subagents/{subagent_id}/versions"),
    ("post", "/subagents/zip"),
    ("post", "/subagents/{subagent_id}/forks/zip"),
    ("post", "/subagents/{subagent_id}/versions/zip"),
    ("post", "/subagents/{subagent_id}/install"),
    ("post", "/subagents/{subagent_id}/fork-requests"),
    ("post", "/subagents/{subagent_id}/report"),
    ("post", "/feedback"),  # 200 when the caller re-rates the same version
]
_IDEMPOTENT_LABELS = {f"{m.upper()} {API}{p}" for m, p in IDEMPOTENT_CREATES}
BUNDLE_OPERATIONS = {
    "PublishIn": ("post", "/subagents"),
    "ForkIn": ("post", "/subagents/{subagent_id}/forks"),
    "VersionIn": ("post", "/subagents/{subagent_id}/versions"),
}
ZIP_OPERATIONS = {
    "PublishIn": ("post", "/subagents/zip"),
    "ForkIn": ("post", "/subagents/{subagent_id}/forks/zip"),
    "VersionIn": ("post", "/subagents/{subagent_id}/versions/zip"),
}
_BUNDLE_OPS = {
    (method, API + path) for method, path in [*BUNDLE_OPERATIONS.values(), *ZIP_OPERATIONS.values()]
}

# ---- generation: reach the seeded rows and the success paths, not only 404/422 ------------

NOTES = ("a", "b", "c")  # few distinct bundles, so identical re-publishes happen too


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    """Ids are mostly drawn near zero anyway; also aim at the seeded ids 1..8 on purpose.
    Only integers are replaced (a negative-mode value stays invalid)."""
    ints = [k for k, v in (path_parameters or {}).items() if type(v) is int]
    if not ints:
        return st.just(path_parameters)
    known = st.fixed_dictionaries({k: st.integers(1, 8) for k in ints})
    return st.one_of(st.just(path_parameters), known.map(lambda k: {**path_parameters, **k}))


@schema.hook
def flatmap_query(context, query):
    """Cursors are opaque: a random string is (rightly) a 400. Also send well-formed cursors
    of random shapes and values, so decoding, datetime parsing and the keyset comparison run."""
    if not isinstance(query, dict) or not isinstance(query.get("cursor"), str):
        return st.just(query)
    anything = st.one_of(
        st.integers(-(2**63), 2**63),
        st.text(max_size=20),
        st.datetimes(timezones=st.none() | st.timezones()).map(lambda d: d.isoformat()),
        st.booleans(),
        st.none(),
    )
    big_int = st.integers(-(2**62) + 1, 2**62 - 1)  # what decode_cursor accepts
    small_int = st.integers(0, 50)
    stamp = st.datetimes(timezones=st.none() | st.timezones()).map(lambda d: d.isoformat())
    made = st.one_of(
        st.lists(anything, min_size=1, max_size=3).map(lambda values: encode_cursor(*values)),
        st.tuples(small_int | big_int).map(lambda v: encode_cursor(*v)),  # offset / last id
        st.tuples(small_int | big_int, small_int | big_int).map(lambda v: encode_cursor(*v)),
        st.tuples(stamp, small_int | big_int).map(lambda v: encode_cursor(*v)),  # sort=new
    )
    fits = made.filter(lambda c: len(c) <= 200)  # the documented maxLength of a cursor
    return st.one_of(st.just(query), fits.map(lambda c: {**query, "cursor": c}))


def _zip(data: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(data["manifest"]))
        for path, text in data["files"].items():
            archive.writestr(path, text)
    return buffer.getvalue()


def _documented_body(operation, body, content_type: str = "application/json") -> bool:
    """Whether the document calls ``body`` valid for ``operation`` (multipart: its JSON
    ``metadata`` field), so that replacing parts of it by valid ones keeps it valid."""
    content = SPEC["paths"][operation.path][operation.method.lower()]["requestBody"]["content"]
    if content_type not in content:  # each bundle operation reads one content type
        return False
    schema = content[content_type]["schema"]
    if content_type == "multipart/form-data":
        try:
            body = {**body, "metadata": json.loads(body["metadata"])}
        except ValueError:
            return False
        schema = schema["properties"]["metadata"]
        body = body["metadata"]
    return _documented(schema, body)


def _with_seeded_user(body: dict):
    """Random user ids are (rightly) 404s: also ask for the seeded people (alice 1, bob 2,
    mod 3; 4 is the service, a 404 too). Only a valid user_id is replaced, so a
    negative-mode value stays invalid."""
    user_id = body.get("user_id")
    if type(user_id) is not int or not 1 <= user_id <= INT32_MAX:
        return st.just(body)
    return st.one_of(st.just(body), st.integers(1, 4).map(lambda u: {**body, "user_id": u}))


@schema.hook
def flatmap_body(context, body):
    """Random bundles are (rightly) rejected by the bundle checks; also send real ones, and
    name a real person in ``on_behalf_of``. Only a body the document calls valid is changed
    (into another valid one), so a negative-mode body stays invalid."""
    operation = context.operation
    if not isinstance(body, dict) or (operation.method.lower(), operation.path) not in _BUNDLE_OPS:
        return st.just(body)
    if (
        isinstance(body.get("metadata"), str)
        and isinstance(body.get("bundle"), bytes | str)
        and _documented_body(operation, body, "multipart/form-data")
    ):  # multipart publish / fork / version
        path = operation.path.removesuffix("/zip")
        if path.endswith("/forks"):
            metadata = {"title": "Zip fork", "fork_request": "as a zip"}
        elif path.endswith("/versions"):
            metadata = {"changelog": "from a zip"}
        else:
            metadata = {k: v for k, v in listing().items() if k != "bundle"}
        extras = [{}, {"on_behalf_of": "bob"}]
        if not path.endswith("/versions"):
            extras.append({"visibility": "private"})
        real = st.builds(
            lambda note, extra: {
                "metadata": json.dumps({**metadata, **extra}),
                "bundle": _zip(bundle(note)),
            },
            st.sampled_from(NOTES),
            st.sampled_from(extras),
        )
        return st.one_of(st.just(body), real)
    if "metadata" not in body and _documented_body(operation, body):  # JSON
        variants = st.fixed_dictionaries(
            {"bundle": st.sampled_from(NOTES).map(bundle)},
            optional={"on_behalf_of": st.sampled_from(["alice", "bob"])},
        )
        return st.one_of(st.just(body), variants.map(lambda v: {**body, **v}))
    return st.just(body)


# ---- what the fuzz run ignores, and why --------------------------------------------------


def _year_zero_date(case) -> bool:
    """A ``from``/``to`` query date in year 0000 (valid RFC 3339, not a Python date)."""
    query = case.query if isinstance(case.query, dict) else {}
    return any(
        isinstance(query.get(name), str) and query[name].startswith("0000")
        for name in ("from", "to")
    )


INT_FIELDS = {"version_id", "parent_version_id", "fork_request_id"}
BOOL_FIELDS = {"lift"}


def _lax_coercion(case) -> bool:
    """A JSON body with a boolean for an integer field, or a non-boolean for a boolean one."""
    body = case.body if isinstance(case.body, dict) else {}
    return any(
        (key in INT_FIELDS and type(value) is bool)
        or (key in BOOL_FIELDS and value is not None and type(value) is not bool)
        for key, value in body.items()
    )


def _events_judged_alone(case, body) -> bool:
    """A batch whose only flaws are events the document calls invalid, each of them rejected
    in the 202 (by design: a bad event is rejected alone, the rest stored)."""
    events = case.body.get("events") if isinstance(case.body, dict) else None
    if not isinstance(events, list) or not isinstance(body, dict):
        return False
    item = SPEC["components"]["schemas"]["UsageEventIn"]
    invalid = [index for index, event in enumerate(events) if not _documented(item, event)]
    statuses = {result.get("index"): result.get("status") for result in body.get("results", [])}
    return bool(invalid) and all(statuses.get(index) == "rejected" for index in invalid)


def _known(failure, case, response) -> str | None:
    """Why this failure is expected (by design, or a known bug pinned below), else None."""
    status = response.status_code
    try:
        body = response.json() if response.content else {}
    except ValueError:
        body = {}
    detail = body.get("detail", "") if isinstance(body, dict) else ""
    title = body.get("title", "") if isinstance(body, dict) else ""
    if isinstance(failure, RejectedPositiveData):
        # By design: a cursor the server did not make is a 400 (cursors are opaque).
        if status == 400 and "cursor" in detail:
            return "opaque cursor"
        # By design: the bundle checks (manifest fields, paths, personal values, secrets)
        # cannot be written as JSON Schema, so a schema-valid bad bundle is a 422 or 413.
        if status in (413, 422) and title.startswith("Bundle"):
            return "bundle content checks"
        # By design, state- or token-dependent: only a service must name `on_behalf_of`, it
        # must name an existing person, and a fork_request_id must be a request for this parent.
        if status == 422 and detail.startswith(
            ("A service publishes for a user", "No person with handle", "Fork request ")
        ):
            return "depends on the caller or on stored rows"
        # By design, stored-row-dependent: a switch plan needs both versions to declare a
        # data_schema and the target to be a branch of the same lineage.
        if status == 422 and (
            "declares no data_schema" in detail or " is not a branch of sub-agent " in detail
        ):
            return "a switch between versions that declare no stored data"
        # By design: RFC 3339 has a year 0000, Python's dates start at year 1.
        if status == 422 and _year_zero_date(case):
            return "year 0000"
        # By design: a stats window runs forwards and spans at most 400 days, which JSON
        # Schema cannot say of two separate dates.
        if status == 400 and detail.startswith(("A window is at most", "`from` is after `to`")):
            return "stats window"
    # By design: a private sub-agent is its author's alone, also when a service published it
    # for them, so the service that made it gets a 404 following its links.
    if isinstance(failure, EnsureResourceAvailability) and case.id in _HIDDEN_FROM_CALLER:
        return "private to the person it was published for"
    # By design: the link gives the sub-agent; a version id drawn at random in the body is
    # not one of its versions.
    if isinstance(failure, EnsureResourceAvailability) and " has no version " in detail:
        return "a random version of a linked sub-agent"
    if (
        isinstance(failure, AcceptedNegativeData)
        and case.operation.path == f"{API}/events"
        and status == 202
        and _events_judged_alone(case, body)
    ):
        return "each event is judged alone"
    if isinstance(failure, AcceptedNegativeData) and _lax_coercion(case):
        return "test_json_bodies_are_not_coerced"
    if (
        isinstance(failure, UnsupportedMethodResponse)
        and failure.failure_reason == "missing_allow_header"
    ):
        return "test_405_lists_the_allowed_methods"
    if (
        isinstance(failure, UndefinedContentType)
        and status == 404
        and failure.content_type == PROBLEM
        and failure.defined_content_types == ["application/json"]
    ):
        return "test_every_documented_error_is_problem_json"
    if (
        isinstance(failure, UndefinedContentType)
        and failure.content_type == "application/zip"
        and case.operation.path.endswith("/bundle")
    ):
        return "test_zip_bundle_download_is_documented"
    if (
        isinstance(failure, UndefinedStatusCode)
        and status == 200
        and case.operation.label in _IDEMPOTENT_LABELS
    ):
        return "test_idempotent_replays_document_200"
    return None


@schema.hook
def filter_failure(context, failure, case, response):
    return _known(failure, case, response) is None


# A naive ISO timestamp as a whole JSON string (no offset): SQLite hands them back that way.
_NAIVE_TIMESTAMP = re.compile(rb'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)"')


def _utc_offsets_added(response: schemathesis.Response) -> schemathesis.Response:
    """Known SQLite bug (test_timestamps_carry_an_offset): stamp naive timestamps as UTC
    before validation, so the rest of each body is still checked against its schema."""
    return schemathesis.Response(
        status_code=response.status_code,
        headers=response.headers,
        content=_NAIVE_TIMESTAMP.sub(rb'"\1+00:00"', response.content),
        request=response.request,
        elapsed=response.elapsed,
        verify=response.verify,
        message=response.message,
        http_version=response.http_version,
        encoding=response.encoding,
    )


def _out_of_int32_range(case) -> bool:
    """A path id or a cursor value beyond the 32-bit id columns (known 500s)."""
    values = [v for v in (case.path_parameters or {}).values() if type(v) is int]
    cursor = (case.query or {}).get("cursor") if isinstance(case.query, dict) else None
    if isinstance(cursor, str):
        try:
            decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        except (ValueError, binascii.Error):
            decoded = []
        values += [v for v in decoded if type(v) is int] if isinstance(decoded, list) else []
    return any(abs(v) > INT32_MAX for v in values)


def _known_crash(case, exc: Exception) -> bool:
    """Unhandled errors (500s) already pinned by strict xfails below."""
    return _out_of_int32_range(case)  # test_out_of_range_*_are_4xx_not_500


# ---- the fuzz run --------------------------------------------------------------------------


def _seed(app, engine, kind: str):
    """Two people, a moderator, a service; two roots, a public and a private fork, an install
    and a fork request. Returns the token's headers and handle: alice's (author of the root)
    or the service's."""
    client = app.test_client()
    alice = make_user(engine, "alice")
    bob = make_user(engine, "bob")
    make_user(engine, "mod", role="moderator")
    svc = make_user(
        engine, "svc", kind="service", scopes=["publish:on-behalf", "suggest", "recommend"]
    )
    root = publish(client, alice)
    publish(client, bob, title="Sleep Diary", category="sleep", bundle=bundle("sleep"))
    child = fork(client, bob, root["id"], "oz")
    fork(client, alice, child["id"], "private", visibility="private")
    client.post(f"{API}/subagents/{root['id']}/install", json={}, headers=bob.headers)
    client.post(
        f"{API}/subagents/{root['id']}/fork-requests",
        json={"text": "for kids"},
        headers=bob.headers,
    )
    actor = alice if kind == "person" else svc
    return actor.headers, actor.handle


@pytest.fixture(params=["person", "service"])
def seeded(request, app, engine, backend):
    headers, handle = _seed(app, engine, request.param)
    return app, headers, backend, handle


# function_scoped_fixture: one seeded database is shared by all the examples of an operation
# on purpose (a fuzzer against a live catalog); every assertion (no 5xx, conformance to the
# document) holds whatever earlier examples wrote, so nothing relies on a fresh fixture.
@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_api(case, seeded):
    app, headers, backend, _handle = seeded
    try:
        response = case.call(app=app, headers=headers)
    except (OverflowError, DataError) as exc:
        if _known_crash(case, exc):
            return
        raise
    if backend == "sqlite":
        response = _utc_offsets_added(response)
    case.validate_response(
        response, headers=headers, transport_kwargs={"app": app, "headers": headers}
    )


APIWorkflow = schema.as_state_machine()
# Steps whose link starts from a sub-agent that a service published, private, for a person:
# by design only that person sees it (a 404 to the service), see _known.
_HIDDEN_FROM_CALLER: set[str] = set()


def _private_to_another(response: schemathesis.Response, handle: str) -> bool:
    try:
        made = response.json()
    except ValueError:
        return False
    return (
        isinstance(made, dict)
        and made.get("visibility") == "private"
        and (made.get("author") or {}).get("handle") != handle
    )


def test_api_workflows(seeded):
    """Stateful: sequences of calls that follow the document's links (publish → read, list
    versions, fork, install, download; a new version → its bundle; an export → its run) and
    the links schemathesis infers, every check on every step. The scenario is recorded, so
    the checks that need history (use_after_free, ensure_resource_availability) run too."""
    app, _headers, backend, handle = seeded
    engine = app_state(app).engine
    kind = "person" if handle == "alice" else "service"

    class Workflow(APIWorkflow):
        def setup(self):
            # Every scenario starts from the same seeded catalog, so Hypothesis replays a
            # failing one exactly (the data a step draws depends on what earlier ones made).
            wipe(engine)
            state = app_state(app)
            # A fresh ranking schedule too: an inherited one is not due again for minutes, so a
            # replayed scenario's score sorts would read no scores where the first read some.
            fresh = {
                "suggestions": SuggestionService(engine),
                "rate_limiter": RateLimiter(state.settings.redis_url),
                "ranking_schedule": EmbeddedSchedule(),
            }
            install_state(app, replace(state, **fresh))
            self.headers, _handle = _seed(app, engine, kind)

        def get_call_kwargs(self, case):
            return {"app": app, "headers": self.headers}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            parent = self.recorder.find_parent(case_id=case.id)
            made = self.recorder.find_response(case_id=parent.id) if parent else None
            if made is not None and _private_to_another(made, handle):
                _HIDDEN_FROM_CALLER.add(case.id)
            if backend == "sqlite":
                response = _utc_offsets_added(response)
            case.validate_response(
                response,
                additional_checks=additional_checks,
                headers=self.headers,
                transport_kwargs=kwargs,
                recorder=self.recorder,
            )

    Workflow.run(
        settings=settings(
            max_examples=40,
            stateful_step_count=8,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
    )


# ---- known bugs the fuzzer found -----------------------------------------------------------


def test_405_lists_the_allowed_methods(client):
    response = client.put(f"{API}/health")
    assert response.status_code == 405
    assert response.headers["Content-Type"] == PROBLEM
    assert set(response.headers.get("Allow", "").replace(" ", "").split(",")) >= {"GET"}


def test_every_documented_error_is_problem_json(client):
    response = client.get(f"{API}/subagents/999999")
    assert response.status_code == 404
    assert response.headers["Content-Type"] == PROBLEM
    wrong = [
        f"{method.upper()} {path} {status}: {sorted(entry.get('content', {}))}"
        for path, item in SPEC["paths"].items()
        for method, operation in item.items()
        for status, entry in operation["responses"].items()
        if status[0] in "45" and sorted(entry.get("content", {})) != [PROBLEM]
    ]
    assert wrong == []


def test_idempotent_replays_document_200(client, engine):
    alice = make_user(engine, "alice")
    publish(client, alice)
    again = client.post(f"{API}/subagents", json=listing(), headers=alice.headers)
    assert again.status_code == 200
    undocumented = [
        f"{method.upper()} {path}"
        for method, path in IDEMPOTENT_CREATES
        if "200" not in SPEC["paths"][API + path][method]["responses"]
    ]
    assert undocumented == []


def test_zip_bundle_download_is_documented(client, engine):
    alice = make_user(engine, "alice")
    sub = publish(client, alice)
    url = f"{API}/subagents/{sub['id']}/versions/{sub['latest_version']['id']}/bundle"
    response = client.get(f"{url}?format=zip")
    assert response.status_code == 200 and response.mimetype == "application/zip"
    operation = SPEC["paths"][f"{API}/subagents/{{subagent_id}}/versions/{{version_id}}/bundle"]
    assert "application/zip" in operation["get"]["responses"]["200"]["content"]


def _documented(schema: dict, value) -> bool:
    """Whether ``value`` is valid for ``schema`` by the published document (its $refs read
    from SPEC's components, formats such as date checked)."""
    validator = jsonschema.Draft202012Validator(
        {**schema, "components": SPEC["components"]},
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )
    return validator.is_valid(value)


def _body_schema(path: str, method: str = "post", content: str = "application/json") -> dict:
    return SPEC["paths"][API + path][method]["requestBody"]["content"][content]["schema"]


METADATA_SAMPLES = {
    "PublishIn": {"title": "T", "category": "diet"},
    "ForkIn": {"title": "T", "fork_request": "fewer carbs"},
    "VersionIn": {"changelog": "fixes"},
}


@pytest.mark.parametrize("model", sorted(BUNDLE_OPERATIONS))
def test_bundle_bodies_document_what_the_server_requires(model):
    method, path = BUNDLE_OPERATIONS[model]
    content = SPEC["paths"][API + path][method]["requestBody"]["content"]
    assert set(content) == {"application/json"}  # one content type per operation
    json_ref = content["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert "bundle" in SPEC["components"]["schemas"][json_ref].get("required", [])
    method, path = ZIP_OPERATIONS[model]
    content = SPEC["paths"][API + path][method]["requestBody"]["content"]
    assert set(content) == {"multipart/form-data"}
    multipart = content["multipart/form-data"]
    metadata_encoding = multipart.get("encoding", {}).get("metadata", {})
    assert metadata_encoding.get("contentType") == "application/json"
    metadata = multipart["schema"]["properties"]["metadata"]
    # The metadata is the body without the bundle: one sent inside it is refused.
    sample = METADATA_SAMPLES[model]
    assert _documented(metadata, sample)
    assert not _documented(metadata, {**sample, "bundle": bundle("x")})


@pytest.mark.parametrize(
    ("path", "field", "value", "valid"),
    [
        ("/subagents", "title", " ", False),
        ("/subagents", "title", "  x  ", True),
        ("/subagents/{subagent_id}/yank", "reason", "ab ", False),
        ("/subagents/{subagent_id}/yank", "reason", " a b ", True),
        ("/subagents/{subagent_id}/yank", "reason", "a\u0000c", False),
    ],
)
def test_documented_lengths_count_what_the_server_counts(client, engine, path, field, value, valid):
    """Titles and reasons are measured after stripping spaces; the document says so (a
    pattern beside minLength), and the server agrees with it both ways."""
    alice = make_user(engine, "alice")
    schema = _body_schema(path)
    if "$ref" in schema:
        schema = SPEC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    assert _documented(schema["properties"][field], value) is valid
    if path == "/subagents":
        response = client.post(f"{API}/subagents", json=listing(title=value), headers=alice.headers)
        accepted = response.status_code == 201
    else:
        sub = publish(client, alice)
        response = client.post(
            f"{API}/subagents/{sub['id']}/yank", json={"reason": value}, headers=alice.headers
        )
        accepted = response.status_code == 200
    assert accepted is valid, response.get_json()
    if not valid:
        assert response.status_code == 422


@pytest.mark.parametrize(
    ("name", "extra", "valid"),
    [
        ("neither", {}, False),
        ("both", {"stars": 4, "thumbs": "up"}, False),
        ("stars 3.0", {"stars": 3.0}, True),
        ("stars 3.5", {"stars": 3.5}, False),
        ("stars '3'", {"stars": "3"}, False),
        ("thumbs", {"thumbs": "down"}, True),
    ],
)
def test_feedback_body_documents_exactly_one_rating(client, engine, name, extra, valid):
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    sub = publish(client, alice)
    assert (
        client.post(f"{API}/subagents/{sub['id']}/install", headers=bob.headers).status_code == 201
    )
    body = {"version_id": sub["latest_version"]["id"], **extra}
    assert _documented(_body_schema("/feedback"), body) is valid
    response = client.post(f"{API}/feedback", json=body, headers=bob.headers)
    assert response.status_code == (201 if valid else 422), response.get_json()
    if name == "stars 3.0":
        assert response.get_json()["scale"] == "stars"
        assert response.get_json()["rating"] == 3


@pytest.mark.parametrize("path", ["subagents/{id}", "creators/alice"])
def test_stats_dates_are_documented_dates(client, engine, path):
    """An impossible date is refused, and the document's ``format: date`` refuses it too."""
    alice = make_user(engine, "alice")
    sub = publish(client, alice)
    template = "/subagents/{subagent_id}/stats" if "{id}" in path else "/creators/{handle}/stats"
    parameters = SPEC["paths"][API + template]["get"]["parameters"]
    date_schema = next(p["schema"] for p in parameters if p["name"] == "from")
    assert _documented(date_schema, "2024-02-29") and not _documented(date_schema, "2024-13-45")
    url = f"{API}/{path.format(id=sub['id'])}/stats"
    assert client.get(f"{url}?from=2024-13-45", headers=alice.headers).status_code == 422
    assert (
        client.get(f"{url}?from=2024-02-29&to=2024-03-01", headers=alice.headers).status_code == 200
    )


LAX_BODIES = {
    "yank version_id=true": ("yank", "author", {"reason": "data loss", "version_id": True}),
    "install version_id=true": ("install", "other", {"version_id": True}),
    "fork parent_version_id=true": (
        "forks",
        "other",
        {"title": "T", "fork_request": "x", "bundle": bundle("lax"), "parent_version_id": True},
    ),
    "quarantine lift=1": ("quarantine", "moderator", {"reason": "privacy", "lift": 1}),
    "quarantine lift='yes'": ("quarantine", "moderator", {"reason": "privacy", "lift": "yes"}),
}


@pytest.mark.parametrize("name", sorted(LAX_BODIES))
def test_json_bodies_are_not_coerced(client, engine, name):
    action, who, body = LAX_BODIES[name]
    actors = {
        "author": make_user(engine, "alice"),
        "other": make_user(engine, "bob"),
        "moderator": make_user(engine, "mod", role="moderator"),
    }
    sub = publish(client, actors["author"])
    response = client.post(
        f"{API}/subagents/{sub['id']}/{action}", json=body, headers=actors[who].headers
    )
    assert response.status_code == 422, response.get_json()


_RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def test_timestamps_carry_an_offset(request, client, engine, backend):
    alice = make_user(engine, "alice")
    sub = publish(client, alice)
    assert _RFC3339.match(sub["created_at"])
    detail = client.get(f"{API}/subagents/{sub['id']}").get_json()
    stamps = [detail["created_at"], detail["updated_at"], detail["latest_version"]["created_at"]]
    assert [s for s in stamps if not _RFC3339.match(s)] == []


@pytest.mark.parametrize("big", [2**31, 2**63])
@pytest.mark.parametrize(
    "template",
    ["/subagents/{big}", "/subagents/{big}/tree", "/subagents/{id}/versions/{big}/bundle"],
)
def test_out_of_range_path_ids_are_4xx_not_500(
    request, app, client, engine, backend, template, big
):
    app.config["PROPAGATE_EXCEPTIONS"] = False  # answer as production does: a 500 response
    alice = make_user(engine, "alice")
    sub = publish(client, alice)
    response = client.get(API + template.format(big=big, id=sub["id"]), headers=alice.headers)
    assert response.status_code == 404
    assert response.headers["Content-Type"] == PROBLEM


BIG = 2**40  # accepted by decode_cursor (< 2**62), beyond the 32-bit id columns
CURSOR_CASES = {
    "forks": ("/subagents/{id}/forks", {}, (0, BIG)),
    "browse-installs": ("/subagents", {"sort": "installs"}, (BIG, 1)),
    "browse-new": ("/subagents", {"sort": "new"}, ("2024-01-01T00:00:00", BIG)),
    "my-installs": ("/me/installs", {}, (BIG,)),
    "fork-requests": ("/fork-requests", {}, (BIG,)),
    "reports": ("/reports", {}, (BIG,)),
}


@pytest.mark.parametrize("name", sorted(CURSOR_CASES))
def test_out_of_range_cursor_values_are_4xx_not_500(request, app, client, engine, backend, name):
    app.config["PROPAGATE_EXCEPTIONS"] = False
    mod = make_user(engine, "mod", role="moderator")
    sub = publish(client, mod)
    path, query, values = CURSOR_CASES[name]
    response = client.get(
        API + path.format(id=sub["id"]),
        query_string={**query, "cursor": encode_cursor(*values)},
        headers=mod.headers,
    )
    assert response.status_code in (200, 400), response.get_json()


NUL_CASES = {
    "publish title": ("post", "/subagents", "author", {"title": "Nul\x00"}),
    "fork fork_request": ("post", "/subagents/{id}/forks", "author", {"fork_request": "a\x00"}),
    "version changelog": ("post", "/subagents/{id}/versions", "author", {"changelog": "a\x00"}),
    "patch summary": ("patch", "/subagents/{id}", "author", {"summary": "a\x00"}),
    "fork-request text": ("post", "/subagents/{id}/fork-requests", "author", {"text": "ab\x00c"}),
    "report detail": ("post", "/subagents/{id}/report", "author", {"detail": "a\x00b"}),
    "install exposure_id": ("post", "/subagents/{id}/install", "author", {"exposure_id": "a\x00"}),
    "yank reason": ("post", "/subagents/{id}/yank", "author", {"reason": "abc\x00"}),
    "quarantine reason": ("post", "/subagents/{id}/quarantine", "moderator", {"reason": "ab\x00"}),
}
NUL_BASE = {
    "/subagents": lambda n: listing(bundle=bundle(f"nul-{n}")),
    "/subagents/{id}/forks": lambda n: {"title": "F", "bundle": bundle(f"nul-{n}")},
    "/subagents/{id}/versions": lambda n: {"bundle": bundle(f"nul-{n}")},
    "/subagents/{id}/report": lambda n: {"reason": "spam"},
}


@pytest.mark.parametrize("name", sorted(NUL_CASES))
def test_nul_in_text_is_4xx_not_500(request, app, client, engine, backend, name):
    app.config["PROPAGATE_EXCEPTIONS"] = False
    method, path, who, fields = NUL_CASES[name]
    users = {
        "author": make_user(engine, "alice"),
        "moderator": make_user(engine, "mod", role="moderator"),
    }
    sub = publish(client, users["author"])
    body = NUL_BASE.get(path, lambda n: {})(name) | fields
    response = getattr(client, method)(
        API + path.format(id=sub["id"]), json=body, headers=users[who].headers
    )
    assert response.status_code < 500, response.get_json()
