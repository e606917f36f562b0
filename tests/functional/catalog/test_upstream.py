"""Upstream updates through the API: a parent's new version is offered to each fork as a
three-way merge, which the fork's author accepts (a new version, "merged from ...") or
declines; conflicts go to the coding agent's queue; installed users are asked again for a
scope the merge adds; nobody else sees or decides a proposal."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from market.catalog.models import UpstreamProposal
from market.catalog.tasks import propose_upstream_updates_task
from market.catalog.upstream import propose_updates
from market.platform.db import session_scope
from tests.factories import listing, make_user

API = "/api/v1"
SCOPES = ["hydration.read", "hydration.write"]
APP_JS = "// the water tracker\nconst goal = 3000;\nconst unit = 'ml';\nconsole.log(goal);\n"


def tracker(app_js: str = APP_JS, *, scopes=SCOPES, extra_files=None) -> dict:
    return {
        "manifest": {"name": "Water Tracker", "entry": "index.html", "scopes": list(scopes)},
        "files": {
            "index.html": "<!doctype html><title>Water</title><script src=app.js></script>",
            "app.js": app_js,
            **(extra_files or {}),
        },
    }


@pytest.fixture
def carol(engine):
    return make_user(engine, "carol")


@pytest.fixture
def coder(engine):
    return make_user(engine, "coding-agent", kind="service", scopes=["publish:on-behalf"])


@pytest.fixture
def moderator(engine):
    return make_user(engine, "mod", role="moderator")


def _publish_parent(client, alice) -> dict:
    response = client.post(
        f"{API}/subagents", json=listing(bundle=tracker()), headers=alice.headers
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _fork(client, bob, parent_id: int, app_js: str, title: str = "Bob's tracker") -> dict:
    response = client.post(
        f"{API}/subagents/{parent_id}/forks",
        json={
            "title": title,
            "fork_request": "say it is mine",
            "bundle": tracker(app_js),
        },
        headers=bob.headers,
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _new_version(client, actor, subagent_id: int, bundle: dict, **extra):
    return client.post(
        f"{API}/subagents/{subagent_id}/versions",
        json={"changelog": "a change", "bundle": bundle, **extra},
        headers=actor.headers,
    )


def _updates(client, actor, fork_id: int) -> dict:
    response = client.get(f"{API}/subagents/{fork_id}/upstream-updates", headers=actor.headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def offered_fork(
    client, creator, forker, fork_js: str, parent_js: str, parent_scopes=SCOPES, *, name=""
) -> tuple[dict, dict]:
    """``creator``'s tracker, ``forker``'s fork of its v1 with ``fork_js``, and the parent's
    v2 with ``parent_js`` (asking for ``parent_scopes``), offered to the fork by the task
    that ran after it: (parent, fork)."""
    body = {"title": f"Water Tracker{name}", "category": "hydration", "bundle": tracker()}
    parent = client.post(f"{API}/subagents", json=body, headers=creator.headers).get_json()
    fork = _fork(client, forker, parent["id"], fork_js, title=f"Bob's tracker{name}")
    published = _new_version(
        client, creator, parent["id"], tracker(parent_js, scopes=parent_scopes)
    )
    assert published.status_code == 201, published.get_json()
    return parent, fork


def _count(engine) -> int:
    with session_scope(engine) as session:
        return session.execute(select(func.count(UpstreamProposal.id))).scalar_one()


# The fork edits the first line, the parent the last: a clean merge.
FORK_JS = APP_JS.replace("// the water tracker", "// Bob's water tracker")
PARENT_V2_JS = APP_JS.replace("console.log(goal);", "console.log('goal', goal);")


@pytest.fixture
def family(client, alice, bob):
    """Alice's tracker, Bob's fork of its v1."""
    parent = _publish_parent(client, alice)
    fork = _fork(client, bob, parent["id"], FORK_JS)
    return parent, fork


def test_publish_offers_a_merge_that_accept_makes_a_version_and_installs_consent_again(
    client, alice, bob, carol, family
):
    parent, fork = family
    assert (
        client.post(
            f"{API}/subagents/{fork['id']}/install", json={}, headers=carol.headers
        ).status_code
        == 201
    )

    v2 = tracker(
        PARENT_V2_JS, scopes=[*SCOPES, "sleep.read"], extra_files={"style.css": "body{}\n"}
    )
    assert _new_version(client, alice, parent["id"], v2).status_code == 201

    listed = _updates(client, bob, fork["id"])
    assert (listed["open_count"], listed["conflicted_count"]) == (1, 0)
    (proposal,) = listed["items"]
    assert (proposal["base_version"], proposal["upstream_version"]) == (1, 2)
    assert proposal["added_scopes"] == ["sleep.read"]
    statuses = {f["path"]: f["status"] for f in proposal["files"]}
    assert statuses == {
        "app.js": "merged-clean",
        "index.html": "unchanged",
        "style.css": "taken-from-upstream",
    }

    detail = client.get(f"{API}/upstream-updates/{proposal['id']}", headers=bob.headers)
    assert detail.status_code == 200
    diff = detail.get_json()["diff"]
    assert diff["manifest"]["scopes_added"] == ["sleep.read"]
    assert {f["path"] for f in diff["files"]} == {"app.js", "style.css"}

    accepted = client.post(f"{API}/upstream-updates/{proposal['id']}/accept", headers=bob.headers)
    assert accepted.status_code == 201, accepted.get_json()
    version = accepted.get_json()["version"]
    assert version["number"] == 2
    assert version["changelog"] == "merged from Water Tracker v2"
    assert accepted.get_json()["proposal"]["status"] == "accepted"
    files = client.get(
        f"{API}/subagents/{fork['id']}/versions/{version['id']}/bundle", headers=bob.headers
    ).get_json()["files"]
    assert files["app.js"] == FORK_JS.replace("console.log(goal);", "console.log('goal', goal);")
    assert files["style.css"] == "body{}\n"

    # Accepting again answers with the version it made, and makes no other.
    again = client.post(f"{API}/upstream-updates/{proposal['id']}/accept", headers=bob.headers)
    assert again.status_code == 200
    assert again.get_json()["version"]["id"] == version["id"]

    # Carol's install stays on what she consented to until she updates, which asks again.
    (install,) = client.get(f"{API}/me/installs", headers=carol.headers).get_json()["items"]
    assert install["granted_scopes"] == SCOPES
    assert install["version_id"] == fork["latest_version"]["id"]
    updated = client.post(f"{API}/subagents/{fork['id']}/install", json={}, headers=carol.headers)
    assert updated.get_json()["new_scopes"] == ["sleep.read"]

    # The parent's next version is merged from v2, what the fork now has.
    v3 = tracker(PARENT_V2_JS + "// v3\n", scopes=[*SCOPES, "sleep.read"])
    v3["files"]["style.css"] = "body{}\n"
    assert _new_version(client, alice, parent["id"], v3).status_code == 201
    newest = _updates(client, bob, fork["id"])["items"][0]
    assert (newest["base_version"], newest["upstream_version"]) == (2, 3)
    assert newest["files"] == [
        {"path": "app.js", "status": "merged-clean", "reason": ""},
        {"path": "index.html", "status": "unchanged", "reason": ""},
        {"path": "style.css", "status": "unchanged", "reason": ""},
    ]


def test_a_commit_stands_and_is_offered_when_the_suggestion_index_fails_to_catch_up(
    client, alice, bob, family, monkeypatch, caplog
):
    """The after-commit hooks run in turn once a publish has committed. The suggestion index's
    re-read failing (the database restarted just after the commit) must neither turn the
    committed version into an error, which its caller would retry to find nothing new, nor
    keep the hooks after it from offering the version to its forks."""
    from sqlalchemy.exc import OperationalError

    from market.suggestions.services import SuggestionService

    parent, fork = family

    def database_gone(self, session, subagent_ids):
        raise OperationalError("SELECT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(SuggestionService, "note_committed", database_gone)
    v2 = tracker(PARENT_V2_JS)
    with caplog.at_level("ERROR", logger="market.platform.db"):
        response = _new_version(client, alice, parent["id"], v2)
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["number"] == 2
    (record,) = [r for r in caplog.records if r.name == "market.platform.db"]
    assert "after a commit" in record.getMessage()
    (proposal,) = _updates(client, bob, fork["id"])["items"]
    assert proposal["upstream_version"] == 2


def test_a_version_whose_offer_task_was_lost_is_offered_by_the_sweep(
    app, client, engine, alice, bob, family, monkeypatch
):
    """The process died between the publish's commit and the enqueue, or the queue was away:
    the version stays pending, and the sweep (beat) offers it once past the grace given to its
    own task; a version offered by its own task is not pending."""
    from datetime import timedelta

    from market.catalog import tasks
    from market.catalog.models import Version
    from market.platform.celery_app import celery_config
    from market.platform.config import Settings
    from market.platform.state import app_state

    parent, fork = family
    task = app_state(app).celery.tasks[propose_upstream_updates_task.name]

    def queue_away(*args, **kwargs):
        raise ConnectionError("the queue is away")

    with monkeypatch.context() as patch:
        patch.setattr(task, "delay", queue_away)
        response = _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS))
    assert response.status_code == 201, response.get_json()

    def pending() -> list[int]:
        with session_scope(engine) as session:
            return list(session.scalars(select(Version.number).where(Version.offer_pending)))

    assert pending() == [2] and _updates(client, bob, fork["id"])["items"] == []
    schedule = celery_config(Settings())["beat_schedule"]
    assert schedule["offer-pending-upstream"]["task"] == tasks.offer_pending_upstream_task.name
    assert tasks.offer_pending_upstream_task.apply().get() == {"versions": 0, "proposals": 0}
    monkeypatch.setattr(tasks, "OFFER_GRACE", timedelta(0))
    assert tasks.offer_pending_upstream_task.apply().get() == {"versions": 1, "proposals": 1}
    (proposal,) = _updates(client, bob, fork["id"])["items"]
    assert proposal["upstream_version"] == 2
    assert pending() == []
    assert tasks.offer_pending_upstream_task.apply().get() == {"versions": 0, "proposals": 0}
    # Offered by its own task, a version is never pending.
    v3 = tracker(PARENT_V2_JS.replace("goal", "target"))
    assert _new_version(client, alice, parent["id"], v3).status_code == 201
    assert pending() == []


def test_a_newer_parent_version_supersedes_the_open_proposal(client, alice, bob, family):
    parent, fork = family
    _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS))
    _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS + "// v3\n"))
    items = _updates(client, bob, fork["id"])["items"]
    assert [(p["upstream_version"], p["status"]) for p in items] == [
        (3, "open"),
        (2, "superseded"),
    ]
    assert items[0]["base_version"] == 1
    refused = client.post(f"{API}/upstream-updates/{items[1]['id']}/accept", headers=bob.headers)
    assert refused.status_code == 409
    assert "superseded" in refused.get_json()["detail"]


def test_the_task_run_twice_makes_one_proposal_per_fork(app, client, engine, alice, bob, family):
    parent, _fork_row = family
    v2 = _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS)).get_json()
    assert _count(engine) == 1
    with app.app_context():
        first = propose_upstream_updates_task.delay(v2["id"]).get()
        second = propose_upstream_updates_task.delay(v2["id"]).get()
    assert first["proposals"] == second["proposals"]
    assert _count(engine) == 1


def test_two_workers_racing_make_one_proposal(app, client, engine, alice, bob, family):
    parent, _fork_row = family
    # Published through a session of its own, so no task has run yet.
    v2 = _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS)).get_json()
    with session_scope(engine) as session:
        session.execute(UpstreamProposal.__table__.delete())
    barrier = threading.Barrier(4)
    made: list[list[int]] = []
    errors: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        try:
            made.append(propose_updates(engine, v2["id"]))
        except BaseException as error:  # reported below, with the others' results
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert len({tuple(ids) for ids in made}) == 1
    assert _count(engine) == 1


def test_only_the_forks_author_sees_and_decides(client, alice, bob, carol, moderator, family):
    parent, fork = family
    _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS))
    (proposal,) = _updates(client, bob, fork["id"])["items"]
    url = f"{API}/upstream-updates/{proposal['id']}"

    # A second offer, so that a page of one would have a next page to hint at.
    _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS + "// v3\n"))
    # The parent's author and a stranger: nothing listed, the proposal a 404 (as if absent).
    for other in (alice, carol):
        paged = client.get(
            f"{API}/subagents/{fork['id']}/upstream-updates?limit=1", headers=other.headers
        ).get_json()
        assert (paged["items"], paged["next_cursor"]) == ([], None)
        assert _updates(client, other, fork["id"]) == {
            "items": [],
            "next_cursor": None,
            "open_count": 0,
            "conflicted_count": 0,
        }
        for method, path in (("GET", url), ("POST", url + "/accept"), ("POST", url + "/decline")):
            response = client.open(path, method=method, headers=other.headers)
            assert response.status_code == 404, (other.handle, path)
            assert response.content_type == "application/problem+json"
    assert client.get(url).status_code == 404
    assert client.post(url + "/accept").status_code == 401
    # A moderator reads it, and may not decide it.
    assert client.get(url, headers=moderator.headers).status_code == 200
    assert client.post(url + "/accept", headers=moderator.headers).status_code == 403
    assert _updates(client, bob, fork["id"])["items"][0]["status"] == "open"
    # Declining the superseded one is refused; the newest is still Bob's to decide.
    assert client.post(url + "/decline", headers=bob.headers).status_code == 409
    url = f"{API}/upstream-updates/{_updates(client, bob, fork['id'])['items'][0]['id']}"

    declined = client.post(url + "/decline", headers=bob.headers)
    assert declined.status_code == 200 and declined.get_json()["status"] == "declined"
    assert client.post(url + "/decline", headers=bob.headers).status_code == 200
    assert client.post(url + "/accept", headers=bob.headers).status_code == 409


def test_a_private_parents_change_is_never_offered_to_who_cannot_see_it(
    client, engine, alice, bob, family
):
    parent, fork = family
    _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS))
    (proposal,) = _updates(client, bob, fork["id"])["items"]
    made_private = client.patch(
        f"{API}/subagents/{parent['id']}", json={"visibility": "private"}, headers=alice.headers
    )
    assert made_private.status_code == 200
    # The open proposal is gone from Bob's view and cannot be accepted.
    assert _updates(client, bob, fork["id"])["items"] == []
    url = f"{API}/upstream-updates/{proposal['id']}"
    assert client.get(url, headers=bob.headers).status_code == 404
    assert client.post(url + "/accept", headers=bob.headers).status_code == 404
    # And the private parent's next version makes no proposal at all.
    _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS + "// v3\n"))
    assert _count(engine) == 1


def test_yanked_forks_get_no_proposal(client, engine, alice, bob, family):
    parent, fork = family
    yanked = client.post(
        f"{API}/subagents/{fork['id']}/yank", json={"reason": "retired"}, headers=bob.headers
    )
    assert yanked.status_code == 200
    _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS))
    assert _count(engine) == 0


def test_a_conflict_goes_to_the_coding_agents_queue_and_cannot_be_accepted(
    client, alice, bob, carol, coder
):
    parent = _publish_parent(client, alice)
    fork = _fork(client, bob, parent["id"], APP_JS.replace("3000", "2500"))
    _new_version(client, alice, parent["id"], tracker(APP_JS.replace("3000", "3500")))
    listed = _updates(client, bob, fork["id"])
    assert (listed["open_count"], listed["conflicted_count"]) == (1, 1)
    (proposal,) = listed["items"]
    assert {f["path"]: f["status"] for f in proposal["files"]}["app.js"] == "conflict"

    detail = client.get(f"{API}/upstream-updates/{proposal['id']}", headers=bob.headers).get_json()
    (conflict,) = detail["conflicts"]["files"]
    assert conflict["regions"] == [
        {
            "base": "const goal = 3000;\n",
            "fork": "const goal = 2500;\n",
            "upstream": "const goal = 3500;\n",
        }
    ]
    (changed,) = [f for f in detail["diff"]["files"] if f["path"] == "app.js"]
    assert "+<<<<<<< fork" in changed["diff"] and "+>>>>>>> upstream" in changed["diff"]

    refused = client.post(f"{API}/upstream-updates/{proposal['id']}/accept", headers=bob.headers)
    assert refused.status_code == 409
    assert refused.content_type == "application/problem+json"
    assert "app.js" in refused.get_json()["detail"]
    assert _updates(client, bob, fork["id"])["items"][0]["status"] == "open"

    queue = client.get(f"{API}/upstream-conflicts", headers=coder.headers).get_json()
    assert [p["id"] for p in queue["items"]] == [proposal["id"]]
    # The coding agent reads it, to resolve it; a person sees only their own forks' conflicts.
    assert (
        client.get(f"{API}/upstream-updates/{proposal['id']}", headers=coder.headers).status_code
        == 200
    )
    assert [
        p["id"]
        for p in client.get(f"{API}/upstream-conflicts", headers=bob.headers).get_json()["items"]
    ] == [proposal["id"]]
    assert client.get(f"{API}/upstream-conflicts", headers=carol.headers).get_json()["items"] == []
    assert client.get(f"{API}/upstream-conflicts").status_code == 401


def test_accept_refuses_once_the_fork_moved_on_and_refresh_merges_again(client, alice, bob, family):
    parent, fork = family
    _new_version(client, alice, parent["id"], tracker(PARENT_V2_JS))
    (proposal,) = _updates(client, bob, fork["id"])["items"]
    moved = FORK_JS.replace("const goal = 3000;", "const goal = 2000;")
    assert _new_version(client, bob, fork["id"], tracker(moved)).status_code == 201

    url = f"{API}/upstream-updates/{proposal['id']}"
    refused = client.post(url + "/accept", headers=bob.headers)
    assert refused.status_code == 409
    assert f"/upstream-updates/{proposal['id']}/refresh" in refused.get_json()["detail"]

    refreshed = client.post(url + "/refresh", headers=bob.headers)
    assert refreshed.status_code == 200
    assert (refreshed.get_json()["fork_version"], refreshed.get_json()["stale"]) == (2, False)
    accepted = client.post(url + "/accept", headers=bob.headers)
    assert accepted.status_code == 201
    assert accepted.get_json()["version"]["number"] == 3
    files = client.get(
        f"{API}/subagents/{fork['id']}/versions/{accepted.get_json()['version']['id']}/bundle",
        headers=bob.headers,
    ).get_json()["files"]
    assert files["app.js"] == moved.replace("console.log(goal);", "console.log('goal', goal);")


def test_the_coding_agent_resolves_a_conflict_by_publishing_for_the_author(
    client, alice, bob, carol, coder
):
    parent = _publish_parent(client, alice)
    fork = _fork(client, bob, parent["id"], APP_JS.replace("3000", "2500"))
    _new_version(client, alice, parent["id"], tracker(APP_JS.replace("3000", "3500")))
    (proposal,) = _updates(client, bob, fork["id"])["items"]
    resolved = tracker(APP_JS.replace("3000", "2500").replace("'ml'", "'millilitres'"))

    # Naming another sub-agent's update, or publishing as someone else, changes nothing.
    wrong = _new_version(
        client, alice, parent["id"], tracker("// v3\n"), upstream_update_id=proposal["id"]
    )
    assert wrong.status_code == 404
    stranger = _new_version(client, carol, fork["id"], resolved, upstream_update_id=proposal["id"])
    assert stranger.status_code == 403
    published = _new_version(
        client,
        coder,
        fork["id"],
        resolved,
        on_behalf_of="bob",
        upstream_update_id=proposal["id"],
    )
    assert published.status_code == 201, published.get_json()
    (after,) = _updates(client, bob, fork["id"])["items"]
    assert (after["status"], after["merged_version_id"]) == ("accepted", published.get_json()["id"])
    assert client.get(f"{API}/upstream-conflicts", headers=coder.headers).get_json()["items"] == []

    # The parent's next version is merged from the version the resolution took in.
    _new_version(client, alice, parent["id"], tracker(APP_JS.replace("3000", "3500") + "// v3\n"))
    newest = _updates(client, bob, fork["id"])["items"][0]
    assert (newest["base_version"], newest["upstream_version"], newest["conflicted"]) == (
        2,
        3,
        False,
    )
