"""Near-copies through the API: a new root copied from another author's public sub-agent is
offered as its fork; accepting makes it one (lineage and fork count move to the original);
declining a nearly identical copy files one moderation report with the evidence. Apps that
only share a template are not copies, and private or unlisted sub-agents are never matched."""

from __future__ import annotations

import threading
import uuid

from sqlalchemy import delete, func, select

from market.catalog import near_copies
from market.catalog.models import NearCopyOffer, NearCopySignature, Report, SubAgent
from market.platform.db import session_scope
from market.platform.time import utcnow
from tests.factories import (
    app_bundle,
    catalog_of_templates,
    learn_boilerplate,
    make_user,
    publish_app,
)

API = "/api/v1"


def _reports(engine) -> list[Report]:
    with session_scope(engine) as session:
        return list(session.execute(select(Report)).scalars())


def test_a_renamed_copy_is_offered_as_a_fork_and_accepting_makes_it_one(client, engine, alice, bob):
    carol = make_user(engine, "carol")
    water = catalog_of_templates(client, engine, alice, carol)
    copy = publish_app(client, bob, "water", name="Hydration Buddy")
    assert copy["parent_id"] is None
    [offer] = copy["near_copies"]
    assert offer["id"] == water["id"]
    assert offer["title"] == "Water Tracker"
    assert offer["author"]["handle"] == "alice"
    assert offer["similarity"] >= 0.8
    # The same offer is there to read later, for the author only.
    listed = client.get(f"{API}/subagents/{copy['id']}/near-copies", headers=bob.headers)
    assert [o["id"] for o in listed.get_json()["items"]] == [water["id"]]
    seen = client.get(f"{API}/subagents/{copy['id']}/near-copies", headers=alice.headers)
    assert seen.get_json()["items"] == []

    response = client.post(
        f"{API}/subagents/{copy['id']}/adopt-parent",
        json={"parent_id": water["id"]},
        headers=bob.headers,
    )
    assert response.status_code == 200, response.get_json()
    fork = response.get_json()
    assert fork["parent_id"] == water["id"]
    assert fork["parent_version_id"] == water["latest_version"]["id"]
    assert fork["root_id"] == water["id"]
    assert fork["depth"] == 1
    original = client.get(f"{API}/subagents/{water['id']}").get_json()
    assert original["fork_count"] == 1
    forks = client.get(f"{API}/subagents/{water['id']}/forks").get_json()["items"]
    assert [f["id"] for f in forks] == [copy["id"]]
    lineage = client.get(f"{API}/subagents/{copy['id']}/lineage").get_json()
    assert [n["subagent"]["id"] for n in lineage["ancestors"]] == [water["id"]]
    # Reach and credit flow to the original: a use of the copy is a use of its lineage.
    tracker = make_user(engine, "tracker", kind="service", scopes=["events:write"])
    event = {
        "event_id": str(uuid.uuid4()),
        "user_id": carol.id,
        "subagent_id": copy["id"],
        "version_id": copy["latest_version"]["id"],
        "kind": "open",
        "occurred_at": utcnow().isoformat(),
    }
    logged = client.post(f"{API}/events", json={"events": [event]}, headers=tracker.headers)
    assert logged.status_code == 202
    stats = client.get(f"{API}/subagents/{water['id']}/stats", headers=alice.headers).get_json()
    assert stats["lineage"]["forks_by_others"] == 1
    assert stats["lineage"]["lineage_reach"] == 1
    assert stats["lineage"]["credit"][str(water["id"])]["descendant_users"] == 1
    # Answered: no offer left, and accepting again is the same fork.
    listed = client.get(f"{API}/subagents/{copy['id']}/near-copies", headers=bob.headers)
    assert listed.get_json()["items"] == []
    again = client.post(
        f"{API}/subagents/{copy['id']}/adopt-parent",
        json={"parent_id": water["id"]},
        headers=bob.headers,
    )
    assert again.status_code == 200
    assert again.get_json()["parent_id"] == water["id"]


def test_apps_sharing_only_a_template_are_not_copies(client, engine, alice, bob):
    carol = make_user(engine, "carol")
    catalog_of_templates(client, engine, alice, carol)
    lookalike = publish_app(client, bob, "sleep")
    assert lookalike["near_copies"] == []
    # Nor is one's own app a copy of itself under another name.
    mine = publish_app(client, alice, "water", name="My Second Water App")
    assert mine["near_copies"] == []


def test_nothing_is_offered_before_a_boilerplate_is_learned(client, alice, bob):
    publish_app(client, alice, "water")
    copy = publish_app(client, bob, "water", name="Hydration Buddy")
    assert copy["near_copies"] == []


def test_declining_a_near_identical_copy_reports_it_once_with_the_evidence(
    client, engine, alice, bob
):
    carol = make_user(engine, "carol")
    moderator = make_user(engine, "mod", role="moderator")
    water = catalog_of_templates(client, engine, alice, carol)
    copy = publish_app(client, bob, "water", name="Hydration Buddy")
    assert copy["near_copies"][0]["similarity"] >= 0.8
    url = f"{API}/subagents/{copy['id']}/near-copies/decline"
    assert client.post(url, headers=alice.headers).status_code == 403  # not hers to answer
    for _ in range(2):
        response = client.post(url, headers=bob.headers)
        assert response.status_code == 200, response.get_json()
        assert response.get_json()["parent_id"] is None
    [report] = client.get(f"{API}/reports", headers=moderator.headers).get_json()["items"]
    assert report["subagent_id"] == copy["id"]
    assert report["reason"] == "near_copy"
    evidence = report["near_copy"]
    assert evidence["original_id"] == water["id"]
    assert evidence["similarity"] >= 0.8
    assert evidence["shared_shingles"] > 0
    assert {"path": "config.js", "original_path": "config.js"}.items() <= evidence[
        "matching_files"
    ][0].items()
    assert client.get(f"{API}/reports", headers=bob.headers).status_code == 403
    # Declined: it can no longer be accepted, and the sweep reports nothing more.
    refused = client.post(
        f"{API}/subagents/{copy['id']}/adopt-parent",
        json={"parent_id": water["id"]},
        headers=bob.headers,
    )
    assert refused.status_code == 409
    with session_scope(engine) as session:
        near_copies.report_ignored(session, utcnow() + near_copies.OFFER_WINDOW * 2)
    assert len(_reports(engine)) == 1


def test_an_edited_copy_is_offered_but_not_reported(client, engine, alice, bob):
    carol = make_user(engine, "carol")
    catalog_of_templates(client, engine, alice, carol)
    edited = app_bundle("water", "Hydration Buddy")
    edited["files"]["config.js"] = (
        edited["files"]["config.js"]
        .replace('"glasses"', '"cups"')
        .replace('"refill"', '"topup"')
        .replace("note", "memo", 4)
    )
    body = {"title": "Hydration Buddy", "category": "health", "bundle": edited}
    response = client.post(f"{API}/subagents", json=body, headers=bob.headers)
    [offer] = response.get_json()["near_copies"]
    assert 0.35 <= offer["similarity"] < 0.8
    copy_id = response.get_json()["id"]
    client.post(f"{API}/subagents/{copy_id}/near-copies/decline", headers=bob.headers)
    assert _reports(engine) == []


def test_an_offer_ignored_past_its_window_is_reported_and_expires(client, engine, alice, bob):
    carol = make_user(engine, "carol")
    water = catalog_of_templates(client, engine, alice, carol)
    copy = publish_app(client, bob, "water", name="Hydration Buddy")
    with session_scope(engine) as session:
        assert near_copies.report_ignored(session, utcnow()) == {"ignored": 0}
        later = utcnow() + near_copies.OFFER_WINDOW + near_copies.OFFER_WINDOW
        assert near_copies.report_ignored(session, later) == {"ignored": 1}
        assert near_copies.report_ignored(session, later) == {"ignored": 0}
    [report] = _reports(engine)
    assert (report.subagent_id, report.reporter_id) == (copy["id"], None)
    refused = client.post(
        f"{API}/subagents/{copy['id']}/adopt-parent",
        json={"parent_id": water["id"]},
        headers=bob.headers,
    )
    assert refused.status_code == 409


def test_a_copy_that_was_installed_or_not_offered_cannot_adopt(client, engine, alice, bob):
    carol = make_user(engine, "carol")
    water = catalog_of_templates(client, engine, alice, carol)
    coffee_id = client.get(f"{API}/subagents").get_json()["items"]
    coffee_id = next(c["id"] for c in coffee_id if c["title"] == "Caffeine Log")
    copy = publish_app(client, bob, "water", name="Hydration Buddy")
    url = f"{API}/subagents/{copy['id']}/adopt-parent"
    not_offered = client.post(url, json={"parent_id": coffee_id}, headers=bob.headers)
    assert not_offered.status_code == 404
    stranger = client.post(url, json={"parent_id": water["id"]}, headers=carol.headers)
    assert stranger.status_code == 403
    bad = client.post(url, json={"parent_id": "water"}, headers=bob.headers)
    assert bad.status_code == 422
    assert bad.content_type == "application/problem+json"
    installed = client.post(f"{API}/subagents/{copy['id']}/install", json={}, headers=carol.headers)
    assert installed.status_code == 201
    late = client.post(url, json={"parent_id": water["id"]}, headers=bob.headers)
    assert late.status_code == 409
    assert client.get(f"{API}/subagents/{copy['id']}").get_json()["parent_id"] is None
    assert client.get(f"{API}/subagents/{water['id']}").get_json()["fork_count"] == 0


def test_private_and_unlisted_sub_agents_are_never_matched(client, engine, alice):
    """A hostile publisher who has the bytes of someone's private (or unlisted) app publishes
    them as their own: they learn nothing, no report is filed, and nothing is counted."""
    carol = make_user(engine, "carol")
    mallory = make_user(engine, "mallory")
    publish_app(client, carol, "coffee")
    publish_app(client, carol, "sleep")
    secret = publish_app(client, alice, "water", visibility="private")
    hidden = publish_app(client, alice, "steps", visibility="unlisted")
    learn_boilerplate(engine)
    for kind, name in (("water", "Totally Mine"), ("steps", "Walk It")):
        copy = publish_app(client, mallory, kind, name=name)
        assert copy["near_copies"] == []
        listed = client.get(f"{API}/subagents/{copy['id']}/near-copies", headers=mallory.headers)
        assert listed.get_json()["items"] == []
        declined = client.post(
            f"{API}/subagents/{copy['id']}/near-copies/decline", headers=mallory.headers
        )
        assert declined.status_code == 200
        refused = client.post(
            f"{API}/subagents/{copy['id']}/adopt-parent",
            json={"parent_id": secret["id"] if kind == "water" else hidden["id"]},
            headers=mallory.headers,
        )
        assert refused.status_code == 404  # not offered, and the private one is not there
    assert _reports(engine) == []
    with session_scope(engine) as session:
        assert session.execute(select(func.count(NearCopyOffer.id))).scalar_one() == 0
    # The control: once the app is public, the same copy is found (the test can fail).
    update = client.patch(
        f"{API}/subagents/{secret['id']}", json={"visibility": "public"}, headers=alice.headers
    )
    assert update.status_code == 200
    copy = publish_app(client, mallory, "water", name="Mine Again")
    assert [o["id"] for o in copy["near_copies"]] == [secret["id"]]


def test_a_private_root_is_still_checked_against_public_ones_and_never_reported(
    client, engine, alice, bob
):
    carol = make_user(engine, "carol")
    water = catalog_of_templates(client, engine, alice, carol)
    copy = publish_app(client, bob, "water", name="Hydration Buddy", visibility="private")
    assert [o["id"] for o in copy["near_copies"]] == [water["id"]]
    client.post(f"{API}/subagents/{copy['id']}/near-copies/decline", headers=bob.headers)
    assert _reports(engine) == []
    # Nor is the private copy a match for anyone else.
    dave = make_user(engine, "dave")
    again = publish_app(client, dave, "water", name="Drink Up")
    assert [o["id"] for o in again["near_copies"]] == [water["id"]]


def test_two_concurrent_accepts_make_one_fork(app, client, engine, alice, bob):
    carol = make_user(engine, "carol")
    water = catalog_of_templates(client, engine, alice, carol)
    copy = publish_app(client, bob, "water", name="Hydration Buddy")
    url = f"{API}/subagents/{copy['id']}/adopt-parent"
    barrier = threading.Barrier(4)
    codes = [0] * 4

    def accept(i: int) -> None:
        own_client = app.test_client()
        barrier.wait()
        codes[i] = own_client.post(
            url, json={"parent_id": water["id"]}, headers=bob.headers
        ).status_code

    threads = [threading.Thread(target=accept, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert codes == [200] * 4
    with session_scope(engine) as session:
        row = session.get(SubAgent, copy["id"])
        assert (row.parent_id, row.depth) == (water["id"], 1)
        assert session.get(SubAgent, water["id"]).fork_count == 1
        statuses = session.execute(select(NearCopyOffer.status)).scalars().all()
        assert statuses == ["accepted"]


def test_refresh_signs_what_was_published_before_signatures(client, engine, alice, bob):
    carol = make_user(engine, "carol")
    water = catalog_of_templates(client, engine, alice, carol)
    again = learn_boilerplate(engine)
    assert (again["changed"], again["signed"]) == (False, 0)  # same catalog, same boilerplate
    with session_scope(engine) as session:  # a catalog published before signatures existed
        session.execute(delete(NearCopySignature))
    backfill = learn_boilerplate(engine)
    assert (backfill["changed"], backfill["signed"]) == (False, 2)
    copy = publish_app(client, bob, "water", name="Hydration Buddy")
    assert [o["id"] for o in copy["near_copies"]] == [water["id"]]
