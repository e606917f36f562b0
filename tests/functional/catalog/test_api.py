"""The catalog API end to end through the Flask test client, on every backend."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from sqlmodel import Session, select

from market.catalog import services as catalog_services
from market.catalog.models import SubAgent
from market.platform.schemas import INT32_MAX
from tests.factories import bundle, fork, listing, make_user, publish

API = "/api/v1"


def test_publish_returns_server_owned_fields(client, alice):
    body = publish(client, alice)
    assert body["author"]["handle"] == "alice"
    assert body["parent_id"] is None and body["depth"] == 0
    assert body["root_id"] == body["id"]
    version = body["latest_version"]
    assert version["number"] == 1 and len(version["sha256"]) == 64
    assert version["manifest"]["scopes"] == ["hydration.read", "hydration.write"]
    assert "email" not in json.dumps(body["author"])


def test_publishing_identical_bytes_returns_the_existing_subagent(client, alice):
    first = publish(client, alice)
    again = client.post(f"{API}/subagents", json=listing(), headers=alice.headers)
    assert again.status_code == 200
    assert again.get_json()["id"] == first["id"]
    page = client.get(f"{API}/subagents").get_json()
    assert [c["id"] for c in page["items"]] == [first["id"]]


def test_zip_upload_and_json_give_the_same_version(client, alice):
    data = bundle("zip")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(data["manifest"]))
        for path, text in data["files"].items():
            archive.writestr(path, text)
    metadata = {k: v for k, v in listing().items() if k != "bundle"}
    response = client.post(
        f"{API}/subagents",
        data={"metadata": json.dumps(metadata), "bundle": (io.BytesIO(buffer.getvalue()), "b.zip")},
        headers=alice.headers,
        content_type="multipart/form-data",
    )
    assert response.status_code == 201, response.get_json()
    zipped = response.get_json()
    again = client.post(
        f"{API}/subagents", json=listing(bundle=data), headers=alice.headers
    ).get_json()
    assert again["id"] == zipped["id"]
    assert again["latest_version"]["sha256"] == zipped["latest_version"]["sha256"]


def test_new_versions_are_numbered_and_idempotent(client, alice, bob):
    sub = publish(client, alice)
    url = f"{API}/subagents/{sub['id']}/versions"
    v2 = client.post(
        url, json={"changelog": "bigger buttons", "bundle": bundle("v2")}, headers=alice.headers
    )
    assert v2.status_code == 201 and v2.get_json()["number"] == 2
    same = client.post(url, json={"bundle": bundle("v2")}, headers=alice.headers)
    assert same.status_code == 200 and same.get_json()["id"] == v2.get_json()["id"]
    assert client.post(url, json={"bundle": bundle("v3")}, headers=bob.headers).status_code == 403
    versions = client.get(url).get_json()["items"]
    assert [v["number"] for v in versions] == [1, 2]
    assert versions[1]["changelog"] == "bigger buttons"
    detail = client.get(f"{API}/subagents/{sub['id']}").get_json()
    assert detail["latest_version"]["number"] == 2


def test_versions_come_a_page_at_a_time_each_once_oldest_first(client, alice):
    sub = publish(client, alice)
    url = f"{API}/subagents/{sub['id']}/versions"
    for n in range(2, 8):
        made = client.post(url, json={"bundle": bundle(f"v{n}")}, headers=alice.headers)
        assert made.status_code == 201 and made.get_json()["number"] == n
    numbers, cursor, pages = [], None, 0
    while True:
        page = client.get(url, query_string={"limit": 3, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200
        body = page.get_json()
        numbers += [v["number"] for v in body["items"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert numbers == list(range(1, 8)) and pages == 3
    exact = client.get(url, query_string={"limit": 7}).get_json()  # all, and no more
    assert len(exact["items"]) == 7 and exact["next_cursor"] is None
    whole = client.get(url).get_json()  # the default page holds up to 100
    assert [v["number"] for v in whole["items"]] == numbers and whole["next_cursor"] is None
    for hostile in ({"limit": 0}, {"limit": 101}, {"limit": "x"}, {"cursor": "not-ours"}):
        assert client.get(url, query_string=hostile).status_code in (400, 422), hostile
    # The diff against the previous version reads that one version, not the list.
    diff = client.get(
        f"{API}/subagents/{sub['id']}/diff",
        query_string={"version_id": whole["items"][4]["id"], "against": "previous"},
    )
    assert diff.status_code == 200
    assert diff.get_json()["base_version_id"] == whole["items"][3]["id"]


def test_a_lineage_stops_at_its_deepest_fork_with_a_clear_refusal(
    client, engine, alice, bob, monkeypatch
):
    monkeypatch.setattr(catalog_services, "MAX_FORK_DEPTH", 2)
    root = publish(client, alice)
    first = fork(client, bob, root["id"], "one")
    second = fork(client, alice, first["id"], "two")
    assert second["depth"] == 2
    with Session(engine) as session:
        before = len(session.exec(select(SubAgent.id)).all())
    refused = client.post(
        f"{API}/subagents/{second['id']}/forks",
        json={"title": "Three", "fork_request": "deeper", "bundle": bundle("three")},
        headers=bob.headers,
    )
    assert refused.status_code == 409
    assert "2 forks deep" in refused.get_json()["detail"]
    with Session(engine) as session:
        assert len(session.exec(select(SubAgent.id)).all()) == before  # nothing stored
    assert fork(client, bob, first["id"], "sibling")["depth"] == 2  # a shallower parent is fine


def test_the_deepest_lineage_fits_the_stored_path_of_ancestors():
    """``SubAgent.ancestry`` holds every ancestor's id: at the deepest fork, 300 ids of the
    widest id there is, with a slash between each, must fit its column."""
    widest = catalog_services.MAX_FORK_DEPTH * (len(str(INT32_MAX)) + 1) - 1
    assert widest <= SubAgent.__table__.c.ancestry.type.length


def test_fork_records_lineage_that_never_changes(client, alice, bob):
    root = publish(client, alice)
    child = fork(client, bob, root["id"], "oz")
    grandchild = fork(client, alice, child["id"], "family")
    assert child["parent_id"] == root["id"] and child["depth"] == 1
    assert child["parent_version_id"] == root["latest_version"]["id"]
    assert grandchild["root_id"] == root["id"] and grandchild["depth"] == 2
    assert grandchild["fork_request"] == "please change it: family"
    lineage = client.get(f"{API}/subagents/{grandchild['id']}/lineage").get_json()
    assert [n["subagent"]["id"] for n in lineage["ancestors"]] == [root["id"], child["id"]]
    # A new version of the parent does not move the child's recorded parent version.
    client.post(
        f"{API}/subagents/{root['id']}/versions",
        json={"bundle": bundle("v2")},
        headers=alice.headers,
    )
    again = client.get(f"{API}/subagents/{child['id']}").get_json()
    assert again["parent_version_id"] == root["latest_version"]["id"]
    assert client.get(f"{API}/subagents/{root['id']}").get_json()["fork_count"] == 1


def test_fork_of_a_chosen_parent_version(client, alice, bob):
    root = publish(client, alice)
    v1 = root["latest_version"]["id"]
    client.post(
        f"{API}/subagents/{root['id']}/versions",
        json={"bundle": bundle("v2")},
        headers=alice.headers,
    )
    child = fork(client, bob, root["id"], "old", parent_version_id=v1)
    assert child["parent_version_id"] == v1
    wrong = client.post(
        f"{API}/subagents/{root['id']}/forks",
        json={
            "title": "x",
            "fork_request": "x",
            "bundle": bundle("w"),
            "parent_version_id": 999999,
        },
        headers=bob.headers,
    )
    assert wrong.status_code == 404


@pytest.mark.parametrize(
    "field,value",
    [
        ("author_id", 1),
        ("parent_id", 1),
        ("root_id", 1),
        ("depth", 5),
        ("status", "active"),
        ("install_count", 1000),
        ("fork_count", 7),
        ("id", 42),
        ("owner", "bob"),
    ],
)
def test_mass_assignment_is_rejected_and_changes_nothing(client, alice, field, value):
    response = client.post(
        f"{API}/subagents", json=listing(**{field: value}), headers=alice.headers
    )
    assert response.status_code == 422
    assert response.headers["Content-Type"] == "application/problem+json"
    assert any(field in e["location"] for e in response.get_json()["errors"])
    assert client.get(f"{API}/subagents").get_json()["items"] == []


def test_patch_cannot_touch_server_fields(client, alice):
    sub = publish(client, alice)
    response = client.patch(
        f"{API}/subagents/{sub['id']}", json={"depth": 3}, headers=alice.headers
    )
    assert response.status_code == 422
    ok = client.patch(
        f"{API}/subagents/{sub['id']}",
        json={"title": "Hydrate!", "tags": ["Water"]},
        headers=alice.headers,
    )
    assert ok.status_code == 200 and ok.get_json()["title"] == "Hydrate!"
    assert ok.get_json()["tags"] == ["water"]


def test_diff_against_parent_shows_files_and_added_scopes(client, alice, bob):
    root = publish(client, alice)
    child = fork(
        client,
        bob,
        root["id"],
        "reminders",
        bundle=bundle(
            "reminders",
            scopes=("hydration.read", "hydration.write", "calendar.read"),
            hosts=("api.open-meteo.com",),
        ),
    )
    diff = client.get(f"{API}/subagents/{child['id']}/diff").get_json()
    assert diff["base_version_id"] == root["latest_version"]["id"]
    assert diff["manifest"]["scopes_added"] == ["calendar.read"]
    assert diff["manifest"]["hosts_added"] == ["api.open-meteo.com"]
    modified = {f["path"]: f for f in diff["files"]}
    assert modified["app.js"]["status"] == "modified"
    assert "+// reminders" in modified["app.js"]["diff"]


def test_browse_search_filters_and_cursor(client, alice):
    ids = [
        publish(
            client,
            alice,
            title=f"Sleep Diary {i}",
            category="sleep",
            tags=["sleep"],
            bundle=bundle(f"s{i}"),
        )["id"]
        for i in range(5)
    ]
    meal = publish(
        client,
        alice,
        title="Family Meal Planner",
        category="family",
        summary="Plan dinners for a family of four",
        tags=["meals", "kids"],
        bundle=bundle("meal"),
    )
    found = client.get(f"{API}/subagents?q=meal planner").get_json()["items"]
    assert [c["id"] for c in found] == [meal["id"]]
    assert client.get(f"{API}/subagents?q=dinners").get_json()["items"][0]["id"] == meal["id"]
    by_tag = client.get(f"{API}/subagents?tag=kids").get_json()["items"]
    assert [c["id"] for c in by_tag] == [meal["id"]]
    sleep = client.get(f"{API}/subagents?category=sleep").get_json()["items"]
    assert sorted(c["id"] for c in sleep) == sorted(ids)
    seen, cursor = [], None
    while True:
        url = f"{API}/subagents?category=sleep&limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = client.get(url).get_json()
        seen += [c["id"] for c in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == sorted(ids, reverse=True)
    assert client.get(f"{API}/subagents?limit=1000").status_code == 422
    bad = client.get(f"{API}/subagents?cursor=garbage!!")
    assert bad.status_code == 400
    assert bad.headers["Content-Type"] == "application/problem+json"


def test_search_in_chinese_and_japanese_matches_characters(client, alice, bob):
    """No spaces between words: "喝水" is inside the title "每日喝水记录", which a segmenter
    cuts into words. Relevance order, paging and privacy hold."""
    water = publish(
        client,
        alice,
        title="每日喝水记录",
        category="hydration",
        summary="记录你每天喝了多少杯水",
        bundle=bundle("zh-water"),
    )
    meals = publish(
        client,
        alice,
        title="家庭晚餐计划",
        category="family",
        summary="记录每天的晚餐",
        bundle=bundle("zh-meals"),
    )
    sleep = publish(
        client,
        alice,
        title="睡眠日記",
        category="sleep",
        summary="寝た時間を記録します",
        bundle=bundle("ja-sleep"),
    )
    secret = publish(
        client,
        bob,
        title="秘密的喝水记录",
        category="hydration",
        bundle=bundle("zh-secret"),
        visibility="private",
    )
    found = client.get(f"{API}/subagents?q=喝水").get_json()
    assert found["items"][0]["id"] == water["id"]
    both = client.get(f"{API}/subagents?q=每天记录&limit=1").get_json()
    rest = client.get(f"{API}/subagents?q=每天记录&limit=1&cursor={both['next_cursor']}")
    pages = [c["id"] for c in both["items"]] + [c["id"] for c in rest.get_json()["items"]]
    assert sorted(pages) == sorted([water["id"], meals["id"]])
    # A place before the list's start was not made here ([-1]).
    assert client.get(f"{API}/subagents?q=每天记录&limit=1&cursor=Wy0xXQ").status_code == 400
    assert client.get(f"{API}/subagents?q=睡眠").get_json()["items"][0]["id"] == sleep["id"]
    in_category = client.get(f"{API}/subagents?q=记录&category=family").get_json()["items"]
    assert [c["id"] for c in in_category] == [meals["id"]]
    assert client.get(f"{API}/subagents?q=小提琴").get_json()["items"] == []
    # A private sub-agent comes up for its owner only, as in any search.
    mine = client.get(f"{API}/subagents?q=秘密", headers=bob.headers).get_json()["items"]
    assert [c["id"] for c in mine] == [secret["id"]]
    assert client.get(f"{API}/subagents?q=秘密", headers=alice.headers).get_json()["items"] == []
    assert secret["id"] not in [
        c["id"] for c in client.get(f"{API}/subagents?q=喝水记录").get_json()["items"]
    ]


def test_install_counts_distinct_users_and_reports_new_scopes(client, alice, bob, engine):
    carol = make_user(engine, "carol")
    root = publish(client, alice)
    url = f"{API}/subagents/{root['id']}/install"
    first = client.post(url, json={}, headers=bob.headers)
    assert first.status_code == 201
    assert first.get_json()["granted_scopes"] == ["hydration.read", "hydration.write"]
    assert client.post(url, json={}, headers=bob.headers).status_code == 200
    client.post(url, json={}, headers=carol.headers)
    assert client.get(f"{API}/subagents/{root['id']}").get_json()["install_count"] == 2
    child = fork(
        client,
        alice,
        root["id"],
        "cal",
        bundle=bundle("cal", scopes=("hydration.read", "hydration.write", "calendar.read")),
    )
    upgrade = client.post(f"{API}/subagents/{child['id']}/install", json={}, headers=bob.headers)
    assert upgrade.get_json()["new_scopes"] == ["calendar.read"]
    mine = client.get(f"{API}/me/installs", headers=bob.headers).get_json()["items"]
    assert {i["subagent_id"] for i in mine} == {root["id"], child["id"]}
    assert client.delete(url, headers=bob.headers).status_code == 204
    assert client.delete(url, headers=bob.headers).status_code == 204
    assert client.get(f"{API}/subagents/{root['id']}").get_json()["install_count"] == 1
    mine = client.get(f"{API}/me/installs", headers=bob.headers).get_json()["items"]
    assert {i["subagent_id"] for i in mine} == {child["id"]}


def test_fork_request_queue_and_fulfilment(client, alice, bob, engine):
    coder = make_user(engine, "coding-agent", kind="service", scopes=["publish:on-behalf"])
    root = publish(client, alice)
    asked = client.post(
        f"{API}/subagents/{root['id']}/fork-requests",
        json={"text": "make it work for a family of four, one child allergic to peanuts"},
        headers=bob.headers,
    )
    assert asked.status_code == 201
    request_id = asked.get_json()["id"]
    queue = client.get(f"{API}/fork-requests?status=open", headers=coder.headers).get_json()
    assert [r["id"] for r in queue["items"]] == [request_id]
    assert client.get(f"{API}/fork-requests", headers=alice.headers).get_json()["items"] == []
    child = fork(
        client, coder, root["id"], "peanut-free", on_behalf_of="bob", fork_request_id=request_id
    )
    assert child["author"]["handle"] == "bob"
    assert child["fork_request_id"] == request_id
    assert client.get(f"{API}/fork-requests", headers=coder.headers).get_json()["items"] == []
    done = client.get(f"{API}/fork-requests?status=fulfilled", headers=coder.headers).get_json()
    assert done["items"][0]["fulfilled_by_id"] == child["id"]
    again = client.post(
        f"{API}/subagents/{root['id']}/forks",
        json={
            "title": "x",
            "fork_request": "x",
            "bundle": bundle("other"),
            "fork_request_id": request_id,
            "on_behalf_of": "bob",
        },
        headers=coder.headers,
    )
    assert again.status_code == 409


def test_service_without_on_behalf_scope_cannot_publish(client, engine):
    svc = make_user(engine, "main-agent", kind="service", scopes=["events:write"])
    response = client.post(
        f"{API}/subagents", json=listing(on_behalf_of="nobody"), headers=svc.headers
    )
    assert response.status_code == 403


def test_yank_hides_from_browse_but_installers_keep_the_bundle(client, alice, bob, engine):
    carol = make_user(engine, "carol")
    sub = publish(client, alice)
    version_id = sub["latest_version"]["id"]
    client.post(f"{API}/subagents/{sub['id']}/install", json={}, headers=bob.headers)
    yanked = client.post(
        f"{API}/subagents/{sub['id']}/yank", json={"reason": "data loss bug"}, headers=alice.headers
    )
    assert yanked.get_json()["status"] == "yanked"
    assert client.get(f"{API}/subagents").get_json()["items"] == []
    bundle_url = f"{API}/subagents/{sub['id']}/versions/{version_id}/bundle"
    assert client.get(bundle_url, headers=bob.headers).status_code == 200
    assert client.get(bundle_url, headers=carol.headers).status_code == 404
    refused = client.post(f"{API}/subagents/{sub['id']}/install", json={}, headers=carol.headers)
    assert refused.status_code == 409 and "data loss bug" in refused.get_json()["detail"]
    assert client.get(f"{API}/subagents/{sub['id']}").get_json()["status_reason"] == (
        "data loss bug"
    )


def test_quarantine_report_flow(client, alice, bob, engine):
    mod = make_user(engine, "mod", role="moderator")
    sub = publish(client, alice)
    url = f"{API}/subagents/{sub['id']}"
    reported = client.post(
        f"{url}/report", json={"reason": "privacy", "detail": "asks too much"}, headers=bob.headers
    )
    assert reported.status_code == 201
    assert (
        client.post(f"{url}/report", json={"reason": "spam"}, headers=bob.headers).status_code
        == 200
    )
    assert client.get(f"{API}/reports", headers=bob.headers).status_code == 403
    assert len(client.get(f"{API}/reports", headers=mod.headers).get_json()["items"]) == 1
    assert (
        client.post(
            f"{url}/quarantine", json={"reason": "privacy leak"}, headers=bob.headers
        ).status_code
        == 403
    )
    done = client.post(f"{url}/quarantine", json={"reason": "privacy leak"}, headers=mod.headers)
    assert done.get_json()["status"] == "quarantined"
    assert client.get(url, headers=bob.headers).status_code == 404
    assert client.get(url).status_code == 404
    assert client.get(url, headers=alice.headers).status_code == 200
    assert client.get(f"{API}/reports", headers=mod.headers).get_json()["items"] == []
    lifted = client.post(
        f"{url}/quarantine", json={"reason": "fixed now", "lift": True}, headers=mod.headers
    )
    assert lifted.get_json()["status"] == "active"
    assert client.get(url).status_code == 200


def test_tree_is_breadth_first_and_capped(client, alice, bob):
    root = publish(client, alice)
    kids = [fork(client, bob, root["id"], f"k{i}") for i in range(3)]
    deep = kids[0]
    chain = []
    for i in range(4):
        deep = fork(client, alice, deep["id"], f"d{i}")
        chain.append(deep)
    tree = client.get(f"{API}/subagents/{root['id']}/tree?depth=2").get_json()
    depths = [n["depth"] for n in tree["nodes"]]
    assert depths == sorted(depths) and max(depths) == 2
    assert {n["id"] for n in tree["nodes"] if n["depth"] == 1} == {k["id"] for k in kids}
    capped = client.get(f"{API}/subagents/{root['id']}/tree?depth=1&max_children=2").get_json()
    assert len(capped["nodes"]) == 3 and capped["truncated"] is True
    full = client.get(f"{API}/subagents/{root['id']}/tree?depth=6").get_json()
    assert len(full["nodes"]) == 1 + 3 + 4
    assert client.get(f"{API}/subagents/{root['id']}/tree?depth=99").status_code == 422
    forks = client.get(f"{API}/subagents/{root['id']}/forks?limit=2").get_json()
    assert len(forks["items"]) == 2 and forks["next_cursor"]
    rest = client.get(
        f"{API}/subagents/{root['id']}/forks",
        query_string={"limit": 2, "cursor": forks["next_cursor"]},
    ).get_json()
    assert rest["next_cursor"] is None
    paged = [f["id"] for f in forks["items"] + rest["items"]]
    assert sorted(paged) == sorted(k["id"] for k in kids)  # each fork once, none left out


def test_problem_json_for_bad_bodies(client, alice):
    bad = client.post(
        f"{API}/subagents", data="{nope", content_type="application/json", headers=alice.headers
    )
    assert bad.status_code == 400
    assert bad.headers["Content-Type"] == "application/problem+json"
    assert set(bad.get_json()) >= {"type", "title", "status", "detail"}
    anon = client.post(f"{API}/subagents", json=listing())
    assert anon.status_code == 401
    wrong_scheme = client.get(f"{API}/me", headers={"Authorization": "Basic abc"})
    assert wrong_scheme.status_code == 401
    unknown = client.get(f"{API}/me", headers={"Authorization": "Bearer sprig_nope"})
    assert unknown.status_code == 401


def test_openapi_document_is_3_1_and_documents_bundle_bodies(client):
    spec = client.get(f"{API}/openapi.json").get_json()
    assert spec["openapi"].startswith("3.1")
    publish_op = spec["paths"]["/api/v1/subagents"]["post"]
    assert set(publish_op["requestBody"]["content"]) == {"application/json"}
    zip_op = spec["paths"]["/api/v1/subagents/zip"]["post"]
    assert set(zip_op["requestBody"]["content"]) == {"multipart/form-data"}
    docs = client.get(f"{API}/docs")
    assert docs.status_code == 200
    assert b"cdn" not in docs.data.lower() and b"/static/swagger-ui/" in docs.data
