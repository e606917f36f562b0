"""Upstream updates through the MCP SDK's own client: the fork's author lists, reads and
accepts a proposed merge; the coding agent resolves a conflicted one from its queue; nobody
else reads or decides one."""

from __future__ import annotations

import pytest

from market.entrypoints.mcp_server import build_server
from tests.factories import make_user
from tests.functional.catalog.test_upstream import (
    API,
    APP_JS,
    FORK_JS,
    PARENT_V2_JS,
    SCOPES,
    offered_fork,
    tracker,
)
from tests.functional.entrypoints.test_mcp_server import call_tools


@pytest.fixture
def family(client, alice, bob):
    def make(fork_js: str, parent_js: str, parent_scopes=SCOPES) -> tuple[dict, dict]:
        return offered_fork(client, alice, bob, fork_js, parent_js, parent_scopes)

    return make


def test_the_author_lists_reads_and_accepts_and_a_stranger_cannot(client, engine, bob, family):
    _parent, fork = family(FORK_JS, PARENT_V2_JS, [*SCOPES, "sleep.read"])
    dana = make_user(engine, "dana")
    grandchild = client.post(
        f"{API}/subagents/{fork['id']}/forks",
        json={"title": "Grandchild", "fork_request": "hers", "bundle": tracker(FORK_JS + "// d\n")},
        headers=dana.headers,
    )
    assert grandchild.status_code == 201, grandchild.get_json()
    grandchild = grandchild.get_json()
    (listed,) = call_tools(
        build_server(engine, token=bob.token),
        ("list_upstream_updates", {"subagent_id": fork["id"]}),
    )
    assert not listed.is_error
    assert listed.structured_content["open_count"] == 1
    (proposal,) = listed.structured_content["items"]
    assert proposal["added_scopes"] == ["sleep.read"]

    carol = make_user(engine, "carol")
    read, accept, declined = call_tools(
        build_server(engine, token=carol.token),
        ("get_upstream_update", {"proposal_id": proposal["id"]}),
        ("accept_upstream_update", {"proposal_id": proposal["id"]}),
        ("decline_upstream_update", {"proposal_id": proposal["id"]}),
    )
    for result in (read, accept, declined):
        assert result.is_error
        assert "Not found (404)" in result.content[0].text

    detail, accepted, again = call_tools(
        build_server(engine, token=bob.token),
        ("get_upstream_update", {"proposal_id": proposal["id"]}),
        ("accept_upstream_update", {"proposal_id": proposal["id"]}),
        ("list_upstream_updates", {"subagent_id": fork["id"], "status": "open"}),
    )
    assert {f["path"]: f["status"] for f in detail.structured_content["files"]} == {
        "app.js": "merged-clean",
        "index.html": "unchanged",
    }
    assert detail.structured_content["diff"]["manifest"]["scopes_added"] == ["sleep.read"]
    assert not accepted.is_error
    assert accepted.structured_content["version"]["changelog"] == "merged from Water Tracker v2"
    assert again.structured_content["items"] == []
    # The version the accept made is offered to the fork's own forks (on stdio as on the web).
    (offered,) = call_tools(
        build_server(engine, token=dana.token),
        ("list_upstream_updates", {"subagent_id": grandchild["id"]}),
    )
    assert [p["upstream_version"] for p in offered.structured_content["items"]] == [2]


def test_the_coding_agent_resolves_a_conflict_from_its_queue(client, engine, bob, family):
    family(APP_JS.replace("3000", "2500"), APP_JS.replace("3000", "3500"))
    coder = make_user(engine, "coder", kind="service", scopes=["publish:on-behalf"])
    server = build_server(engine, token=coder.token)
    (queue,) = call_tools(server, ("list_upstream_conflicts", {}))
    (proposal,) = queue.structured_content["items"]
    (refused,) = call_tools(
        build_server(engine, token=bob.token),
        ("accept_upstream_update", {"proposal_id": proposal["id"]}),
    )
    assert refused.is_error and "Conflict (409)" in refused.content[0].text

    resolved = tracker(APP_JS.replace("3000", "2500"))
    resolved["files"]["app.js"] += "// also tracks the upstream goal of 3500\n"
    published, after = call_tools(
        server,
        (
            "resolve_upstream_update",
            {
                "proposal_id": proposal["id"],
                "manifest": resolved["manifest"],
                "files": resolved["files"],
                "changelog": "merged the parent's new goal",
                "on_behalf_of": "bob",
            },
        ),
        ("list_upstream_conflicts", {}),
    )
    assert not published.is_error, published.content[0].text
    assert published.structured_content["number"] == 2
    assert after.structured_content["items"] == []
    status = client.get(f"{API}/upstream-updates/{proposal['id']}", headers=bob.headers).get_json()
    assert (status["status"], status["merged_version_id"]) == (
        "accepted",
        published.structured_content["id"],
    )
