"""The fork's page tells its author of updates from upstream; the update's page shows each
file's merge and accepts or declines it with the page's CSRF token; nobody else sees either;
people who use the fork see the permission the update adds before they update."""

from __future__ import annotations

from tests.factories import make_user
from tests.functional.catalog.test_upstream import (
    API,
    APP_JS,
    FORK_JS,
    PARENT_V2_JS,
    SCOPES,
    offered_fork,
)
from tests.functional.web.test_actions import flashes
from tests.functional.web.test_pages import csrf_of, sign_in, text


def _family(client, alice, bob, fork_js: str, parent_js: str, scopes=SCOPES) -> tuple[int, int]:
    """The fork offered its parent's v2, and the offer's id."""
    _parent, fork = offered_fork(client, alice, bob, fork_js, parent_js, scopes)
    (proposal,) = client.get(
        f"{API}/subagents/{fork['id']}/upstream-updates", headers=bob.headers
    ).get_json()["items"]
    return fork["id"], proposal["id"]


def test_banner_diff_and_accept_for_the_author_only(app, client, alice, bob, engine):
    carol = make_user(engine, "carol")
    fork_id, proposal_id = _family(
        client, alice, bob, FORK_JS, PARENT_V2_JS, [*SCOPES, "sleep.read"]
    )
    page_url = f"/s/{fork_id}/upstream/{proposal_id}"

    # Carol uses the fork; she is not its author.
    carol_client = app.test_client()
    sign_in(carol_client, carol)
    token = csrf_of(carol_client, f"/s/{fork_id}")
    assert carol_client.post(f"/s/{fork_id}/import", data={"csrf": token}).status_code == 302
    assert "update from upstream" not in text(carol_client.get(f"/s/{fork_id}"))
    assert carol_client.get(page_url).status_code == 404
    forged = carol_client.post(page_url + "/accept", data={"csrf": token})
    assert forged.status_code == 404

    sign_in(client, bob)
    fork_page = text(client.get(f"/s/{fork_id}"))
    assert "1 update from upstream" in fork_page
    assert page_url in fork_page
    update = text(client.get(page_url))
    assert "merged-clean" in update and "app.js" in update
    assert "sleep.read" in update
    # Without the form's token nothing is accepted.
    assert client.post(page_url + "/accept", data={}).status_code == 400
    accepted = client.post(
        page_url + "/accept", data={"csrf": csrf_of(client, page_url)}, follow_redirects=True
    )
    assert accepted.status_code == 200
    assert flashes(text(accepted)) == ["Merged: v2 has the change of Water Tracker v2."]
    assert "update from upstream" not in text(accepted)

    # Carol is asked for the added permission before she updates.
    carol_page = text(carol_client.get(f"/s/{fork_id}"))
    assert "Update to v2" in carol_page
    assert "v2 also asks for your permission to:" in carol_page
    assert "sleep.read" in carol_page


def test_a_conflict_cannot_be_accepted_from_the_page(client, alice, bob):
    fork_id, proposal_id = _family(
        client, alice, bob, APP_JS.replace("3000", "2500"), APP_JS.replace("3000", "3500")
    )
    page_url = f"/s/{fork_id}/upstream/{proposal_id}"
    sign_in(client, bob)
    assert "conflicts" in text(client.get(f"/s/{fork_id}"))
    update = text(client.get(page_url))
    assert "&lt;&lt;&lt;&lt;&lt;&lt;&lt; fork" in update
    assert "both changed the same or adjacent lines" in update
    refused = client.post(
        page_url + "/accept", data={"csrf": csrf_of(client, page_url)}, follow_redirects=True
    )
    (message,) = flashes(text(refused))
    assert "conflicts (app.js)" in message
    declined = client.post(
        page_url + "/decline", data={"csrf": csrf_of(client, page_url)}, follow_redirects=True
    )
    assert flashes(text(declined)) == ["Declined the update from Water Tracker v2."]
