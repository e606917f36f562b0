"""Tokens through the API: a caller lists and revokes its own tokens, never another's; a
revoked or expired token is refused at once, everywhere a token is accepted; new tokens get
the lifetime the settings give their owner's kind."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy import update
from sqlalchemy.exc import OperationalError
from sqlmodel import select

from market.identity.models import ApiToken, User
from market.identity.tokens import LAST_USED_EVERY, create_token, hash_token
from market.platform.db import session_scope
from market.platform.migrate import downgrade, upgrade
from market.platform.state import AppState, app_state, install_state
from tests.factories import Actor, make_user

API = "/api/v1"
TOKEN_FIELDS = {
    "id",
    "prefix",
    "name",
    "scopes",
    "state",
    "current",
    "created_at",
    "last_used_at",
    "expires_at",
    "revoked_at",
}


def another_token(engine, actor: Actor, name: str = "laptop", days: int | None = None) -> Actor:
    with session_scope(engine) as session:
        user = session.get(User, actor.id)
        made = create_token(session, user, name=name, lifetime_days=days)
        return Actor(actor.id, actor.handle, made.secret)


def token_id(engine, actor: Actor) -> int:
    with session_scope(engine) as session:
        return session.exec(
            select(ApiToken.id).where(ApiToken.token_hash == hash_token(actor.token))
        ).one()


def expire(engine, actor: Actor) -> None:
    with session_scope(engine) as session:
        session.exec(
            update(ApiToken)
            .where(ApiToken.token_hash == hash_token(actor.token))
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )


def listed(client, actor: Actor, **query) -> dict:
    response = client.get(f"{API}/tokens", query_string=query, headers=actor.headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_the_list_shows_the_callers_own_tokens_and_never_a_secret(client, engine, alice, bob):
    laptop = another_token(engine, alice, "laptop")
    body = listed(client, alice)
    items = body["items"]
    assert [item["id"] for item in items] == [token_id(engine, laptop), token_id(engine, alice)]
    assert all(set(item) == TOKEN_FIELDS for item in items)
    assert [item["current"] for item in items] == [False, True]
    assert items[0]["name"] == "laptop" and items[0]["state"] == "active"
    assert items[0]["scopes"] == ["feedback", "install", "publish", "request"]
    assert laptop.token.startswith(items[0]["prefix"]) and len(items[0]["prefix"]) == 10
    raw = client.get(f"{API}/tokens", headers=alice.headers).get_data(as_text=True)
    for secret in (alice.token, laptop.token, bob.token):
        assert secret not in raw and hash_token(secret) not in raw
    assert bob.token[:10] not in raw  # nothing of anyone else's
    assert [item["current"] for item in listed(client, bob)["items"]] == [True]


def test_people_get_90_days_and_services_a_year_unless_the_settings_say_otherwise(
    client, app, engine, alice
):
    robot = make_user(engine, "robot", kind="service", scopes=["events:write"])
    for actor, days in ((alice, 90), (robot, 365)):
        [item] = listed(client, actor)["items"]
        created = datetime.fromisoformat(item["created_at"])
        assert datetime.fromisoformat(item["expires_at"]) - created == timedelta(days=days)
    state = app_state(app)
    settings = state.settings.with_overrides({"person_token_days": 0})
    install_state(app, replace(state, settings=settings))
    with app.app_context():  # tokens made in an app take its settings
        forever = another_token(engine, alice, "forever")
    item = listed(client, forever)["items"][0]
    assert item["name"] == "forever" and item["expires_at"] is None
    week = another_token(engine, alice, "week", days=7)
    item = listed(client, week)["items"][0]
    created = datetime.fromisoformat(item["created_at"])
    assert datetime.fromisoformat(item["expires_at"]) - created == timedelta(days=7)


def test_revoke_then_the_same_token_is_refused_at_once(client, engine, alice):
    me = token_id(engine, alice)
    assert client.get(f"{API}/me", headers=alice.headers).status_code == 200
    assert client.delete(f"{API}/tokens/{me}", headers=alice.headers).status_code == 204
    refused = client.get(f"{API}/me", headers=alice.headers)
    assert refused.status_code == 401
    assert refused.headers["Content-Type"] == "application/problem+json"
    assert client.get(f"{API}/tokens", headers=alice.headers).status_code == 401


def test_revoking_one_token_leaves_the_others_working(client, engine, alice):
    laptop = another_token(engine, alice)
    laptop_id = token_id(engine, laptop)
    assert client.delete(f"{API}/tokens/{laptop_id}", headers=alice.headers).status_code == 204
    assert client.get(f"{API}/me", headers=laptop.headers).status_code == 401
    items = listed(client, alice)["items"]
    revoked = next(item for item in items if item["id"] == laptop_id)
    assert revoked["state"] == "revoked" and revoked["revoked_at"] is not None
    # Revoking it again changes nothing and answers the same.
    assert client.delete(f"{API}/tokens/{laptop_id}", headers=alice.headers).status_code == 204
    assert listed(client, alice)["items"] == items


def test_another_persons_token_is_not_found_and_stays_alive(client, engine, alice, bob):
    bobs = token_id(engine, bob)
    for target in (bobs, 2_147_483_647):
        response = client.delete(f"{API}/tokens/{target}", headers=alice.headers)
        assert response.status_code == 404
        assert response.get_json()["detail"] == f"No token {target}."
    assert client.get(f"{API}/me", headers=bob.headers).status_code == 200
    assert [item["state"] for item in listed(client, bob)["items"]] == ["active"]


def test_a_service_lists_and_revokes_only_its_own(client, engine, bob):
    robot = make_user(engine, "robot", kind="service", scopes=["publish:on-behalf"])
    assert [item["scopes"] for item in listed(client, robot)["items"]] == [["publish:on-behalf"]]
    bobs = token_id(engine, bob)
    assert client.delete(f"{API}/tokens/{bobs}", headers=robot.headers).status_code == 404


def test_bad_requests_are_clear_4xx(client, alice):
    assert client.get(f"{API}/tokens").status_code == 401
    assert client.delete(f"{API}/tokens/1").status_code == 401
    assert client.delete(f"{API}/tokens/0", headers=alice.headers).status_code == 404
    assert client.delete(f"{API}/tokens/abc", headers=alice.headers).status_code == 404
    assert client.delete(f"{API}/tokens/2147483648", headers=alice.headers).status_code == 404
    assert client.get(f"{API}/tokens?limit=0", headers=alice.headers).status_code == 422
    assert client.get(f"{API}/tokens?cursor=%21%21", headers=alice.headers).status_code == 400
    assert client.get(f"{API}/tokens?color=red", headers=alice.headers).status_code == 422


def test_pages_of_tokens(client, engine, alice):
    for n in range(4):
        another_token(engine, alice, f"t{n}")
    first = listed(client, alice, limit=3)
    second = listed(client, alice, limit=3, cursor=first["next_cursor"])
    assert second["next_cursor"] is None
    names = [item["name"] for item in first["items"] + second["items"]]
    assert names == ["t3", "t2", "t1", "t0", ""]


def test_an_expired_token_is_refused_like_a_revoked_one(client, engine, alice):
    laptop = another_token(engine, alice)
    expire(engine, laptop)
    for path in ("/me", "/tokens", "/me/installs"):
        response = client.get(f"{API}{path}", headers=laptop.headers)
        assert response.status_code == 401
        assert response.get_json()["detail"] == "The token is unknown or revoked, or has expired."
    [item] = [i for i in listed(client, alice)["items"] if i["id"] == token_id(engine, laptop)]
    assert item["state"] == "expired"
    # A browser cannot sign in with it either.
    page = client.get("/signin")
    csrf = page.get_data(as_text=True).split('name="csrf" value="')[1].split('"')[0]
    refused = client.post("/signin", data={"csrf": csrf, "token": laptop.token})
    assert refused.status_code == 400 and "expired" in refused.get_data(as_text=True)


def test_last_use_is_recorded_but_not_on_every_call(client, engine, alice):
    assert listed(client, alice)["items"][0]["last_used_at"] is not None
    first = listed(client, alice)["items"][0]["last_used_at"]
    assert listed(client, alice)["items"][0]["last_used_at"] == first
    with session_scope(engine) as session:
        session.exec(
            update(ApiToken)
            .where(ApiToken.id == token_id(engine, alice))
            .values(last_used_at=datetime.now(UTC) - LAST_USED_EVERY - timedelta(seconds=1))
        )
    assert listed(client, alice)["items"][0]["last_used_at"] > first


def test_simultaneous_revocations_answer_as_one_would(app, engine, alice):
    target = another_token(engine, alice)
    target_id = token_id(engine, target)
    laptop = another_token(engine, alice, "second caller")
    callers = [alice, laptop] * 4
    barrier = threading.Barrier(len(callers))
    codes = [0] * len(callers)

    def revoke(i: int, actor: Actor) -> None:
        client = app.test_client()
        barrier.wait()
        try:
            codes[i] = client.delete(f"{API}/tokens/{target_id}", headers=actor.headers).status_code
        except Exception:
            codes[i] = 500

    threads = [threading.Thread(target=revoke, args=(i, a)) for i, a in enumerate(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert codes == [204] * len(callers)
    with session_scope(engine) as session:
        row = session.get(ApiToken, target_id)
        assert row.revoked_at is not None
    client = app.test_client()
    assert client.get(f"{API}/me", headers=target.headers).status_code == 401
    assert client.get(f"{API}/me", headers=alice.headers).status_code == 200


def test_the_openapi_document_describes_the_token_endpoints(client):
    paths = client.get(f"{API}/openapi.json").get_json()["paths"]
    listing = paths[f"{API}/tokens"]["get"]
    assert "TokenList" in str(listing["responses"]["200"])
    revoking = paths[f"{API}/tokens/{{token_id}}"]["delete"]
    assert "204" in revoking["responses"] and "404" in revoking["responses"]


def test_migration_0010_keeps_earlier_tokens_working_without_expiry(
    client, engine, database_url, alice
):
    engine.dispose()
    downgrade(database_url, "0009")
    upgrade(database_url)
    with session_scope(engine) as session:
        row = session.exec(
            select(ApiToken).where(ApiToken.token_hash == hash_token(alice.token))
        ).one()
        assert (row.expires_at, row.last_used_at, row.revoked_at) == (None, None, None)
    [item] = listed(client, alice)["items"]
    assert item["state"] == "active" and item["expires_at"] is None


def test_a_last_use_the_database_cannot_take_does_not_fail_the_request(
    client, engine, alice, monkeypatch, caplog
):
    """Recording the use is bookkeeping: a writer lock held too long (SQLite) loses the note,
    not the read."""
    real = AppState.unit_of_work

    def writer_locked(state, *, read_only: bool = False):
        if not read_only:
            raise OperationalError("UPDATE api_token", {}, Exception("database is locked"))
        return real(state, read_only=read_only)

    monkeypatch.setattr(AppState, "unit_of_work", writer_locked)
    assert client.get(f"{API}/me", headers=alice.headers).status_code == 200
    assert "last use not recorded (database is locked)" in caplog.text
    monkeypatch.undo()
    with session_scope(engine) as session:
        assert session.get(ApiToken, token_id(engine, alice)).last_used_at is None
