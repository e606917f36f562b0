"""Data that survives a branch switch: a fork's change to its parent's data_schema classed and
checked at publish, the class in the version diff, and the switch plan through the HTTP API
and the MCP tool, on every backend."""

from __future__ import annotations

import copy
import re
import threading

import pytest

from market.catalog import schema_checks
from market.entrypoints.mcp_server import build_server
from market.platform.db import session_scope
from market.ranking.models import SubAgentScore
from tests.factories import bundle, make_user
from tests.functional.entrypoints.test_mcp_server import call_tools
from tests.functional.web.test_pages import sign_in, text

API = "/api/v1"

# The parent's stored data: a day's cups of tea, how it felt, a note. Its author shows one
# record (``examples``), which every migration away from it must carry.
TEA_SCHEMA = {
    "type": "object",
    "properties": {
        "day": {"type": "string", "format": "date"},
        "cups": {"type": "integer", "minimum": 0},
        "mood": {"type": "string", "enum": ["good", "ok", "bad"]},
        "note": {"type": "string", "maxLength": 200},
    },
    "required": ["day"],
    "examples": [{"day": "2026-01-01", "cups": 3, "mood": "ok", "note": "green tea"}],
}


def schema(**changes) -> dict:
    """TEA_SCHEMA with properties replaced (a None value removes the field)."""
    out = copy.deepcopy(TEA_SCHEMA)
    del out["examples"]
    for name, prop in changes.items():
        if prop is None:
            out["properties"].pop(name)
        else:
            out["properties"][name] = prop
    return out


# Breaking: the mood words change and the note is renamed.
FEELINGS_SCHEMA = schema(
    mood={"type": "string", "enum": ["happy", "meh", "sad"]},
    note=None,
    remarks={"type": "string"},
)
FEELINGS_MIGRATION = {
    "fields": {
        "mood": {"from": "mood", "values": {"good": "happy", "ok": "meh", "bad": "sad"}},
        "remarks": {"from": "note"},
    }
}


def tea_bundle(note: str, data_schema: dict | None, **manifest) -> dict:
    body = bundle(note)
    if data_schema is not None:
        body["manifest"]["data_schema"] = data_schema
    body["manifest"].update(manifest)
    return body


def publish_tea(client, actor, **extra) -> dict:
    body = {
        "title": "Tea Log",
        "summary": "Cups of tea a day.",
        "story": "I drink tea all day and wanted to know how much.",
        "category": "diet",
        "bundle": tea_bundle("tea", TEA_SCHEMA),
        **extra,
    }
    response = client.post(f"{API}/subagents", json=body, headers=actor.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def fork_tea(client, actor, parent_id: int, note: str, data_schema, **manifest):
    visibility = manifest.pop("visibility", "public")
    return client.post(
        f"{API}/subagents/{parent_id}/forks",
        json={
            "title": f"Tea {note}",
            "fork_request": f"please: {note}",
            "bundle": tea_bundle(note, data_schema, **manifest),
            "visibility": visibility,
        },
        headers=actor.headers,
    )


def fork_feelings(client, actor, parent_id: int, **manifest):
    """A fork with FEELINGS_SCHEMA, which breaks TEA_SCHEMA."""
    return fork_tea(client, actor, parent_id, "feelings", FEELINGS_SCHEMA, **manifest)


def twice_at_once(request) -> list:
    """What ``request`` answered, called by two threads at the same time."""
    answers: list = []
    threads = [threading.Thread(target=lambda: answers.append(request())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def forks_of(client, subagent_id: int) -> list[int]:
    items = client.get(f"{API}/subagents/{subagent_id}/forks").get_json()["items"]
    return [item["id"] for item in items]


# --------------------------------------------------------------------------- at fork


def test_compatible_and_additive_forks_need_no_migration(client, alice, bob):
    tea = publish_tea(client, alice)
    looser = fork_tea(
        client, bob, tea["id"], "looser", schema(cups={"type": "number", "minimum": 0})
    )
    assert looser.status_code == 201, looser.get_json()
    more = fork_tea(client, bob, tea["id"], "more", schema(milk={"type": "boolean"}))
    assert more.status_code == 201, more.get_json()
    kinds = [
        client.get(f"{API}/subagents/{fork['id']}/diff").get_json()["data_schema_change"]
        for fork in (looser.get_json(), more.get_json())
    ]
    assert [k["kind"] for k in kinds] == ["compatible", "additive"]
    assert kinds[0]["fields"] == [
        {
            "name": "cups",
            "change": "loosened",
            "detail": "type integer widened to number",
            "kind": "compatible",
        }
    ]
    assert kinds[1]["fields"][0]["name"] == "milk" and kinds[1]["fields"][0]["change"] == "added"


def test_a_breaking_fork_without_a_migration_is_refused_naming_each_field(client, alice, bob):
    tea = publish_tea(client, alice)
    response = fork_feelings(client, bob, tea["id"])
    assert response.status_code == 422
    assert response.content_type == "application/problem+json"
    problem = response.get_json()
    assert "breaks its parent's data schema" in problem["detail"]
    by_location = {e["location"]: e for e in problem["errors"]}
    assert set(by_location) == {
        "manifest.data_schema.properties.mood",
        "manifest.data_schema.properties.note",
    }
    assert all(e["code"] == "breaking_schema_change" for e in problem["errors"])
    assert "data_migration.drop" in by_location["manifest.data_schema.properties.note"]["message"]
    assert "values" in by_location["manifest.data_schema.properties.mood"]["message"]
    assert forks_of(client, tea["id"]) == []


def test_a_closed_schema_is_a_top_level_break(client, alice, bob):
    tea = publish_tea(client, alice)
    closed = {**schema(), "additionalProperties": False}
    response = fork_tea(client, bob, tea["id"], "closed", closed)
    assert response.status_code == 422
    [error] = response.get_json()["errors"]
    assert error["location"] == "manifest.data_schema.additionalProperties"


def test_a_breaking_fork_with_a_migration_that_carries_the_samples_is_published(client, alice, bob):
    tea = publish_tea(client, alice)
    response = fork_feelings(
        client,
        bob,
        tea["id"],
        data_migration=FEELINGS_MIGRATION,
        data_samples=[{"day": "2026-02-01", "mood": "bad"}, {"day": "2026-02-02"}],
    )
    assert response.status_code == 201, response.get_json()
    diff = client.get(f"{API}/subagents/{response.get_json()['id']}/diff").get_json()
    change = diff["data_schema_change"]
    assert change["kind"] == "breaking"
    assert {(f["name"], f["change"]) for f in change["fields"]} == {
        ("mood", "tightened"),
        ("note", "removed"),
        ("remarks", "added"),
    }


def test_a_sample_the_migration_fails_is_named_and_nothing_is_published(client, alice, bob):
    tea = publish_tea(client, alice)
    forgets_bad = copy.deepcopy(FEELINGS_MIGRATION)
    del forgets_bad["fields"]["mood"]["values"]["bad"]
    response = fork_feelings(
        client,
        bob,
        tea["id"],
        data_migration=forgets_bad,
        data_samples=[{"day": "2026-02-02", "mood": "good"}, {"day": "2026-02-01", "mood": "bad"}],
    )
    assert response.status_code == 422
    [error] = response.get_json()["errors"]
    assert error["location"] == "manifest.data_samples[1]"
    assert "refused by the new schema" in error["message"] and "bad" in error["message"]
    assert forks_of(client, tea["id"]) == []


def test_the_parents_examples_are_samples_too(client, alice, bob):
    tea = publish_tea(client, alice)
    # The note of the parent's example ("green tea") is not a number.
    numbered = schema(note=None, score={"type": "integer"})
    response = fork_tea(
        client,
        bob,
        tea["id"],
        "scores",
        numbered,
        data_migration={"fields": {"score": {"from": "note", "convert": "integer"}}},
    )
    assert response.status_code == 422
    [error] = response.get_json()["errors"]
    assert error["location"] == "parent data_schema.examples[0]"
    assert "does not migrate" in error["message"]


def test_a_malformed_migration_is_refused_with_what_is_wrong(client, alice, bob):
    tea = publish_tea(client, alice)
    response = fork_feelings(
        client,
        bob,
        tea["id"],
        data_migration={"fields": {"remarks": {"form": "note"}}},
    )
    assert response.status_code == 422
    messages = " ".join(e["message"] for e in response.get_json()["errors"])
    assert "form: unknown key" in messages
    samples_without_migration = fork_tea(
        client, bob, tea["id"], "x", None, data_samples=[{"day": "2026-01-01"}]
    )
    assert samples_without_migration.status_code == 422
    [error] = samples_without_migration.get_json()["errors"]
    assert error["location"] == "manifest.data_samples"
    assert forks_of(client, tea["id"]) == []


def test_a_hostile_pattern_is_cut_off_by_the_time_limit(client, alice, bob, monkeypatch):
    """A pattern that backtracks exponentially on the sample would hold the check for hours;
    the child process running it is killed at the limit and the fork refused."""
    monkeypatch.setattr(schema_checks, "MIGRATION_CHECK_SECONDS", 1.0)
    tea = publish_tea(client, alice)
    hostile = schema(note=None, code={"type": "string", "pattern": "^(a+)+$"})
    response = fork_tea(
        client,
        bob,
        tea["id"],
        "hostile",
        hostile,
        data_migration={"fields": {"code": {"from": "note"}}},
        data_samples=[{"day": "2026-01-01", "note": "a" * 64 + "!"}],
    )
    assert response.status_code == 422
    assert "took longer than 1 s" in response.get_json()["detail"]
    assert forks_of(client, tea["id"]) == []
    # The same check on a sample the pattern answers at once still runs.
    monkeypatch.undo()
    fine = fork_tea(
        client,
        bob,
        tea["id"],
        "fine",
        schema(note=None, code={"type": "string", "pattern": "^a+$"}),
        data_migration={"fields": {"code": {"from": "note", "default": "a"}}},
        data_samples=[{"day": "2026-01-01", "note": "aaa"}],
    )
    # The parent's example note ("green tea") does not match: named, not timed out.
    assert fine.status_code == 422
    assert fine.get_json()["errors"][0]["location"] == "parent data_schema.examples[0]"


def test_racing_identical_breaking_forks_make_one(app, engine, alice):
    client = app.test_client()
    tea = publish_tea(client, alice)
    bob = make_user(engine, "bob")
    answers = twice_at_once(
        lambda: (
            fork_feelings(
                app.test_client(), bob, tea["id"], data_migration=FEELINGS_MIGRATION
            ).status_code
        )
    )
    assert sorted(answers) == [200, 201]
    assert len(forks_of(client, tea["id"])) == 1


# --------------------------------------------------------------------------- switch plans


@pytest.fixture
def lineage(client, alice, bob):
    """The tea log, a sibling that adds milk, and a branch that renames moods and the note."""
    tea = publish_tea(client, alice)
    milk = fork_tea(client, bob, tea["id"], "milk", schema(milk={"type": "boolean"}))
    feelings = fork_feelings(
        client,
        bob,
        tea["id"],
        data_migration=FEELINGS_MIGRATION,
    )
    assert milk.status_code == feelings.status_code == 201
    return tea, milk.get_json(), feelings.get_json()


def plan(client, actor, current: int, target: int, **query):
    return client.get(
        f"{API}/subagents/{current}/switch-plan",
        query_string={"to": target, **query},
        headers=actor.headers if actor else {},
    )


def test_a_switch_to_a_sibling_composes_the_path_and_changes_nothing(client, lineage, alice):
    tea, milk, feelings = lineage
    installed = client.post(f"{API}/subagents/{milk['id']}/install", headers=alice.headers)
    assert installed.status_code == 201
    response = plan(client, alice, milk["id"], feelings["id"])
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["installed"] is True
    assert body["current"]["subagent_id"] == milk["id"]
    assert body["target"]["subagent_id"] == feelings["id"]
    verdicts = {f["name"]: (f["verdict"], f["into"]) for f in body["fields"]}
    assert verdicts == {
        "cups": ("carried", ["cups"]),
        "day": ("carried", ["day"]),
        "milk": ("lost", []),
        "mood": ("transformed", ["mood"]),
        "note": ("transformed", ["remarks"]),
    }
    assert body["safe"] is False and body["unfilled"] == []
    assert body["change"]["kind"] == "breaking"
    # Up to the tea log (implicit: the milk has no place there), down into the branch by its
    # declared migration.
    assert [(p["subagent_id"], p["migration"]) for p in body["path"]] == [
        (tea["id"], "implicit"),
        (feelings["id"], "declared"),
    ]
    assert body["composed"] is True
    mine = client.get(f"{API}/me/installs", headers=alice.headers).get_json()["items"]
    assert [i["subagent_id"] for i in mine] == [milk["id"]]


def test_a_plan_to_the_parent_and_back_down(client, lineage, alice):
    tea, _milk, feelings = lineage
    down = plan(client, alice, tea["id"], feelings["id"]).get_json()
    assert down["installed"] is False
    assert {f["name"]: f["verdict"] for f in down["fields"]} == {
        "cups": "carried",
        "day": "carried",
        "mood": "transformed",
        "note": "transformed",
    }
    assert down["safe"] is True
    up = plan(client, None, feelings["id"], tea["id"]).get_json()
    verdicts = {f["name"]: f["verdict"] for f in up["fields"]}
    # Going back no migration was declared: remarks have no place in the parent, and the
    # parent refuses the new mood words.
    assert verdicts["remarks"] == "lost" and verdicts["mood"] == "at_risk"


def test_refusals_are_clear_and_a_private_branch_is_a_404(client, engine, lineage, alice, bob):
    tea, _milk, feelings = lineage
    secret = fork_tea(
        client, bob, tea["id"], "secret", schema(milk={"type": "boolean"}), visibility="private"
    ).get_json()
    other = publish_tea(client, alice, title="Another Tea Log", bundle=tea_bundle("x", TEA_SCHEMA))
    plain = fork_tea(client, alice, tea["id"], "plain", None).get_json()
    hidden = plan(client, alice, tea["id"], secret["id"])
    assert hidden.status_code == 404
    assert hidden.get_json()["detail"] == f"No sub-agent {secret['id']}."
    assert plan(client, alice, secret["id"], tea["id"]).status_code == 404
    assert plan(client, bob, tea["id"], secret["id"]).status_code == 200  # its owner sees it
    elsewhere = plan(client, alice, tea["id"], other["id"])
    assert elsewhere.status_code == 422
    assert elsewhere.get_json()["errors"][0]["location"] == "to"
    no_schema = plan(client, alice, tea["id"], plain["id"])
    assert no_schema.status_code == 422 and "no data_schema" in no_schema.get_json()["detail"]
    assert plan(client, alice, tea["id"], "x").status_code == 422
    wrong_version = plan(client, alice, tea["id"], feelings["id"], version_id=2**31 - 1)
    assert wrong_version.status_code == 404
    # A public fork of the private branch: its plan passes through the private one, which the
    # path does not name.
    below = fork_tea(
        client, bob, secret["id"], "below", schema(milk={"type": "boolean"}, sugar={})
    ).get_json()
    through = plan(client, alice, tea["id"], below["id"]).get_json()
    assert [p["subagent_id"] for p in through["path"]] == [None, below["id"]]
    assert through["path"][0]["version_id"] is None


def test_the_mcp_tool_answers_the_same_plan_and_the_same_404(client, engine, lineage, alice, bob):
    tea, milk, feelings = lineage
    secret = fork_tea(
        client, bob, tea["id"], "secret", schema(milk={"type": "boolean"}), visibility="private"
    ).get_json()
    over_http = plan(client, alice, milk["id"], feelings["id"]).get_json()
    server = build_server(engine, token=alice.token)
    by_tool, hidden = call_tools(
        server,
        ("switch_plan", {"subagent_id": milk["id"], "to": feelings["id"]}),
        ("switch_plan", {"subagent_id": tea["id"], "to": secret["id"]}),
    )
    assert not by_tool.is_error, by_tool.content
    assert by_tool.structured_content == over_http
    assert hidden.is_error and "Not found (404)" in hidden.content[0].text


# --------------------------------------------------------------------------- pages


def test_the_better_branch_banner_leads_to_the_plan_page(client, engine, lineage, alice, bob):
    tea, _milk, feelings = lineage
    with session_scope(engine) as session:
        session.add(
            SubAgentScore(
                subagent_id=tea["id"],
                quality=0.1,
                quality_sd=0.1,
                display=0.0,
                branch_value=1.0,
                best_descendant_id=feelings["id"],
                p_descendant_better=0.9,
            )
        )
    sign_in(client, alice)
    before = text(client.get(f"/s/{tea['id']}"))
    assert f"/s/{tea['id']}/switch/{feelings['id']}" not in before  # nothing installed yet
    client.post(f"{API}/subagents/{tea['id']}/install", headers=alice.headers)
    banner = text(client.get(f"/s/{tea['id']}"))
    link = f"/s/{tea['id']}/switch/{feelings['id']}"
    assert link in banner
    page = client.get(link)
    assert page.status_code == 200
    html = text(page)
    assert "the version in your agent" in html
    assert re.search(r"<code>note</code>\s*<span class=\"verdict\">transformed</span>", html)
    assert "into remarks" in html
    chinese = text(client.get(link, query_string={"lang": "zh"}))
    assert "你保存的每个字段" in chinese and "已转换" in chinese
    diff = text(client.get(f"/s/{feelings['id']}/diff", query_string={"lang": "en"}))
    assert "Breaking: a record kept before may not fit as it is" in diff
    secret = fork_tea(
        client, bob, tea["id"], "secret", schema(milk={"type": "boolean"}), visibility="private"
    ).get_json()
    assert client.get(f"/s/{tea['id']}/switch/{secret['id']}").status_code == 404
    plain = fork_tea(client, alice, tea["id"], "plain", None).get_json()
    refused = client.get(f"/s/{tea['id']}/switch/{plain['id']}")
    assert refused.status_code == 200
    assert "does not say what data it keeps" in text(refused)


# --------------------------------------------------------------------------- switching


def switch(client, actor, current: int, **body):
    return client.post(f"{API}/subagents/{current}/switch", json=body, headers=actor.headers)


def active_installs(client, actor) -> list[tuple[int, int]]:
    items = client.get(f"{API}/me/installs", headers=actor.headers).get_json()["items"]
    return sorted((i["subagent_id"], i["version_id"]) for i in items)


def test_a_switch_needs_the_persons_agreement_and_moves_the_install(client, lineage, alice, bob):
    tea, milk, feelings = lineage
    moody = fork_tea(
        client,
        bob,
        tea["id"],
        "moody",
        schema(milk={"type": "boolean"}),
        scopes=["hydration.read", "hydration.write", "mood.read"],
    ).get_json()
    assert switch(client, alice, milk["id"], to=moody["id"]).status_code == 409  # not installed
    client.post(f"{API}/subagents/{milk['id']}/install", headers=alice.headers)
    before = active_installs(client, alice)
    asks = switch(client, alice, milk["id"], to=moody["id"])
    assert asks.status_code == 409
    assert asks.get_json()["errors"] == [{"location": "grant_scopes", "message": "mood.read"}]
    loses = switch(client, alice, milk["id"], to=feelings["id"])
    assert loses.status_code == 409
    assert loses.get_json()["errors"] == [{"location": "fields.milk", "message": "lost or at risk"}]
    assert active_installs(client, alice) == before  # nothing changed

    moved = switch(client, alice, milk["id"], to=moody["id"], grant_scopes=["mood.read"])
    assert moved.status_code == 201, moved.get_json()
    body = moved.get_json()
    assert body["install"]["subagent_id"] == moody["id"]
    assert body["install"]["new_scopes"] == ["mood.read"]
    assert body["plan"]["safe"] is True and body["plan"]["migration"]["drop"] == []
    assert active_installs(client, alice) == [(moody["id"], moody["latest_version"]["id"])]
    again = switch(client, alice, milk["id"], to=moody["id"], grant_scopes=["mood.read"])
    assert again.status_code == 200
    assert again.get_json()["install"]["id"] == body["install"]["id"]
    counts = {
        s["id"]: client.get(f"{API}/subagents/{s['id']}").get_json()["install_count"]
        for s in (milk, moody)
    }
    assert counts == {milk["id"]: 0, moody["id"]: 1}


def test_racing_switches_move_the_install_once(app, engine, lineage, alice):
    _tea, milk, feelings = lineage
    client = app.test_client()
    client.post(f"{API}/subagents/{milk['id']}/install", headers=alice.headers)
    answers = twice_at_once(
        lambda: (
            switch(
                app.test_client(), alice, milk["id"], to=feelings["id"], accept_losses=True
            ).status_code
        )
    )
    assert sorted(answers) == [200, 201]
    assert [s for s, _v in active_installs(client, alice)] == [feelings["id"]]
    count = client.get(f"{API}/subagents/{feelings['id']}").get_json()["install_count"]
    assert count == 1


def test_a_switch_to_a_private_branch_is_a_404_and_changes_nothing(client, lineage, alice, bob):
    tea, milk, _feelings = lineage
    secret = fork_tea(
        client, bob, tea["id"], "secret", schema(milk={"type": "boolean"}), visibility="private"
    ).get_json()
    client.post(f"{API}/subagents/{milk['id']}/install", headers=alice.headers)
    response = switch(client, alice, milk["id"], to=secret["id"], accept_losses=True)
    assert response.status_code == 404
    assert [s for s, _v in active_installs(client, alice)] == [milk["id"]]


def test_two_declared_renames_compose_and_the_middle_name_is_left_out(client, alice, bob):
    tea = publish_tea(client, alice)
    memo = fork_tea(
        client,
        bob,
        tea["id"],
        "memo",
        schema(note=None, memo={"type": "string"}),
        data_migration={"fields": {"memo": {"from": "note"}}},
    ).get_json()
    diary = fork_tea(
        client,
        alice,
        memo["id"],
        "diary",
        schema(note=None, diary={"type": "string"}),
        data_migration={"fields": {"diary": {"from": "memo"}}},
        data_samples=[{"day": "2026-01-01", "memo": "tea with Ann"}],
    ).get_json()
    body = plan(client, alice, tea["id"], diary["id"]).get_json()
    assert body["migration"] == {"fields": {"diary": {"from": "note"}}, "drop": []}
    assert {f["name"]: (f["verdict"], f["into"]) for f in body["fields"]}["note"] == (
        "transformed",
        ["diary"],
    )
    assert [p["migration"] for p in body["path"]] == ["declared", "declared"]


def test_a_migration_with_no_sample_to_check_is_refused(client, alice, bob):
    body = {**schema(), "title": "no examples"}  # a parent whose author showed no record
    tea = publish_tea(client, alice, bundle=tea_bundle("bare", body))
    response = fork_tea(
        client,
        bob,
        tea["id"],
        "memo",
        schema(note=None, memo={"type": "string"}),
        data_migration={"fields": {"memo": {"from": "note"}}},
    )
    assert response.status_code == 422
    assert "no sample records" in response.get_json()["detail"]
    assert forks_of(client, tea["id"]) == []


def test_the_plan_pages_button_switches_what_it_showed(client, lineage, alice, bob):
    tea, _milk, feelings = lineage
    sign_in(client, alice)
    client.post(f"{API}/subagents/{tea['id']}/install", headers=alice.headers)
    link = f"/s/{tea['id']}/switch/{feelings['id']}"
    html = text(client.get(link, query_string={"lang": "en"}))
    assert "Switch to Tea feelings" in html
    form = dict(re.findall(r'name="(csrf|to_version_id)" value="([^"]+)"', html))
    # A form that does not name the version it showed changes nothing.
    assert client.post(link, data={"csrf": form["csrf"]}).status_code == 400
    assert active_installs(client, alice) == [(tea["id"], tea["latest_version"]["id"])]
    # The target's author publishes a version that asks for more since the page was shown:
    # the switch still goes to the version shown, with what the person agreed to.
    more = tea_bundle("v2", FEELINGS_SCHEMA, scopes=["hydration.read", "mood.read"])
    newer = client.post(
        f"{API}/subagents/{feelings['id']}/versions",
        json={"bundle": more, "changelog": "moods"},
        headers=bob.headers,
    )
    assert newer.status_code == 201, newer.get_json()
    moved = client.post(link, data=form)
    assert moved.status_code == 302 and moved.location.endswith(f"/s/{feelings['id']}")
    assert active_installs(client, alice) == [(feelings["id"], int(form["to_version_id"]))]
    again = client.post(link, data=form)  # a second click finds it done
    assert again.status_code == 302
    assert active_installs(client, alice) == [(feelings["id"], int(form["to_version_id"]))]
