"""The MCP tools for near-copies, through the SDK's client: publishing a new app answers the
public apps it copies, and adopt_parent makes it their fork; nobody else may answer."""

from __future__ import annotations

from market.entrypoints.mcp_server import build_server
from tests.factories import app_bundle, catalog_of_templates, make_user, publish_app
from tests.functional.entrypoints.test_mcp_server import call_tools


def test_publish_subagent_offers_the_original_and_adopt_parent_accepts(client, engine, alice):
    carol = make_user(engine, "carol")
    water = catalog_of_templates(client, engine, alice, carol)
    coder = make_user(engine, "coder", kind="service", scopes=["suggest", "publish:on-behalf"])
    make_user(engine, "dana")
    copy = app_bundle("water", "Hydration Buddy")
    [published] = call_tools(
        build_server(engine, token=coder.token),
        (
            "publish_subagent",
            {
                "title": "Hydration Buddy",
                "category": "health",
                "manifest": copy["manifest"],
                "files": copy["files"],
                "on_behalf_of": "dana",
            },
        ),
    )
    assert not published.is_error, published
    answer = published.structured_content
    assert answer["created"] is True
    assert answer["subagent"]["parent_id"] is None
    [offer] = answer["near_copies"]
    assert (offer["id"], offer["author"]["handle"]) == (water["id"], "alice")
    copy_id = answer["subagent"]["id"]

    # A stranger's token cannot answer for dana; the coding agent that published can.
    [refused] = call_tools(
        build_server(engine, token=carol.token),
        ("adopt_parent", {"subagent_id": copy_id, "parent_id": water["id"]}),
    )
    assert refused.is_error
    assert "author" in refused.content[0].text
    adopted, again = call_tools(
        build_server(engine, token=coder.token),
        ("adopt_parent", {"subagent_id": copy_id, "parent_id": water["id"]}),
        ("adopt_parent", {"subagent_id": copy_id, "parent_id": water["id"]}),
    )
    assert not adopted.is_error, adopted
    assert adopted.structured_content["parent_id"] == water["id"]
    assert again.structured_content["parent_id"] == water["id"]
    assert client.get(f"/api/v1/subagents/{water['id']}").get_json()["fork_count"] == 1


def test_decline_near_copies_and_private_originals_stay_unknown(client, engine, alice):
    carol = make_user(engine, "carol")
    catalog_of_templates(client, engine, alice, carol)
    secret = publish_app(client, alice, "sleep", visibility="private")
    mallory = make_user(engine, "mallory")
    server = build_server(engine, token=mallory.token)
    copy = app_bundle("sleep", "My Own Sleep App")
    [published] = call_tools(
        server,
        (
            "publish_subagent",
            {
                "title": "My Own Sleep App",
                "category": "sleep",
                "manifest": copy["manifest"],
                "files": copy["files"],
            },
        ),
    )
    assert published.structured_content["near_copies"] == []
    copy_id = published.structured_content["subagent"]["id"]
    declined, adopted = call_tools(
        server,
        ("decline_near_copies", {"subagent_id": copy_id}),
        ("adopt_parent", {"subagent_id": copy_id, "parent_id": secret["id"]}),
    )
    assert declined.structured_content["parent_id"] is None
    assert adopted.is_error
    assert "not offered" in adopted.content[0].text
