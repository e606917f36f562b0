"""The web acts as well as reads: uninstall (from the sub-agent page and from My installs),
rate and comment through the rating service, and My fork requests with their status."""

from __future__ import annotations

import html
import re

import pytest
from sqlmodel import select

from market.catalog.models import Install, SubAgent
from market.platform.db import session_scope
from market.usage.models import Feedback
from tests.factories import bundle, fork, make_user, publish
from tests.functional.web.test_pages import CSRF, csrf_of, sign_in, text


@pytest.fixture
def world(client, engine):
    alice = make_user(engine, "alice", display_name="Alice Creator")
    bob = make_user(engine, "bob", display_name="Bob Importer")
    root = publish(client, alice, title="Water Tracker", summary="Three litres a day.")
    other = publish(client, alice, title="Sleep Diary", category="sleep")
    return {"alice": alice, "bob": bob, "root": root["id"], "other": other["id"]}


def import_on_the_page(client, subagent_id: int) -> None:
    token = csrf_of(client, f"/s/{subagent_id}")
    assert client.post(f"/s/{subagent_id}/import", data={"csrf": token}).status_code == 302


def install_of(engine, user_id: int, subagent_id: int) -> Install | None:
    with session_scope(engine) as session:
        return session.exec(
            select(Install).where(Install.user_id == user_id, Install.subagent_id == subagent_id)
        ).first()


def install_count(engine, subagent_id: int) -> int:
    with session_scope(engine) as session:
        return session.get(SubAgent, subagent_id).install_count


def ratings_of(engine, user_id: int) -> list[Feedback]:
    with session_scope(engine) as session:
        return list(session.exec(select(Feedback).where(Feedback.user_id == user_id)))


def latest_version(engine, subagent_id: int) -> int:
    with session_scope(engine) as session:
        return session.get(SubAgent, subagent_id).latest_version_id


def flashes(page: str) -> list[str]:
    return [html.unescape(m) for m in re.findall(r'class="flash flash-\w+">([^<]*)<', page)]


# ---- uninstall ---------------------------------------------------------------------------


def test_uninstall_from_the_sub_agent_page(client, engine, world):
    bob, root = world["bob"], world["root"]
    sign_in(client, bob)
    assert "Uninstall" not in text(client.get(f"/s/{root}"))  # nothing to uninstall yet
    import_on_the_page(client, root)
    page = text(client.get(f"/s/{root}"))
    assert f'action="/s/{root}/uninstall"' in page
    token = CSRF.search(page).group(1)
    response = client.post(f"/s/{root}/uninstall", data={"csrf": token})
    assert response.status_code == 302
    assert response.headers["Location"] == f"/s/{root}"
    after = text(client.get(f"/s/{root}"))
    assert "Removed “Water Tracker” from your agent." in flashes(after)
    assert ">Import<" in after and f'action="/s/{root}/uninstall"' not in after
    assert install_of(engine, bob.id, root).active is False
    assert install_count(engine, root) == 0
    assert "Water Tracker" not in text(client.get("/me/installs"))


def test_uninstall_from_my_installs_goes_back_there(client, engine, world):
    bob, root, other = world["bob"], world["root"], world["other"]
    sign_in(client, bob)
    import_on_the_page(client, root)
    import_on_the_page(client, other)
    listing = text(client.get("/me/installs"))
    assert f'action="/s/{root}/uninstall"' in listing
    assert f'action="/s/{other}/uninstall"' in listing
    assert 'name="next" value="/me/installs"' in listing
    token = CSRF.search(listing).group(1)
    response = client.post(f"/s/{root}/uninstall", data={"csrf": token, "next": "/me/installs"})
    assert response.headers["Location"] == "/me/installs"
    listing = text(client.get("/me/installs"))
    assert "Removed “Water Tracker” from your agent." in flashes(listing)
    assert f'href="/s/{root}"' not in listing and f'href="/s/{other}"' in listing


def test_uninstall_never_goes_back_to_another_site(client, engine, world):
    bob, root = world["bob"], world["root"]
    sign_in(client, bob)
    import_on_the_page(client, root)
    token = csrf_of(client, "/me/installs")
    response = client.post(
        f"/s/{root}/uninstall", data={"csrf": token, "next": "https://evil.example/"}
    )
    assert response.status_code == 302 and response.headers["Location"] == "/"
    assert install_of(engine, bob.id, root).active is False


def test_someone_elses_install_cannot_be_uninstalled(client, engine, world):
    alice, bob, root = world["alice"], world["bob"], world["root"]
    sign_in(client, bob)
    import_on_the_page(client, root)
    sign_in(client, alice)  # the same browser, now signed in as someone else
    token = csrf_of(client, f"/s/{root}")
    response = client.post(f"/s/{root}/uninstall", data={"csrf": token})
    assert response.status_code == 302
    assert "“Water Tracker” was not in your agent." in flashes(text(client.get(f"/s/{root}")))
    assert install_of(engine, bob.id, root).active is True
    assert install_count(engine, root) == 1


def test_uninstall_refuses_forms_without_the_csrf_token_or_from_elsewhere(client, engine, world):
    bob, root = world["bob"], world["root"]
    sign_in(client, bob)
    import_on_the_page(client, root)
    assert client.post(f"/s/{root}/uninstall", data={}).status_code == 400
    assert client.post(f"/s/{root}/uninstall", data={"csrf": "forged"}).status_code == 400
    token = csrf_of(client, f"/s/{root}")
    cross = client.post(
        f"/s/{root}/uninstall", data={"csrf": token}, headers={"Origin": "https://evil.example"}
    )
    assert cross.status_code == 403
    assert install_of(engine, bob.id, root).active is True


def test_signed_out_uninstall_goes_to_sign_in(client, engine, world):
    root = world["root"]
    token = csrf_of(client)  # an anonymous session has a CSRF token too
    response = client.post(f"/s/{root}/uninstall", data={"csrf": token})
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/signin?next=")


# ---- rate and comment --------------------------------------------------------------------


def rate(client, subagent_id: int, **fields):
    """Send the page's rating form (its CSRF token and version) with these fields."""
    page = text(client.get(f"/s/{subagent_id}"))
    data = {
        "csrf": CSRF.search(page).group(1),
        "version_id": re.search(r'name="version_id" value="(\d+)"', page).group(1),
        **fields,
    }
    return client.post(f"/s/{subagent_id}/rate", data=data)


def test_signed_out_visitors_see_a_sign_in_link_not_a_form(client, world):
    page = text(client.get(f"/s/{world['root']}"))
    assert ">Sign in to rate</a>" in page
    assert f"/signin?next=/s/{world['root']}%23rate" in page
    assert f'action="/s/{world["root"]}/rate"' not in page and 'name="stars"' not in page


def test_rate_and_comment_then_edit_shows_the_current_rating(client, engine, world):
    bob, root = world["bob"], world["root"]
    sign_in(client, bob)
    import_on_the_page(client, root)
    page = text(client.get(f"/s/{root}"))
    assert "Rate it" in page and "Post my rating" in page
    assert re.findall(r'type="radio" name="stars" value="(\d)"', page) == list("12345")
    assert " checked" not in page.split('id="rate"')[1].split("</form>")[0]
    response = rate(
        client, root, stars="4", comment="Use it every morning.", tags=["love it", "wants export"]
    )
    assert response.status_code == 302
    assert response.headers["Location"] == f"/s/{root}#rate"
    page = text(client.get(f"/s/{root}"))
    assert "Thanks: your rating is on the page." in flashes(page)
    assert "Use it every morning." in page and "Bob Importer" in page  # in the comments
    form = page.split('id="rate"')[1].split("</form>")[0]
    assert "Your rating" in form and "Update my rating" in form
    assert re.findall(r'name="stars" value="(\d)" required checked', form) == ["4"]
    assert re.findall(r'name="tags" value="([^"]+)" checked', form) == ["love it", "wants export"]
    assert ">Use it every morning.</textarea>" in form
    (stored,) = ratings_of(engine, bob.id)
    assert (stored.scale, stored.rating, stored.comment) == ("stars", 4, "Use it every morning.")
    assert stored.tags == ["love it", "wants export"]
    assert stored.version_id == latest_version(engine, root)

    rate(client, root, stars="2", comment="It lost an entry.", tags=["crashes"])
    page = text(client.get(f"/s/{root}"))
    assert "Your rating is updated." in flashes(page)
    (stored,) = ratings_of(engine, bob.id)  # replaced, not added
    assert (stored.rating, stored.comment, stored.tags) == (2, "It lost an entry.", ["crashes"])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "Choose from 1 to 5 stars."),
        ({"stars": "9"}, "Choose from 1 to 5 stars."),
        ({"stars": "four"}, "Choose from 1 to 5 stars."),
        ({"stars": "4", "comment": "x" * 1001}, "A comment is plain text of at most 1,000"),
        ({"stars": "4", "comment": "bad\x00byte"}, "A comment is plain text of at most 1,000"),
        ({"stars": "4", "tags": ["<script>"]}, "Pick tags from the list."),
        ({"stars": "4", "version_id": "abc"}, "That version is not one of this sub-agent's."),
    ],
)
def test_bad_rating_forms_say_what_is_wrong_and_store_nothing(
    client, engine, world, fields, message
):
    bob, root = world["bob"], world["root"]
    sign_in(client, bob)
    import_on_the_page(client, root)
    response = rate(client, root, **fields)
    assert response.status_code == 302
    assert any(m.startswith(message) for m in flashes(text(client.get(f"/s/{root}"))))
    assert ratings_of(engine, bob.id) == []


def test_a_version_of_another_sub_agent_is_refused(client, engine, world):
    bob, root, other = world["bob"], world["root"], world["other"]
    sign_in(client, bob)
    import_on_the_page(client, root)
    rate(client, root, stars="5", version_id=str(latest_version(engine, other)))
    assert f"Sub-agent {root} has no version" in " ".join(flashes(text(client.get(f"/s/{root}"))))
    assert ratings_of(engine, bob.id) == []


def test_a_person_the_rating_service_refuses_gets_its_reason_and_nothing_is_stored(
    client, engine, world
):
    # Signed in with a token that may install but not rate: the service says no, the page
    # says why.
    carol = make_user(engine, "carol", scopes=["install"])
    root = world["root"]
    sign_in(client, carol)
    import_on_the_page(client, root)
    assert rate(client, root, stars="5", comment="Great").status_code == 302
    page = text(client.get(f"/s/{root}"))
    assert "This token lacks the `feedback` scope." in flashes(page)
    assert ratings_of(engine, carol.id) == []
    assert '<p class="comment-text">Great</p>' not in page


def test_rating_refuses_forms_without_the_csrf_token_and_signed_out_posts(client, engine, world):
    bob, root = world["bob"], world["root"]
    version = str(latest_version(engine, root))
    anonymous = client.post(
        f"/s/{root}/rate", data={"csrf": csrf_of(client), "stars": "5", "version_id": version}
    )
    assert anonymous.status_code == 302
    assert anonymous.headers["Location"].startswith("/signin?next=")
    sign_in(client, bob)
    import_on_the_page(client, root)
    forged = client.post(
        f"/s/{root}/rate", data={"csrf": "forged", "stars": "5", "version_id": version}
    )
    assert forged.status_code == 400
    token = csrf_of(client, f"/s/{root}")
    cross = client.post(
        f"/s/{root}/rate",
        data={"csrf": token, "stars": "5", "version_id": version},
        headers={"Origin": "https://evil.example"},
    )
    assert cross.status_code == 403
    assert ratings_of(engine, bob.id) == []


def test_the_form_rates_the_version_in_the_persons_agent(client, engine, world):
    alice, bob, root = world["alice"], world["bob"], world["root"]
    sign_in(client, bob)
    import_on_the_page(client, root)
    installed = latest_version(engine, root)
    newer = client.post(
        f"/api/v1/subagents/{root}/versions",
        json={"bundle": bundle("v2"), "changelog": "v2"},
        headers=alice.headers,
    )
    assert newer.status_code == 201, newer.get_json()
    page = text(client.get(f"/s/{root}"))
    assert f'name="version_id" value="{installed}"' in page
    rate(client, root, stars="3")
    (stored,) = ratings_of(engine, bob.id)
    assert stored.version_id == installed


# ---- my fork requests --------------------------------------------------------------------


def test_my_fork_requests_needs_a_sign_in_and_says_when_there_are_none(client, world):
    signed_out = client.get("/me/fork-requests")
    assert signed_out.status_code == 302
    assert signed_out.headers["Location"].startswith("/signin?next=")
    sign_in(client, world["bob"])
    page = text(client.get("/me/fork-requests"))
    assert 'href="/me/fork-requests"' in page  # in the header, next to My installs
    assert "You have not asked for a version of your own yet." in page


def test_my_fork_requests_lists_mine_open_then_fulfilled_with_the_fork(client, engine, world):
    alice, bob, root, other = world["alice"], world["bob"], world["root"], world["other"]
    coder = make_user(engine, "coding-agent", kind="service", scopes=["publish:on-behalf"])
    sign_in(client, alice)  # someone else's request never shows on bob's page
    token = csrf_of(client, f"/s/{other}")
    client.post(f"/s/{other}/customize", data={"csrf": token, "text": "alice wants dark mode"})
    sign_in(client, bob)
    for subagent_id, wish in ((root, "use millilitres"), (other, "remind me at ten")):
        token = csrf_of(client, f"/s/{subagent_id}")
        client.post(f"/s/{subagent_id}/customize", data={"csrf": token, "text": wish})
    page = text(client.get("/me/fork-requests"))
    assert "alice wants dark mode" not in page
    assert page.index("remind me at ten") < page.index("use millilitres")  # newest first
    assert page.count('class="chip request-open">Open<') == 2
    assert "Waiting for the coding agent" in page

    queue = client.get("/api/v1/fork-requests?status=open", headers=coder.headers).get_json()
    request_id = next(r["id"] for r in queue["items"] if r["text"] == "use millilitres")
    made = fork(
        client,
        coder,
        root,
        "millilitres",
        title="Water Tracker in millilitres",
        on_behalf_of="bob",
        fork_request_id=request_id,
    )
    page = text(client.get("/me/fork-requests"))
    assert page.count('class="chip request-open">Open<') == 1
    assert 'class="chip request-fulfilled">Fulfilled<' in page
    assert f'<a href="/s/{made["id"]}">Water Tracker in millilitres</a>' in page


def test_my_fork_requests_pages_through_older_ones(client, engine, world, monkeypatch):
    from market.catalog import views

    monkeypatch.setattr(views, "PAGE_SIZE", 2)
    bob, root = world["bob"], world["root"]
    sign_in(client, bob)
    token = csrf_of(client, f"/s/{root}")
    for n in range(3):
        client.post(f"/s/{root}/customize", data={"csrf": token, "text": f"wish number {n}"})
    first = text(client.get("/me/fork-requests"))
    assert "wish number 2" in first and "wish number 1" in first and "wish number 0" not in first
    older = re.search(r'href="(/me/fork-requests\?cursor=[^"]+)" rel="next"', first).group(1)
    second = text(client.get(html.unescape(older)))
    assert "wish number 0" in second and "wish number 2" not in second
    assert client.get("/me/fork-requests?cursor=garbage").status_code == 400


def test_the_page_says_why_someone_may_not_rate_instead_of_a_form(client, engine, world):
    """The ratings module's rule decides (never restated here): the author and a person who
    never installed or used it see its reason, not a form; after importing, the form."""
    sign_in(client, world["alice"])
    own = text(client.get(f"/s/{world['root']}"))
    assert "Authors do not rate their own sub-agents." in own
    assert 'name="stars"' not in own
    client.post("/signout", data={"csrf": csrf_of(client)})
    sign_in(client, world["bob"])
    stranger = text(client.get(f"/s/{world['root']}"))
    assert "Only people who installed or used a sub-agent rate it." in stranger
    assert 'name="stars"' not in stranger
    import_on_the_page(client, world["root"])
    assert 'name="stars"' in text(client.get(f"/s/{world['root']}"))
