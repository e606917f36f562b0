"""The Tokens page: the signed-in person's own tokens, revoked with a CSRF-checked form; never
another person's; revoking the token the browser signed in with signs it out."""

from __future__ import annotations

import re

from sqlalchemy import update
from sqlmodel import select

from market.identity.models import ApiToken, User
from market.identity.tokens import create_token, hash_token
from market.platform.db import session_scope
from market.platform.time import utcnow
from tests.factories import Actor

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
API = "/api/v1"


def second_token(engine, actor: Actor, name: str) -> tuple[int, str]:
    with session_scope(engine) as session:
        made = create_token(session, session.get(User, actor.id), name=name)
        return made.row.id, made.secret


def id_of(engine, secret: str) -> int:
    with session_scope(engine) as session:
        return session.exec(
            select(ApiToken.id).where(ApiToken.token_hash == hash_token(secret))
        ).one()


def sign_in(client, actor: Actor) -> None:
    csrf = CSRF.search(client.get("/signin").get_data(as_text=True)).group(1)
    response = client.post("/signin", data={"csrf": csrf, "token": actor.token, "next": "/"})
    assert response.status_code == 302


def tokens_page(client) -> tuple[str, str]:
    page = client.get("/me/tokens")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    return html, CSRF.search(html).group(1)


def test_signed_out_visitors_are_sent_to_sign_in(client):
    response = client.get("/me/tokens")
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/signin?next=/me/tokens")


def test_the_page_lists_own_tokens_and_no_secret(client, engine, alice, bob):
    laptop_id, laptop = second_token(engine, alice, "laptop")
    sign_in(client, alice)
    html, _ = tokens_page(client)
    assert 'href="/me/tokens"' in html  # in the navigation
    cards = re.findall(r'<li class="card token token-(\w+)" id="token-(\d+)"', html)
    assert cards == [("active", str(laptop_id)), ("active", str(id_of(engine, alice.token)))]
    assert "laptop" in html and "This sign-in" in html
    for secret in (alice.token, laptop, bob.token):
        assert secret not in html and hash_token(secret) not in html
    assert f'id="token-{id_of(engine, bob.token)}"' not in html


def test_revoke_from_the_page(client, engine, alice):
    laptop_id, laptop = second_token(engine, alice, "laptop")
    sign_in(client, alice)
    _, csrf = tokens_page(client)
    response = client.post(f"/me/tokens/{laptop_id}/revoke", data={"csrf": csrf})
    assert response.status_code == 302 and response.headers["Location"] == "/me/tokens"
    html, csrf = tokens_page(client)
    assert "Token revoked: it is refused from now on." in html
    assert f'token-revoked" id="token-{laptop_id}"' in html
    assert f'action="/me/tokens/{laptop_id}/revoke"' not in html  # no button once revoked
    assert client.get(f"{API}/me", headers={"Authorization": f"Bearer {laptop}"}).status_code == 401
    again = client.post(
        f"/me/tokens/{laptop_id}/revoke", data={"csrf": csrf}, follow_redirects=True
    )
    assert "That token was already revoked." in again.get_data(as_text=True)


def test_forms_without_the_sessions_csrf_change_nothing(client, engine, alice):
    laptop_id, laptop = second_token(engine, alice, "laptop")
    sign_in(client, alice)
    assert client.post(f"/me/tokens/{laptop_id}/revoke", data={}).status_code == 400
    _, csrf = tokens_page(client)
    cross = client.post(
        f"/me/tokens/{laptop_id}/revoke",
        data={"csrf": csrf},
        headers={"Origin": "https://evil.example"},
    )
    assert cross.status_code == 403
    assert client.get(f"{API}/me", headers={"Authorization": f"Bearer {laptop}"}).status_code == 200


def test_another_persons_token_is_not_found(client, engine, alice, bob):
    sign_in(client, alice)
    _, csrf = tokens_page(client)
    bobs = id_of(engine, bob.token)
    assert client.post(f"/me/tokens/{bobs}/revoke", data={"csrf": csrf}).status_code == 404
    assert client.post("/me/tokens/999999/revoke", data={"csrf": csrf}).status_code == 404
    assert client.get(f"{API}/me", headers=bob.headers).status_code == 200


def test_revoking_the_sign_in_token_signs_out(client, engine, alice):
    sign_in(client, alice)
    _, csrf = tokens_page(client)
    response = client.post(f"/me/tokens/{id_of(engine, alice.token)}/revoke", data={"csrf": csrf})
    assert response.status_code == 302
    assert client.get("/me/tokens").status_code == 302  # to sign in
    assert "You signed in with it" in client.get("/signin").get_data(as_text=True)


def test_an_expired_sign_in_token_ends_the_session(client, engine, alice):
    sign_in(client, alice)
    tokens_page(client)
    with session_scope(engine) as session:
        session.exec(
            update(ApiToken)
            .where(ApiToken.token_hash == hash_token(alice.token))
            .values(expires_at=utcnow())
        )
    assert client.get("/me/tokens").status_code == 302


def test_the_page_in_chinese_and_japanese(client, engine, alice):
    sign_in(client, alice)
    for language, title in (("zh", "API 令牌"), ("ja", "API トークン")):
        page = client.get(f"/me/tokens?lang={language}")
        assert f"<h1>{title}</h1>" in page.get_data(as_text=True)
