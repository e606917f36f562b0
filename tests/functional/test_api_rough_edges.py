"""The API as a first client meets it, on every backend: an install needs no body, a retried
fork that fulfilled a request finds that fork, problems say what is wrong in the client's
terms (never the validation library's), and export runs can be listed."""

from __future__ import annotations

import json

from market.entrypoints.mcp_server import build_server
from tests.factories import bundle, make_user, publish
from tests.functional.entrypoints.test_mcp_server import call_tools

API = "/api/v1"
PROBLEM = "application/problem+json"
AWS_KEY = "AKIA" + "Q3EXAMPLEKEY7ZZ9"  # the shape of an AWS access key ID


def problem(response, status: int) -> dict:
    assert response.status_code == status, response.get_json()
    assert response.headers["Content-Type"] == PROBLEM
    return response.get_json()


# ---- POST /subagents/{id}/install --------------------------------------------------------


def test_an_install_without_a_body_takes_every_default(client, engine):
    author, person = make_user(engine, "author"), make_user(engine, "person")
    water = publish(client, author)
    url = f"{API}/subagents/{water['id']}/install"
    first = client.post(url, headers=person.headers)
    assert first.status_code == 201, first.get_json()
    assert first.get_json()["version_id"] == water["latest_version"]["id"]
    assert first.get_json()["source"] == "browse"
    again = client.post(url, headers=person.headers)
    assert again.status_code == 200
    assert again.get_json()["id"] == first.get_json()["id"]


def test_the_document_says_an_install_body_may_be_left_out(client):
    paths = client.get(f"{API}/openapi.json").get_json()["paths"]
    assert (
        paths[f"{API}/subagents/{{subagent_id}}/install"]["post"]["requestBody"]["required"]
        is False
    )
    assert paths[f"{API}/subagents/{{subagent_id}}/fork-requests"]["post"]["requestBody"][
        "required"
    ]


def test_an_install_with_a_malformed_body_is_a_clear_400(client, engine):
    author, person = make_user(engine, "author"), make_user(engine, "person")
    water = publish(client, author)
    response = client.post(
        f"{API}/subagents/{water['id']}/install",
        data="{version_id: 1",
        headers={**person.headers, "Content-Type": "application/json"},
    )
    assert "not valid JSON" in problem(response, 400)["detail"]


def test_other_bodies_are_still_required(client, engine):
    author, person = make_user(engine, "author"), make_user(engine, "person")
    water = publish(client, author)
    response = client.post(f"{API}/subagents/{water['id']}/fork-requests", headers=person.headers)
    assert problem(response, 400)["detail"] == "A JSON body is required."


# ---- a retried fork that fulfils a fork request -------------------------------------------


def _queued_request(client, engine):
    author, asker = make_user(engine, "author"), make_user(engine, "asker")
    coder = make_user(engine, "coder", kind="service", scopes=["publish:on-behalf"])
    water = publish(client, author)
    asked = client.post(
        f"{API}/subagents/{water['id']}/fork-requests",
        json={"text": "in ounces please"},
        headers=asker.headers,
    )
    assert asked.status_code == 201, asked.get_json()
    return water, asked.get_json()["id"], coder


def test_a_retried_fork_that_fulfilled_a_request_returns_the_first_fork(client, engine):
    water, request_id, coder = _queued_request(client, engine)
    body = {
        "title": "Water in Ounces",
        "fork_request": "in ounces please",
        "bundle": bundle("ounces"),
        "fork_request_id": request_id,
        "on_behalf_of": "asker",
    }
    url = f"{API}/subagents/{water['id']}/forks"
    first = client.post(url, json=body, headers=coder.headers)
    assert first.status_code == 201, first.get_json()
    retry = client.post(url, json=body, headers=coder.headers)
    assert retry.status_code == 200, retry.get_json()
    assert retry.get_json()["id"] == first.get_json()["id"]
    assert client.get(f"{API}/subagents/{water['id']}").get_json()["fork_count"] == 1
    # Other bytes for the same request find it fulfilled: that is a conflict, as before.
    other = client.post(url, json={**body, "bundle": bundle("cups")}, headers=coder.headers)
    assert "already fulfilled" in problem(other, 409)["detail"]


def test_a_retried_publish_fork_over_mcp_returns_the_first_fork(client, engine):
    water, request_id, coder = _queued_request(client, engine)
    made = bundle("ounces")
    arguments = {
        "parent_id": water["id"],
        "title": "Water in Ounces",
        "fork_request": "in ounces please",
        "manifest": made["manifest"],
        "files": made["files"],
        "fork_request_id": request_id,
        "on_behalf_of": "asker",
    }
    first, retry = call_tools(
        build_server(engine, token=coder.token),
        ("publish_fork", arguments),
        ("publish_fork", arguments),
    )
    assert not first.is_error and not retry.is_error, retry.content
    assert first.structured_content["created"] is True
    assert retry.structured_content["created"] is False
    assert retry.structured_content["subagent"]["id"] == first.structured_content["subagent"]["id"]


# ---- problems in the client's terms --------------------------------------------------------


def test_a_service_rating_without_user_id_is_told_what_is_missing(client, engine):
    author = make_user(engine, "author")
    agent = make_user(engine, "agent", kind="service", scopes=["feedback:on-behalf"])
    water = publish(client, author)
    response = client.post(
        f"{API}/feedback",
        json={"version_id": water["latest_version"]["id"], "stars": 4},
        headers=agent.headers,
    )
    found = problem(response, 422)
    assert "user_id" in found["detail"]
    assert [e["location"] for e in found["errors"]] == ["json.user_id"]


def test_validation_problems_name_fields_not_library_internals(client, engine):
    author = make_user(engine, "author")
    water = publish(client, author)
    both = client.post(
        f"{API}/feedback",
        json={"version_id": water["latest_version"]["id"], "stars": 4, "thumbs": "up"},
        headers=author.headers,
    )
    found = problem(both, 422)
    text = json.dumps(found)
    assert "_schema" not in text and "Value error" not in text, text
    assert found["errors"] == [
        {"location": "json", "message": "give exactly one of `stars` or `thumbs`"}
    ]
    bad_field = client.post(
        f"{API}/feedback",
        json={"version_id": water["latest_version"]["id"], "stars": 9},
        headers=author.headers,
    )
    assert [e["location"] for e in problem(bad_field, 422)["errors"]] == ["json.stars"]


def test_a_secret_is_named_in_good_english(client, engine):
    author = make_user(engine, "author")
    leaky = bundle("keys")
    leaky["files"]["app.js"] += f'const key = "{AWS_KEY}";\n'
    response = client.post(
        f"{API}/subagents",
        json={
            "title": "Leaky",
            "category": "hydration",
            "bundle": leaky,
        },
        headers=author.headers,
    )
    messages = [e["message"] for e in problem(response, 422)["errors"]]
    assert any(m.startswith("contains an AWS access key ID (") for m in messages), messages


# ---- GET /exports -------------------------------------------------------------------------


def test_export_runs_are_listed_newest_first_and_paged(client, engine):
    trainer = make_user(engine, "trainer", kind="service", scopes=["exports"])
    other = make_user(engine, "other", kind="service", scopes=["events:write"])
    person = make_user(engine, "person")
    assert problem(client.get(f"{API}/exports"), 401)
    assert problem(client.get(f"{API}/exports", headers=other.headers), 403)
    assert problem(client.get(f"{API}/exports", headers=person.headers), 403)
    empty = client.get(f"{API}/exports", headers=trainer.headers).get_json()
    assert empty == {"items": [], "next_cursor": None}
    made = []
    for _ in range(3):
        started = client.post(f"{API}/exports", json={}, headers=trainer.headers)
        assert started.status_code == 202, started.get_json()
        made.append(started.get_json()["id"])
    first = client.get(f"{API}/exports?limit=2", headers=trainer.headers).get_json()
    assert [run["id"] for run in first["items"]] == made[::-1][:2]
    single = client.get(f"{API}/exports/{made[-1]}", headers=trainer.headers).get_json()
    assert first["items"][0] == single
    rest = client.get(
        f"{API}/exports?limit=2&cursor={first['next_cursor']}", headers=trainer.headers
    ).get_json()
    assert [run["id"] for run in rest["items"]] == [made[0]]
    assert rest["next_cursor"] is None
    assert problem(client.get(f"{API}/exports?cursor=nope", headers=trainer.headers), 400)
    assert problem(client.get(f"{API}/exports?limit=0", headers=trainer.headers), 422)


def test_the_export_list_is_in_the_openapi_document(client):
    spec = client.get(f"{API}/openapi.json").get_json()
    operation = spec["paths"][f"{API}/exports"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {"limit", "cursor"}
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["$ref"].endswith("/ExportRunList")
