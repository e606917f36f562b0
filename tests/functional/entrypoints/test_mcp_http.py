"""MCP for remote coding agents: the official ``mcp`` client against a real gunicorn (two
workers, threads) serving ``/mcp``, and against ``sprig mcp`` on stdio.

Two people call at once, each with their own token: each acts as themselves (a fork they
publish is theirs) and sees only what they may see (a private sub-agent of one reaches the
other through no tool). A revoked token is refused on both transports. The tool listing shows
the API's constraints, and arguments outside them are refused naming the field.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import httpx2
import pytest
import requests
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from sqlmodel import Session

from market.catalog.models import CATEGORIES
from market.identity.tokens import revoke_token
from market.platform.state import app_state
from tests import gunicorn_server
from tests.conftest import make_app
from tests.factories import Actor, bundle, listing, make_user, publish, rank
from tests.functional.entrypoints.test_mcp_server import TOOLS

ROOT = Path(__file__).resolve().parents[3]
# JSON-RPC over HTTP as the client sends it: one message, either answer format accepted.
RPC_HEADERS = {"Accept": "application/json, text/event-stream"}


@dataclass
class Live:
    endpoint: str  # http://127.0.0.1:<port>/mcp
    database_url: str
    engine: object
    alice: Actor
    bob: Actor
    water: dict  # public, by alice
    secret: dict  # private, by alice


@pytest.fixture(scope="module")
def live(database_url, tmp_path_factory):
    """The world is made before gunicorn starts, so its workers' suggestion indexes hold it."""
    with make_app(database_url) as app:
        engine = app_state(app).engine
        client = app.test_client()
        alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
        water = publish(client, alice)
        secret = publish(
            client,
            alice,
            title="Secret Water Diary",
            summary="my private water diary",
            visibility="private",
        )
        settings = {
            "SPRIG_DATABASE_URL": database_url,
            "SPRIG_REDIS_URL": "",
            "SPRIG_SECRET_KEY": "mcp-http",
            "SPRIG_READ_CACHE_SECONDS": "0",
            "SPRIG_THREADS": "4",
        }
        log_path = tmp_path_factory.mktemp("mcp-http") / "gunicorn.log"
        served = gunicorn_server.start(settings, log_path, workers=2)
        try:
            yield Live(f"{served.base}/mcp", database_url, engine, alice, bob, water, secret)
        finally:
            gunicorn_server.stop(served)


def run_async(function):
    """asyncio.run in a thread of its own: the browser tests' session-wide Playwright keeps an
    event loop running in the main thread, and a second loop may not start there."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, function()).result()


@asynccontextmanager
async def over_http(
    live: Live, token: str | None, *, language: str | None = None, **client_options
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if language is not None:
        headers["Accept-Language"] = language
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(live.endpoint, http_client=http), **client_options) as client,
    ):
        yield client


@asynccontextmanager
async def over_stdio(live: Live, token: str | None) -> AsyncIterator[Client]:
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SPRIG_DATABASE_URL": live.database_url,
        "SPRIG_MCP_TOKEN": token or "",
    }
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "market.entrypoints.cli", "mcp"],
        env=environment,
        cwd=str(ROOT),
    )
    async with Client(parameters) as client:
        yield client


async def everything_about(connection, subagent_id: int) -> dict:
    """What each tool gives the caller of ``connection`` about one sub-agent: tool → result."""
    async with connection as client:
        return {
            "get_subagent": await client.call_tool("get_subagent", {"subagent_id": subagent_id}),
            "get_diff": await client.call_tool("get_diff", {"subagent_id": subagent_id}),
            "get_files": await client.call_tool("get_files", {"subagent_id": subagent_id}),
            "suggest_forks": await client.call_tool(
                "suggest_forks", {"request": "secret water diary", "k": 20}
            ),
        }


def assert_sees(results: dict, subagent: dict) -> None:
    assert not any(r.is_error for r in results.values()), results
    assert results["get_subagent"].structured_content["title"] == subagent["title"]
    assert results["get_diff"].structured_content["subagent_id"] == subagent["id"]
    files = results["get_files"].structured_content
    assert files["version_id"] == subagent["latest_version"]["id"]
    assert {f["path"] for f in files["files"]} == {"index.html", "app.js"}


def assert_does_not_see(results: dict, subagent: dict) -> None:
    for tool in ("get_subagent", "get_diff", "get_files"):
        assert results[tool].is_error, (tool, results[tool])
        assert f"No sub-agent {subagent['id']}" in results[tool].content[0].text
    suggested = results["suggest_forks"]
    assert not suggested.is_error
    assert subagent["id"] not in {i["subagent_id"] for i in suggested.structured_content["items"]}


def test_two_people_at_once_over_http_each_see_only_theirs(live):
    async def both():
        # One client negotiates the way current clients do (probing the newest protocol), the
        # other with the initialize handshake older clients use: the endpoint answers both.
        return await asyncio.gather(
            *(
                everything_about(over_http(live, person.token, mode=mode), live.secret["id"])
                for _round in range(3)
                for person, mode in ((live.alice, "auto"), (live.bob, "legacy"))
            )
        )

    results = run_async(both)
    for alices, bobs in zip(results[::2], results[1::2], strict=True):
        assert_sees(alices, live.secret)
        assert_does_not_see(bobs, live.secret)


def test_each_request_acts_as_its_token_owner(live):
    def fork_as(person: Actor, unit: str):
        new_bundle = bundle(unit)
        return over_http(live, person.token), {
            "parent_id": live.water["id"],
            "title": f"Water in {unit}",
            "fork_request": f"count in {unit}",
            "manifest": new_bundle["manifest"],
            "files": new_bundle["files"],
            "visibility": "private",
        }

    async def publish_both():
        async def publish_one(person, unit):
            connection, arguments = fork_as(person, unit)
            async with connection as client:
                return await client.call_tool("publish_fork", arguments)

        return await asyncio.gather(
            publish_one(live.alice, "ounces"), publish_one(live.bob, "litres")
        )

    by_alice, by_bob = run_async(publish_both)
    assert not by_alice.is_error and not by_bob.is_error, (by_alice, by_bob)
    alices_fork = by_alice.structured_content["subagent"]
    assert alices_fork["author"]["handle"] == "alice"
    assert by_bob.structured_content["subagent"]["author"]["handle"] == "bob"

    # Alice's private fork is out of Bob's reach.
    async def cross_reads():
        async with over_http(live, live.bob.token) as client:
            return await client.call_tool("get_files", {"subagent_id": alices_fork["id"]})

    assert run_async(cross_reads).is_error


def test_two_people_at_once_over_stdio_each_see_only_theirs(live):
    async def both():
        return await asyncio.gather(
            everything_about(over_stdio(live, live.alice.token), live.secret["id"]),
            everything_about(over_stdio(live, live.bob.token), live.secret["id"]),
        )

    alices, bobs = run_async(both)
    assert_sees(alices, live.secret)
    assert_does_not_see(bobs, live.secret)


def test_anonymous_callers_read_public_listings_only(live):
    async def anonymous():
        async with over_http(live, None) as client:
            return (
                await client.call_tool("get_files", {"subagent_id": live.water["id"]}),
                await client.call_tool("get_files", {"subagent_id": live.secret["id"]}),
                await client.call_tool("suggest_forks", {"request": "water"}),
            )

    public, private, suggested = run_async(anonymous)
    assert not public.is_error
    files = {f["path"]: f for f in public.structured_content["files"]}
    text = bundle(live.water["title"])["files"]["app.js"]
    assert files["app.js"] == {"path": "app.js", "size": len(text.encode()), "content": text}
    assert public.structured_content["manifest"]["entry"] == "index.html"
    assert private.is_error
    assert suggested.is_error and "needs a token" in suggested.content[0].text


def test_a_revoked_token_is_refused_on_both_transports(live):
    carol = make_user(live.engine, "carol")

    async def read_water(connection):
        async with connection as client:
            return await client.call_tool("get_subagent", {"subagent_id": live.water["id"]})

    assert not run_async(lambda: read_water(over_http(live, carol.token))).is_error
    with Session(live.engine) as session:
        assert revoke_token(session, carol.token)
        session.commit()

    answer = requests.post(
        live.endpoint,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**RPC_HEADERS, "Authorization": f"Bearer {carol.token}"},
        timeout=30,
    )
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == 'Bearer realm="sprig", error="invalid_token"'
    assert answer.json()["detail"] == "The token is unknown or revoked, or has expired."
    # The official client gives up on a 401 (it has no OAuth flow to try for this server).
    with pytest.raises(ExceptionGroup) as refused:
        run_async(lambda: read_water(over_http(live, carol.token)))
    assert refused.group_contains(MCPError, match="error response")

    on_stdio = run_async(lambda: read_water(over_stdio(live, carol.token)))
    assert on_stdio.is_error and "unknown or revoked" in on_stdio.content[0].text


def test_a_malformed_authorization_is_a_401_asking_for_a_bearer_token(live):
    answer = requests.post(
        live.endpoint,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**RPC_HEADERS, "Authorization": "Basic YWxpY2U6c2VjcmV0"},
        timeout=30,
    )
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == 'Bearer realm="sprig"'


def test_only_post_is_served(live):
    """No session to end (DELETE), no message of the server's own to stream (GET)."""
    for method in ("GET", "DELETE"):
        answer = requests.request(method, live.endpoint, headers=RPC_HEADERS, timeout=30)
        assert answer.status_code == 405
        assert "POST" in answer.headers["Allow"]


def test_the_endpoint_keeps_no_session(live):
    """Stateless: no session id to pin a client to one worker process, and a call needs no
    handshake made before it (on whichever worker that was)."""
    call = requests.post(
        live.endpoint,
        json={
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "get_files", "arguments": {"subagent_id": live.secret["id"]}},
        },
        headers={
            **RPC_HEADERS,
            "Authorization": f"Bearer {live.alice.token}",
            "MCP-Protocol-Version": "2025-06-18",
        },
        timeout=30,
    )
    assert call.status_code == 200, call.text
    assert call.json()["result"]["structuredContent"]["subagent_id"] == live.secret["id"]
    answer = requests.post(
        live.endpoint,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "1"},
            },
        },
        headers=RPC_HEADERS,
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"].startswith("application/json")
    assert "Mcp-Session-Id" not in answer.headers
    assert answer.json()["result"]["serverInfo"] == {
        "name": "sprig",
        "version": version("sprig-market"),
    }


def test_the_listing_shows_the_api_constraints_and_bad_arguments_are_refused(live):
    missing_entry = bundle("no entry")
    missing_entry["manifest"]["entry"] = "main.html"
    unknown_scope = bundle("flying")
    unknown_scope["manifest"]["scopes"] = ["hydration.fly"]

    def fork_with(manifest, files):
        return {
            "parent_id": live.water["id"],
            "title": "Broken",
            "fork_request": "break it",
            "manifest": manifest,
            "files": files,
        }

    async def session():
        async with over_http(live, live.alice.token) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            calls = [
                ("suggest_forks", {"request": "water", "k": 50}),
                ("suggest_forks", {"request": "water", "category": "gardening"}),
                ("get_files", {"subagent_id": 0}),
                ("publish_fork", fork_with(unknown_scope["manifest"], unknown_scope["files"])),
                ("publish_fork", fork_with(missing_entry["manifest"], missing_entry["files"])),
            ]
            return client.server_info, tools, [await client.call_tool(*c) for c in calls]

    server_info, tools, results = run_async(session)
    assert server_info.version == version("sprig-market")
    assert sorted(tools) == TOOLS
    suggest = tools["suggest_forks"].input_schema
    assert (suggest["properties"]["k"]["minimum"], suggest["properties"]["k"]["maximum"]) == (1, 20)
    assert suggest["$defs"]["Category"]["enum"] == list(CATEGORIES)
    publish_schema = tools["publish_fork"].input_schema
    manifest = publish_schema["$defs"]["ManifestIn"]
    assert manifest["additionalProperties"] is False
    assert "hydration.read" in manifest["properties"]["scopes"]["items"]["enum"]
    assert manifest["required"] == ["name", "entry"]

    bad_k, bad_category, bad_id, bad_scope, no_entry = results
    assert all(r.is_error for r in results)
    assert "\nk\n" in bad_k.content[0].text and "less than or equal to 20" in bad_k.content[0].text
    assert "\ncategory\n" in bad_category.content[0].text
    assert "\nsubagent_id\n" in bad_id.content[0].text
    assert "manifest.scopes.0" in bad_scope.content[0].text
    message = no_entry.content[0].text
    finding = "manifest.entry: entry 'main.html' is not one of the bundle's files"
    assert "Bundle rejected (422)" in message and message.count(finding) == 1


# ---- the reader's language -------------------------------------------------------------


@pytest.fixture(scope="module")
def branches(live) -> dict[str, int]:
    """A root with a better-loved Chinese fork (the ranking run's best descendant) and a loved
    English one, both better than the root beyond doubt: which the detail names is the
    reader's language's call."""
    base = live.endpoint.removesuffix("/mcp")
    root = requests.post(
        f"{base}/api/v1/subagents",
        json=listing(title="Sleep Diary", summary="Note how you slept."),
        headers=live.alice.headers,
        timeout=30,
    ).json()

    async def fork_in_both_languages():
        async with over_http(live, live.bob.token) as client:
            published = {}
            for language, title, summary in (
                ("zh", "睡眠日记（中文版）", "每天早上记录你睡得怎么样。"),
                (
                    "en",
                    "Sleep Diary with the weekly chart",
                    "Your sleep and the week in one chart.",
                ),
            ):
                new_bundle = bundle(language)
                answer = await client.call_tool(
                    "publish_fork",
                    {
                        "parent_id": root["id"],
                        "title": title,
                        "summary": summary,
                        "fork_request": f"in {language}",
                        "manifest": new_bundle["manifest"],
                        "files": new_bundle["files"],
                    },
                )
                assert not answer.is_error, answer
                published[language] = answer.structured_content["subagent"]["id"]
            return published

    forks = run_async(fork_in_both_languages)
    rank(
        live.engine,
        {root["id"]: 0.1, forks["zh"]: 1.6, forks["en"]: 1.3},
        best=forks["zh"],
        better_than={root["id"]: 0.99},
    )
    return {"root": root["id"], **forks}


def test_the_better_branch_follows_each_requests_accept_language(live, branches):
    async def best_for(language: str | None, token: str | None):
        async with over_http(live, token, language=language) as client:
            answer = await client.call_tool("get_subagent", {"subagent_id": branches["root"]})
            assert not answer.is_error, answer
            return answer.structured_content["best_descendant"]

    async def at_once():
        # Readers of both languages at once, on both workers: each request's own header counts.
        asked = [("zh-CN,zh;q=0.9,en;q=0.5", live.alice.token), ("en-US,en;q=0.9", None)] * 3
        return await asyncio.gather(*(best_for(language, token) for language, token in asked))

    for best in run_async(at_once)[0::2]:
        assert (best["id"], best["language"]) == (branches["zh"], "zh")
    for best in run_async(at_once)[1::2]:
        assert (best["id"], best["language"]) == (branches["en"], "en")

    async def fallbacks():
        return (
            # No branch in Japanese: the run's best, which says its language.
            await best_for("ja-JP", None),
            # No header, anonymous: nothing to prefer.
            await best_for(None, None),
            # "ja;q=0" refuses Japanese: the next one accepted decides.
            await best_for("ja;q=0, en;q=0.1", None),
        )

    japanese, nothing, refused = run_async(fallbacks)
    assert (japanese["id"], japanese["language"]) == (branches["zh"], "zh")
    assert nothing["id"] == branches["zh"]
    assert refused["id"] == branches["en"]

    # The API's answer for the same header is the same branch: one rule for both.
    base = live.endpoint.removesuffix("/mcp")
    for language, expected in (("zh-CN", branches["zh"]), ("en", branches["en"])):
        detail = requests.get(
            f"{base}/api/v1/subagents/{branches['root']}",
            headers={"Accept-Language": language},
            timeout=30,
        ).json()
        assert detail["best_descendant"]["id"] == expected


@pytest.mark.parametrize(
    "language",
    ["x" * 4000, ";;;,,,=q", "ja;q=abc, zh;q=1e999, *;q=nan", "tlh-Piqd, i-klingon;q=0.9", "*"],
)
def test_a_hostile_accept_language_only_falls_back(live, branches, language):
    async def read():
        async with over_http(live, live.bob.token, language=language) as client:
            return await client.call_tool("get_subagent", {"subagent_id": branches["root"]})

    answer = run_async(read)
    assert not answer.is_error, answer
    assert answer.structured_content["best_descendant"]["id"] in (branches["zh"], branches["en"])
