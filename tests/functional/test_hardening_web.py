"""Issue 12, the web points: sign-in redirects stay on this site, signing out ends the session
for every copy of its cookie, and a preview is never served as the page itself."""

from __future__ import annotations

import re

import pytest

from tests.factories import make_user

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
NEXT = re.compile(r'name="next" value="([^"]*)"')


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


# ---- 5. sign-in redirects only to a path of this site -------------------------------------


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
