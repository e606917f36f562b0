"""The web's sign-in and previews: sign-in redirects stay on this site, signing out ends the session
for every copy of its cookie, and a preview is never served as the page itself."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlmodel import select, update

from market.catalog.maintenance import delete_dead_web_sessions
from market.catalog.models import Install
from market.identity.models import WebSession
from market.platform.db import session_scope
from market.platform.state import app_state, install_state
from market.platform.time import utcnow
from tests.factories import FRAMED, bundle, make_user, publish

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
NEXT = re.compile(r'name="next" value="([^"]*)"')
COOKIE = "sprig_session"


def text(response) -> str:
    return response.get_data(as_text=True)


def csrf_of(client, path: str = "/signin") -> str:
    match = CSRF.search(text(client.get(path)))
    assert match, f"no CSRF field on {path}"
    return match.group(1)


def sign_in(client, actor, next_path: str = "/"):
    response = client.post(
        "/signin", data={"csrf": csrf_of(client), "token": actor.token, "next": next_path}
    )
    assert response.status_code == 302, text(response)
    return response


@pytest.fixture
def bob(engine):
    return make_user(engine, "bob", display_name="Bob Importer")


# ---- sign-in redirects only to a path of this site -------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "/\t/evil.example",  # browsers drop the tab: //evil.example
        "/\n/evil.example",
        "/\r\n/evil.example",
        " //evil.example",
        "/ /evil.example",
        "/\u3000/evil.example",  # an ideographic space
        "/\u200b/evil.example",  # a zero-width space
        "/\x00/evil.example",
        "/\\evil.example",
        "\\\\evil.example",
        "//evil.example",
        "///evil.example",
        "/..//evil.example",
        "/s/1/..//evil.example",
        "https://evil.example/",
        "https:evil.example",
        "javascript:alert(1)",
        "evil.example",
        "",
    ],
)
def test_sign_in_never_redirects_off_this_site(client, bob, target):
    assert sign_in(client, bob, target).headers["Location"] == "/"


def test_the_probes_next_is_dropped_from_the_sign_in_form_and_the_redirect(client, bob):
    page = text(client.get("/signin?next=/%09/evil.example"))
    assert NEXT.search(page).group(1) == "/"
    response = client.post(
        "/signin", data={"csrf": CSRF.search(page).group(1), "token": bob.token, "next": "/\t/x"}
    )
    assert response.headers["Location"] == "/"


@pytest.mark.parametrize(
    "target", ["/s/12", "/s/12#customize", "/me/installs?cursor=ab%2Fcd", "/?q=a//b&sort=new"]
)
def test_sign_in_returns_to_a_path_of_this_site(client, bob, target):
    assert NEXT.search(text(client.get("/signin", query_string={"next": target}))).group(1) == (
        target.replace("&", "&amp;")
    )
    assert sign_in(client, bob, target).headers["Location"] == target


# ---- signing out ends the session on the server ---------------------------------------


def copy_of_cookie(client) -> str:
    return client.get_cookie(COOKIE).value


def browser_with(app, cookie: str):
    other = app.test_client()
    other.set_cookie(COOKIE, cookie)
    return other


def signed_in_as_demo_person(app, client, handle: str) -> None:
    state = app_state(app)
    install_state(
        app, replace(state, settings=state.settings.with_overrides({"demo_signin": True}))
    )
    picked = client.post("/signin", data={"csrf": csrf_of(client), "demo_handle": handle})
    assert picked.status_code == 302


@pytest.mark.parametrize("how", ["token", "demo picker"])
def test_a_cookie_copied_before_sign_out_signs_no_one_in_after_it(app, client, engine, bob, how):
    root = publish(client, make_user(engine, "alice"), title="Water Tracker")["id"]
    if how == "token":
        sign_in(client, bob)
    else:
        signed_in_as_demo_person(app, client, "bob")
    form_token = csrf_of(client, f"/s/{root}")
    copied = copy_of_cookie(client)
    # The copy works while the session lives (so what follows tests the sign-out).
    assert browser_with(app, copied).get("/me/installs").status_code == 200

    assert client.post("/signout", data={"csrf": csrf_of(client, "/")}).status_code == 302

    replay = browser_with(app, copied)
    page = replay.get("/me/installs")
    assert page.status_code == 302 and page.headers["Location"].startswith("/signin")
    assert "Sign out" not in text(replay.get(f"/s/{root}"))
    imported = browser_with(app, copied).post(f"/s/{root}/import", data={"csrf": form_token})
    assert imported.status_code == 302 and imported.headers["Location"].startswith("/signin")
    with session_scope(engine) as session:
        assert session.exec(select(Install).where(Install.user_id == bob.id)).first() is None
        assert session.exec(select(WebSession.ended_at)).one() is not None


def test_signing_in_again_ends_the_browsers_previous_session(app, client, engine, bob):
    sign_in(client, bob)
    copied = copy_of_cookie(client)
    sign_in(client, make_user(engine, "carol"))
    assert browser_with(app, copied).get("/me/installs").status_code == 302
    assert client.get("/me/installs").status_code == 200


def test_the_nightly_job_deletes_ended_and_expired_sessions_and_keeps_live_ones(
    app, client, engine, bob
):
    sign_in(client, bob)
    ended = copy_of_cookie(client)
    sign_in(client, bob)  # ends the first session, starts a second one
    live = copy_of_cookie(client)
    expiring = app.test_client()
    sign_in(expiring, bob)
    with session_scope(engine) as session:
        rows = session.exec(select(WebSession).order_by(WebSession.id)).all()
        assert [row.ended_at is None for row in rows] == [False, True, True]
        rows[2].expires_at = utcnow() - timedelta(seconds=1)
        session.add(rows[2])
    with session_scope(engine) as session:
        assert delete_dead_web_sessions(session, utcnow()) == {"deleted": 2}
    with session_scope(engine) as session:
        assert session.exec(select(WebSession.id)).all() == [rows[1].id]
        assert delete_dead_web_sessions(session, utcnow()) == {"deleted": 0}
    assert browser_with(app, live).get("/me/installs").status_code == 200
    for dead in (ended, expiring.get_cookie(COOKIE).value):
        assert browser_with(app, dead).get("/me/installs").status_code == 302


def test_the_cookie_holds_a_key_the_table_keeps_only_hashed(app, client, engine, bob):
    sign_in(client, bob)
    cookie = app.session_interface.get_signing_serializer(app).loads(copy_of_cookie(client))
    key = cookie["auth"]["key"]
    assert bob.token not in str(cookie)
    with session_scope(engine) as session:
        row = session.exec(select(WebSession)).one()
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest() and row.user_id == bob.id
    assert key not in row.key_hash


def test_last_use_is_written_only_when_stale_and_slides_the_expiry(client, engine, bob):
    sign_in(client, bob)
    long_ago = utcnow() - timedelta(days=3)
    with session_scope(engine) as session:
        session.exec(update(WebSession).values(last_seen_at=long_ago, expires_at=long_ago))
    assert client.get("/me/installs").status_code == 302  # expired: signed out

    sign_in(client, bob)
    with session_scope(engine) as session:
        fresh = session.exec(select(WebSession).order_by(WebSession.id.desc())).first()
    assert client.get("/me/installs").status_code == 200
    with session_scope(engine) as session:
        unchanged = session.get(WebSession, fresh.id)
        assert unchanged.last_seen_at == fresh.last_seen_at  # a fresh session is not rewritten
        session.exec(
            update(WebSession)
            .where(WebSession.id == fresh.id)
            .values(last_seen_at=long_ago, expires_at=utcnow() + timedelta(hours=1))
        )
    assert client.get("/me/installs").status_code == 200
    with session_scope(engine) as session:
        touched = session.get(WebSession, fresh.id)
    assert touched.last_seen_at > fresh.last_seen_at
    assert touched.expires_at > fresh.expires_at
    # Written on its own connection before a form's own write, which still goes through.
    root = publish(client, make_user(engine, "alice"), title="Water Tracker")["id"]
    form_token = csrf_of(client, f"/s/{root}")
    with session_scope(engine) as session:
        session.exec(update(WebSession).values(last_seen_at=long_ago))
    imported = client.post(f"/s/{root}/import", data={"csrf": form_token})
    assert imported.status_code == 302 and imported.headers["Location"] == f"/s/{root}"
    with session_scope(engine) as session:
        assert session.exec(select(Install).where(Install.user_id == bob.id)).one()
        assert session.get(WebSession, fresh.id).last_seen_at > touched.last_seen_at


# ---- a preview is served into our frames only -----------------------------------------


@pytest.fixture
def preview(client, engine):
    alice = make_user(engine, "alice")
    files = bundle("PREVIEW-CONTENT")
    files["files"]["logo.svg"] = (
        '<svg xmlns="http://www.w3.org/2000/svg"><script>top.location="https://evil.example"'
        "</script></svg>"
    )
    subagent = publish(client, alice, title="Water Tracker", bundle=files)
    page = text(client.get(f"/s/{subagent['id']}"))
    src = re.search(r'<iframe src="([^"]+)"', page).group(1)
    return {"id": subagent["id"], "html": src, "base": src.rsplit("/", 1)[0]}


@pytest.mark.parametrize("headers", [{"Sec-Fetch-Dest": "document"}, {}])
def test_a_preview_opened_as_the_page_is_refused(client, preview, headers):
    response = client.get(preview["html"], headers=headers)
    assert response.status_code == 403 and response.mimetype == "text/html"
    body = text(response)
    assert "PREVIEW-CONTENT" not in body and "app.js" not in body
    assert f'href="/s/{preview["id"]}"' in body
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["Cache-Control"] == "no-store"
    svg = client.get(preview["base"] + "/logo.svg", headers=headers)
    assert svg.status_code == 403 and "evil.example" not in text(svg)


def test_any_preview_file_asked_for_as_the_page_is_refused(client, preview):
    document = {"Sec-Fetch-Dest": "document"}
    assert client.get(preview["base"] + "/app.js", headers=document).status_code == 403


def test_a_framed_preview_and_its_files_are_served(client, preview):
    framed = client.get(preview["html"], headers=FRAMED)
    assert framed.status_code == 200 and "PREVIEW-CONTENT" in text(framed)
    assert "Sec-Fetch-Dest" in framed.headers["Vary"]
    for dest in ("frame", "iframe"):
        assert client.get(preview["html"], headers={"Sec-Fetch-Dest": dest}).status_code == 200
    script = client.get(preview["base"] + "/app.js", headers={"Sec-Fetch-Dest": "script"})
    assert script.status_code == 200 and script.mimetype == "text/javascript"
    # Browsers without Fetch Metadata still get the files that never run as a page.
    assert client.get(preview["base"] + "/app.js").status_code == 200
    image = client.get(preview["base"] + "/logo.svg", headers={"Sec-Fetch-Dest": "image"})
    assert image.status_code == 200 and image.mimetype == "image/svg+xml"
