"""Who may see what, where an adversarial probe found it leaking: a creator's
figures, fork requests fulfilled by strangers, preview links, yanked files, listing text a
fork inherits, services publishing for moderators, and creator handles answered 403 vs 404.

Every answer here comes from ``market.identity.access``; these tests hold it to one rule per
question.
"""

from __future__ import annotations

import csv
import io
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from market.catalog.models import ForkRequest, SubAgent, Version
from market.entrypoints.mcp_server import build_server
from market.platform.db import session_scope
from tests.factories import FRAMED, bundle, fork, listing, make_user, publish
from tests.functional.entrypoints import test_mcp_server as mcp

API = "/api/v1"


@pytest.fixture
def people(engine):
    return {
        "alice": make_user(engine, "alice"),
        "bob": make_user(engine, "bob"),
        "dave": make_user(engine, "dave"),
        "mod": make_user(engine, "mod", role="moderator"),
        "coder": make_user(
            engine, "coder", kind="service", scopes=["publish:on-behalf", "events:write"]
        ),
    }


def count(engine, model) -> int:
    with session_scope(engine) as session:
        return session.execute(select(func.count()).select_from(model)).scalar_one()


def preview_src(client, subagent_id: int, headers=None) -> str | None:
    page = client.get(f"/s/{subagent_id}", headers=headers or {})
    assert page.status_code == 200
    match = re.search(r'<iframe src="([^"]+)"', page.get_data(as_text=True))
    return match.group(1) if match else None


def open_event(subagent: dict, user) -> dict:
    return {
        "event_id": str(uuid.uuid4()),
        "user_id": user.id,
        "subagent_id": subagent["id"],
        "version_id": subagent["latest_version"]["id"],
        "kind": "open",
        "occurred_at": (datetime.now(UTC) - timedelta(minutes=5)).isoformat(),
    }


# ---- moderators do not see private sub-agents in a creator's figures ------------------


def test_moderator_reads_a_creators_figures_without_their_private_subagents(client, people):
    alice, bob, mod, coder = people["alice"], people["bob"], people["mod"], people["coder"]
    shown = publish(client, alice, title="Water Tracker")
    secret = publish(client, alice, title="Secret Diary", visibility="private")
    events = [open_event(shown, bob)] + [open_event(secret, alice) for _ in range(3)]
    sent = client.post(f"{API}/events", json={"events": events}, headers=coder.headers)
    assert sent.get_json()["stored"] == 4
    # The premise: to the moderator the private one does not exist.
    assert client.get(f"{API}/subagents/{secret['id']}", headers=mod.headers).status_code == 404

    mine = client.get(f"{API}/creators/alice/stats", headers=alice.headers).get_json()
    assert {s["id"] for s in mine["subagents"]} == {shown["id"], secret["id"]}
    assert mine["totals"]["opens"] == 4

    theirs = client.get(f"{API}/creators/alice/stats", headers=mod.headers)
    assert theirs.status_code == 200
    body = theirs.get_json()
    assert {s["id"] for s in body["subagents"]} == {shown["id"]}
    assert body["totals"]["opens"] == 1  # the private one's figures are not in the sums
    assert "Secret Diary" not in theirs.get_data(as_text=True)

    page = client.get("/creators/alice", headers=mod.headers)
    assert page.status_code == 200
    assert "Secret Diary" not in page.get_data(as_text=True)
    assert f"/s/{secret['id']}" not in page.get_data(as_text=True)
    assert "Water Tracker" in page.get_data(as_text=True)

    rows = list(
        csv.DictReader(
            io.StringIO(
                client.get("/creators/alice/stats.csv", headers=mod.headers).get_data(as_text=True)
            )
        )
    )
    assert {int(r["subagent_id"]) for r in rows} == {shown["id"]}
    own_rows = csv.DictReader(
        io.StringIO(
            client.get("/creators/alice/stats.csv", headers=alice.headers).get_data(as_text=True)
        )
    )
    assert {int(r["subagent_id"]) for r in own_rows} == {shown["id"], secret["id"]}


# ---- creator handles are not enumerable ------------------------------------------------


def test_someone_elses_creator_figures_answer_like_an_unknown_handle(client, people):
    publish(client, people["alice"])
    bob, coder = people["bob"], people["coder"]
    for headers in (bob.headers, coder.headers):
        known = client.get(f"{API}/creators/alice/stats", headers=headers)
        unknown = client.get(f"{API}/creators/nobody/stats", headers=headers)
        assert known.status_code == unknown.status_code == 404
        assert known.mimetype == unknown.mimetype == "application/problem+json"
        assert {**known.get_json(), "detail": ""} == {**unknown.get_json(), "detail": ""}
        for path in ("/creators/{}", "/creators/{}/stats.csv"):
            page_known = client.get(path.format("alice"), headers=headers)
            page_unknown = client.get(path.format("nobody"), headers=headers)
            assert page_known.status_code == page_unknown.status_code == 404
    # A service account is no creator, on the API as on the dashboard, even to itself.
    assert client.get(f"{API}/creators/coder/stats", headers=coder.headers).status_code == 404
    assert client.get("/creators/coder", headers=coder.headers).status_code == 404


# ---- only the coding agent, for the asker, fulfils a fork request ----------------------


def _ask(client, asker, subagent_id: int) -> int:
    asked = client.post(
        f"{API}/subagents/{subagent_id}/fork-requests",
        json={"text": "make it for a family of four"},
        headers=asker.headers,
    )
    assert asked.status_code == 201
    return asked.get_json()["id"]


def _request_row(engine, request_id: int) -> ForkRequest:
    with session_scope(engine) as session:
        row = session.get(ForkRequest, request_id)
        session.expunge(row)
        return row


def _fork_body(note: str, **extra) -> dict:
    return {"title": "Mine", "fork_request": "mine", "bundle": bundle(note)} | extra


def test_nobody_but_the_coding_agent_for_the_asker_fulfils_a_fork_request(client, engine, people):
    alice, bob, dave, coder = people["alice"], people["bob"], people["dave"], people["coder"]
    root = publish(client, alice)
    request_id = _ask(client, dave, root["id"])
    url = f"{API}/subagents/{root['id']}/forks"
    before = count(engine, SubAgent)

    # A person closing someone else's request with a private fork the asker cannot see.
    hijack = _fork_body("hijack", fork_request_id=request_id, visibility="private")
    refused = client.post(url, json=hijack, headers=bob.headers)
    assert refused.status_code == 403 and refused.mimetype == "application/problem+json"
    # Nor their own request: only the coding agent fulfils.
    own_request = _ask(client, bob, root["id"])
    own = client.post(url, json=_fork_body("own", fork_request_id=own_request), headers=bob.headers)
    assert own.status_code == 403
    # The coding agent publishing for someone other than the asker.
    for_bob = _fork_body("for-bob", fork_request_id=request_id, on_behalf_of="bob")
    assert client.post(url, json=for_bob, headers=coder.headers).status_code == 403
    assert count(engine, SubAgent) == before
    assert _request_row(engine, request_id).status == "open"

    # The coding agent for dave: fulfilled, by a fork dave can see even when private.
    for_dave = _fork_body("for-the-asker", fork_request_id=request_id, on_behalf_of="dave")
    made = client.post(url, json=for_dave | {"visibility": "private"}, headers=coder.headers)
    assert made.status_code == 201, made.get_json()
    row = _request_row(engine, request_id)
    assert row.status == "fulfilled" and row.fulfilled_by_id == made.get_json()["id"]
    assert (
        client.get(f"{API}/subagents/{row.fulfilled_by_id}", headers=dave.headers).status_code
        == 200
    )


def test_mcp_publish_fork_cannot_fulfil_someone_elses_request(client, engine, people):
    root = publish(client, people["alice"])
    request_id = _ask(client, people["dave"], root["id"])
    new = bundle("mcp-hijack")
    [result] = mcp.call_tools(
        build_server(engine, token=people["bob"].token),
        (
            "publish_fork",
            {
                "parent_id": root["id"],
                "title": "Mine",
                "fork_request": "mine",
                "manifest": new["manifest"],
                "files": new["files"],
                "fork_request_id": request_id,
                "visibility": "private",
            },
        ),
    )
    assert result.is_error and "(403)" in result.content[0].text
    assert _request_row(engine, request_id).status == "open"


# ---- a service never publishes on behalf of a moderator ------------------------------


def test_a_service_cannot_publish_on_behalf_of_a_moderator(client, engine, people):
    coder = people["coder"]
    root = publish(client, people["alice"])
    before = (count(engine, SubAgent), count(engine, Version))
    attempts = [
        client.post(f"{API}/subagents", json=listing(on_behalf_of="mod"), headers=coder.headers),
        client.post(
            f"{API}/subagents/{root['id']}/forks",
            json=_fork_body("as-mod", on_behalf_of="mod"),
            headers=coder.headers,
        ),
        client.post(
            f"{API}/subagents/{root['id']}/versions",
            json={"bundle": bundle("as-mod-v2"), "on_behalf_of": "mod"},
            headers=coder.headers,
        ),
    ]
    for response in attempts:
        assert response.status_code == 422, response.get_json()
        problem = response.get_json()
        assert problem["errors"][0]["location"] == "on_behalf_of"
        assert "moderators" in problem["detail"]
    assert (count(engine, SubAgent), count(engine, Version)) == before


# ---- a fork does not carry a hidden parent's listing text into public lists ----------


@pytest.mark.parametrize("parent_visibility", ["private", "unlisted"])
def test_a_public_fork_does_not_inherit_a_hidden_parents_summary_and_tags(
    client, people, parent_visibility
):
    alice = people["alice"]
    parent = publish(
        client,
        alice,
        title="Diary",
        summary="Tracks my chemotherapy appointments.",
        tags=["oncology"],
        visibility=parent_visibility,
    )
    child = fork(client, alice, parent["id"], "public-child", visibility="public")
    assert child["summary"] == "" and child["tags"] == []
    listed = client.get(f"{API}/subagents", query_string={"tag": "oncology"}).get_json()
    assert listed["items"] == []
    searched = client.get(f"{API}/subagents", query_string={"q": "chemotherapy"}).get_json()
    assert searched["items"] == []


def test_a_fork_of_a_public_parent_still_inherits_its_listing(client, people):
    parent = publish(client, people["alice"], summary="Log every glass.", tags=["water"])
    child = fork(client, people["bob"], parent["id"], "inherits")
    assert child["summary"] == "Log every glass." and child["tags"] == ["water"]


# ---- a detail and a subtree never name a parent or root the reader may not see ------------


@pytest.mark.parametrize("hiding", ["private", "quarantine"])
def test_a_detail_and_a_subtree_name_a_hidden_parent_or_root_only_to_those_who_see_it(
    client, engine, people, hiding
):
    """R <- F <- G, then R is hidden. F's detail (API and MCP) and its subtree, and G's
    detail, still answer everyone, but name R only to those who may open it: the id alone
    would tell a stranger that something hidden is there."""
    alice, bob, mod = people["alice"], people["bob"], people["mod"]
    root = publish(client, alice, title="Root of it all")
    middle = fork(client, bob, root["id"], "middle")
    leaf = fork(client, bob, middle["id"], "leaf")
    url = f"{API}/subagents/{root['id']}"
    if hiding == "private":
        hidden = client.patch(url, json={"visibility": "private"}, headers=alice.headers)
    else:
        hidden = client.post(f"{url}/quarantine", json={"reason": "bad"}, headers=mod.headers)
    assert hidden.status_code == 200
    sees_root = {"alice": True, "bob": False, "anonymous": False, "mod": hiding == "quarantine"}

    for name, sees in sees_root.items():
        who = people.get(name)
        headers = who.headers if who else {}
        named = root["id"] if sees else None
        detail = client.get(f"{API}/subagents/{middle['id']}", headers=headers).get_json()
        assert (detail["parent_id"], detail["root_id"]) == (named, named), name
        if not sees:
            assert detail["parent_version_id"] is None
        [tool] = mcp.call_tools(
            build_server(engine, token=who.token if who else None),
            ("get_subagent", {"subagent_id": middle["id"]}),
        )
        assert not tool.is_error, name
        answered = tool.structured_content
        assert (answered["parent_id"], answered["root_id"]) == (named, named), name
        tree = client.get(f"{API}/subagents/{middle['id']}/tree", headers=headers).get_json()
        assert tree["nodes"][0]["parent_id"] == named, name
        assert [node["id"] for node in tree["nodes"]] == [middle["id"], leaf["id"]]
        below = client.get(f"{API}/subagents/{leaf['id']}", headers=headers).get_json()
        assert (below["parent_id"], below["root_id"]) == (middle["id"], named), name


# ---- a write's answer is what it made, shown as its caller may see it -------------------


@pytest.mark.parametrize("through", ["api", "mcp"])
def test_a_service_writing_for_a_person_is_answered_with_what_it_made(
    client, engine, people, through
):
    """A coding agent publishing and forking privately for dave may not open the results
    afterwards (they are dave's), yet each write answers with the sub-agent it made, not a 404
    after succeeding. The answer still names only what the service may see: when the fork's
    root has since turned private, the same fork sent again is answered without naming it."""
    alice, dave, coder = people["alice"], people["dave"], people["coder"]
    public_root = publish(client, alice, title="Water Tracker")
    branch = fork(client, alice, public_root["id"], "a public branch")
    root_bundle, fork_bundle = bundle("on-behalf-root"), bundle("on-behalf-fork")

    def write(parent: dict | None, made_bundle: dict, *, status: int) -> dict:
        if through == "api":
            body = {"on_behalf_of": "dave", "visibility": "private", "bundle": made_bundle}
            if parent is None:
                url, body = f"{API}/subagents", listing("Made For Them") | body
            else:
                url, body = f"{API}/subagents/{parent['id']}/forks", _fork_body("for them") | body
            response = client.post(url, json=body, headers=coder.headers)
            assert response.status_code == status, response.get_json()
            return response.get_json()
        arguments = {
            "title": "Made For Them",
            "manifest": made_bundle["manifest"],
            "files": made_bundle["files"],
            "visibility": "private",
            "on_behalf_of": "dave",
        }
        if parent is None:
            tool = ("publish_subagent", arguments | {"category": "hydration"})
        else:
            tool = ("publish_fork", arguments | {"parent_id": parent["id"], "fork_request": "x"})
        [result] = mcp.call_tools(build_server(engine, token=coder.token), tool)
        assert not result.is_error, result.content
        assert result.structured_content["created"] is (status == 201)
        return result.structured_content["subagent"]

    root = write(None, root_bundle, status=201)
    made_fork = write(branch, fork_bundle, status=201)
    for answer in (root, made_fork):
        assert answer["visibility"] == "private" and answer["author"]["handle"] == "dave"
        assert answer["latest_version"]["number"] == 1
        url = f"{API}/subagents/{answer['id']}"
        assert client.get(url, headers=coder.headers).status_code == 404
        assert client.get(url, headers=dave.headers).get_json()["id"] == answer["id"]
    assert root["parent_id"] is None
    assert (made_fork["parent_id"], made_fork["root_id"]) == (branch["id"], public_root["id"])

    hidden = client.patch(
        f"{API}/subagents/{public_root['id']}",
        json={"visibility": "private"},
        headers=alice.headers,
    )
    assert hidden.status_code == 200
    again = write(branch, fork_bundle, status=200)
    assert again["id"] == made_fork["id"]
    assert (again["parent_id"], again["root_id"]) == (branch["id"], None)


# ---- preview links follow the sub-agent's current state ---------------------------------


@pytest.mark.parametrize("change", ["private", "yank", "quarantine", "yank-version"])
def test_a_preview_link_stops_working_when_the_subagent_may_no_longer_be_read(
    client, people, change
):
    alice, bob, mod = people["alice"], people["bob"], people["mod"]
    shown = publish(client, alice)
    url = f"{API}/subagents/{shown['id']}"
    links = {
        name: preview_src(client, shown["id"], who.headers)
        for name, who in (("alice", alice), ("bob", bob), ("mod", mod))
    }
    links["anonymous"] = preview_src(client, shown["id"])
    for link in links.values():
        assert client.get(link, headers=FRAMED).status_code == 200
    if change == "private":
        response = client.patch(url, json={"visibility": "private"}, headers=alice.headers)
    elif change == "yank":
        response = client.post(f"{url}/yank", json={"reason": "broken"}, headers=alice.headers)
    elif change == "yank-version":
        version = shown["latest_version"]["id"]
        body = {"reason": "broken", "version_id": version}
        response = client.post(f"{url}/yank", json=body, headers=alice.headers)
    else:
        response = client.post(f"{url}/quarantine", json={"reason": "bad"}, headers=mod.headers)
    assert response.status_code == 200
    readers = {"alice"} if change == "private" else {"alice", "mod"}
    for name, link in links.items():
        expected = 200 if name in readers else 404
        assert client.get(link, headers=FRAMED).status_code == expected, name
    # The page offers no new link to those who may not read the files.
    if change in ("yank", "yank-version"):
        assert preview_src(client, shown["id"]) is None


# ---- a yanked version's files: one rule for bundle, zip, diff, page, preview, MCP --------


def test_a_yanked_versions_files_are_read_only_by_author_moderators_and_installers(
    client, engine, people
):
    alice, bob, dave, mod = people["alice"], people["bob"], people["dave"], people["mod"]
    root = publish(client, alice, bundle=bundle("one"))
    url = f"{API}/subagents/{root['id']}"
    two = client.post(
        f"{url}/versions", json={"bundle": bundle("two-secret")}, headers=alice.headers
    )
    v2 = two.get_json()["id"]
    assert client.post(f"{url}/install", json={}, headers=dave.headers).status_code == 201
    child = fork(client, bob, root["id"], "child", parent_version_id=v2)
    yank = client.post(
        f"{url}/yank", json={"reason": "leaked a key", "version_id": v2}, headers=alice.headers
    )
    assert yank.status_code == 200
    three = client.post(f"{url}/versions", json={"bundle": bundle("three")}, headers=alice.headers)
    v3 = three.get_json()["id"]

    def answers(actor):
        headers = actor.headers if actor else {}
        token = actor.token if actor else None
        [tool] = mcp.call_tools(
            build_server(engine, token=token),
            ("get_diff", {"subagent_id": root["id"], "version_id": v2}),
        )
        return {
            "bundle": client.get(f"{url}/versions/{v2}/bundle", headers=headers).status_code,
            "zip": client.get(
                f"{url}/versions/{v2}/bundle?format=zip", headers=headers
            ).status_code,
            "diff": client.get(f"{url}/diff?version_id={v2}", headers=headers).status_code,
            "mcp": 404 if tool.is_error and "(404)" in tool.content[0].text else 200,
        }

    refused = dict.fromkeys(("bundle", "zip", "diff", "mcp"), 404)
    served = dict.fromkeys(("bundle", "zip", "diff", "mcp"), 200)
    assert answers(None) == refused
    assert answers(bob) == refused
    assert answers(alice) == served
    assert answers(mod) == served
    assert answers(dave) == served  # installed v2 before the yank

    # The other side of a diff: v3 against the yanked v2, and bob's fork against its parent
    # version v2, compare with nothing rather than show v2's files.
    for diff_url in (
        f"{url}/diff?version_id={v3}&against=previous",
        f"{API}/subagents/{child['id']}/diff",
    ):
        for actor, reads in ((bob, False), (None, False), (alice, True), (dave, True)):
            body = client.get(diff_url, headers=actor.headers if actor else {}).get_json()
            assert (body["base_version_id"] == v2) == reads, (diff_url, actor)
            removed = "two-secret" in str(body["files"])
            assert removed == reads, (diff_url, actor)
    page = client.get(f"/s/{child['id']}/diff", headers=bob.headers)
    assert page.status_code == 200 and "two-secret" not in page.get_data(as_text=True)
    [tool] = mcp.call_tools(
        build_server(engine, token=bob.token), ("get_diff", {"subagent_id": child["id"]})
    )
    assert not tool.is_error and tool.structured_content["base_version_id"] is None


def test_a_yanked_latest_version_has_no_diff_page_or_preview_for_others(client, people):
    alice, bob = people["alice"], people["bob"]
    root = publish(client, alice, bundle=bundle("only-secret"))
    url = f"{API}/subagents/{root['id']}"
    version = root["latest_version"]["id"]
    yank = {"reason": "leaked a key", "version_id": version}
    assert client.post(f"{url}/yank", json=yank, headers=alice.headers).status_code == 200
    for headers in (bob.headers, {}):
        page = client.get(f"/s/{root['id']}/diff", headers=headers)
        assert page.status_code == 404 and "only-secret" not in page.get_data(as_text=True)
        assert preview_src(client, root["id"], headers) is None
    own = client.get(f"/s/{root['id']}/diff", headers=alice.headers)
    assert own.status_code == 200 and "only-secret" in own.get_data(as_text=True)
    assert preview_src(client, root["id"], alice.headers) is not None
