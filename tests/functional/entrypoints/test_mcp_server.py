"""``sprig mcp``: every tool called through the MCP SDK's own client, in process and on stdio."""

from __future__ import annotations

import concurrent.futures
import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from market.catalog import services as catalog_services
from market.entrypoints.mcp_server import build_server
from tests.factories import bundle, make_user, publish

ROOT = Path(__file__).resolve().parents[3]
# Every tool, as both transports list them.
TOOLS = [
    "accept_upstream_update",
    "adopt_parent",
    "decline_near_copies",
    "decline_upstream_update",
    "get_diff",
    "get_files",
    "get_subagent",
    "get_upstream_update",
    "list_upstream_conflicts",
    "list_upstream_updates",
    "publish_fork",
    "publish_subagent",
    "resolve_upstream_update",
    "suggest_forks",
    "switch_plan",
]


def run_async(function):
    """anyio.run in a thread of its own: the browser tests' session-wide Playwright keeps an
    event loop running in the main thread, and a second loop may not start there."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, function).result()


def call_tools(server, *calls):
    """Run (tool, arguments) calls in one client session; their results, in order."""

    async def session():
        async with Client(server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return run_async(session)


def test_tools_are_listed(engine):
    async def names():
        async with Client(build_server(engine, token=None)) as client:
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    assert run_async(names) == TOOLS


def test_suggest_read_diff_and_publish_a_fork(client, engine):
    creator = make_user(engine, "creator")
    coder = make_user(engine, "coder", kind="service", scopes=["suggest", "publish:on-behalf"])
    water = publish(client, creator)
    server = build_server(engine, token=coder.token)
    new_bundle = bundle("ounces", scopes=["hydration.read", "hydration.write", "health.read"])
    suggested, detail, published = call_tools(
        server,
        ("suggest_forks", {"request": "track how much water I drink, in ounces", "k": 3}),
        ("get_subagent", {"subagent_id": water["id"]}),
        (
            "publish_fork",
            {
                "parent_id": water["id"],
                "title": "Water Tracker in Ounces",
                "fork_request": "use ounces please",
                "manifest": new_bundle["manifest"],
                "files": new_bundle["files"],
                "on_behalf_of": "creator",
            },
        ),
    )
    assert not suggested.is_error
    [item] = suggested.structured_content["items"]
    assert item["subagent_id"] == water["id"]
    assert "water" in item["why"]["terms"]
    assert detail.structured_content["title"] == "Water Tracker"
    assert detail.structured_content["latest_version"]["manifest"]["scopes"] == [
        "hydration.read",
        "hydration.write",
    ]
    assert not published.is_error, published.content
    fork_id = published.structured_content["subagent"]["id"]
    assert published.structured_content["created"] is True
    assert published.structured_content["subagent"]["parent_id"] == water["id"]
    assert published.structured_content["subagent"]["author"]["handle"] == "creator"
    # The same fork as the HTTP API sees it, and suggested at once by the same server.
    assert client.get(f"/api/v1/subagents/{fork_id}").get_json()["fork_request"] == (
        "use ounces please"
    )
    diff, again = call_tools(
        server,
        ("get_diff", {"subagent_id": fork_id}),
        ("suggest_forks", {"request": "water tracker in ounces", "k": 3}),
    )
    assert diff.structured_content["manifest"]["scopes_added"] == ["health.read"]
    assert {f["path"] for f in diff.structured_content["files"]} == {"index.html", "app.js"}
    assert diff.structured_content["base_version_id"] == water["latest_version"]["id"]
    assert again.structured_content["items"][0]["subagent_id"] == fork_id


def test_errors_are_tool_errors_and_change_nothing(client, engine):
    creator = make_user(engine, "creator")
    water = publish(client, creator)
    secret = publish(client, creator, title="Secret", visibility="private")
    anonymous = build_server(engine, token=None)
    person = build_server(engine, token=creator.token)
    stranger = build_server(engine, token=make_user(engine, "stranger").token)
    revoked = build_server(engine, token="sprig_not-a-real-token")
    bad_bundle = bundle("x")
    bad_bundle["manifest"]["scopes"] = ["hydration.fly"]
    results = call_tools(
        anonymous,
        ("suggest_forks", {"request": "water"}),
        ("get_subagent", {"subagent_id": secret["id"]}),
        ("get_subagent", {"subagent_id": water["id"]}),
    )
    assert [r.is_error for r in results] == [True, True, False]
    assert "needs a token" in results[0].content[0].text
    assert "No sub-agent" in results[1].content[0].text
    [bad_k, bad_manifest, no_parent] = call_tools(
        person,
        ("suggest_forks", {"request": "water", "k": 50}),
        (
            "publish_fork",
            {
                "parent_id": water["id"],
                "title": "Broken",
                "fork_request": "fly",
                "manifest": bad_bundle["manifest"],
                "files": bad_bundle["files"],
            },
        ),
        (
            "publish_fork",
            {
                "parent_id": 999_999,
                "title": "Orphan",
                "fork_request": "x",
                "manifest": bundle()["manifest"],
                "files": bundle()["files"],
            },
        ),
    )
    assert bad_k.is_error and "k" in bad_k.content[0].text
    assert bad_manifest.is_error and "hydration.fly" in bad_manifest.content[0].text
    assert no_parent.is_error and "No sub-agent 999999" in no_parent.content[0].text
    [private_diff] = call_tools(stranger, ("get_diff", {"subagent_id": secret["id"]}))
    assert private_diff.is_error
    [unknown] = call_tools(revoked, ("get_subagent", {"subagent_id": water["id"]}))
    assert unknown.is_error and "unknown or revoked" in unknown.content[0].text
    forks = client.get(f"/api/v1/subagents/{water['id']}/forks").get_json()["items"]
    assert forks == []


def test_a_fork_past_the_deepest_lineage_is_a_tool_error_that_says_why(client, engine, monkeypatch):
    """A coding agent forking the deepest fork of a lineage is told why, and how to go on;
    nothing is stored."""
    monkeypatch.setattr(catalog_services, "MAX_FORK_DEPTH", 1)
    creator = make_user(engine, "creator")
    water = publish(client, creator)
    server = build_server(engine, token=creator.token)
    new_bundle = bundle("deeper")

    def publish_fork(parent_id, title):
        return (
            "publish_fork",
            {
                "parent_id": parent_id,
                "title": title,
                "fork_request": "one more change",
                "manifest": new_bundle["manifest"],
                "files": new_bundle["files"],
            },
        )

    [first] = call_tools(server, publish_fork(water["id"], "First fork"))
    assert not first.is_error, first.content
    first_id = first.structured_content["subagent"]["id"]
    [deeper] = call_tools(server, publish_fork(first_id, "Too deep"))
    assert deeper.is_error
    assert "1 forks deep" in deeper.content[0].text
    assert "fork an earlier ancestor" in deeper.content[0].text
    assert client.get(f"/api/v1/subagents/{first_id}/forks").get_json()["items"] == []


def test_sprig_mcp_on_stdio(client, engine, database_url):
    coder = make_user(engine, "coder", kind="service", scopes=["suggest"])
    water = publish(client, make_user(engine, "creator"))
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SPRIG_DATABASE_URL": database_url,
        "SPRIG_MCP_TOKEN": coder.token,
    }
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "market.entrypoints.cli", "mcp"],
        env=environment,
        cwd=str(ROOT),
    )
    [result] = call_tools(parameters, ("suggest_forks", {"request": "water tracker"}))
    assert not result.is_error, result.content
    assert result.structured_content["items"][0]["subagent_id"] == water["id"]
