"""Small builders for tests: users with tokens, valid bundles, publish and fork calls."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from market.identity.models import User
from market.identity.tokens import issue_token
from market.platform.db import session_scope
from tests.log_scanner import remember_personal

_counter = itertools.count(1)

# What a browser sends for the preview iframe: preview files are served only into a frame.
FRAMED = {"Sec-Fetch-Dest": "iframe"}


@dataclass
class Actor:
    id: int
    handle: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def make_user(
    engine,
    handle: str | None = None,
    *,
    kind: str = "person",
    role: str = "user",
    scopes: list[str] | None = None,
    email: str | None = None,
    phone: str | None = None,
    display_name: str | None = None,
    address: str | None = None,
) -> Actor:
    handle = handle or f"user{next(_counter)}"
    email = email or f"{handle}@example.com"
    remember_personal(email=email, phone=phone, address=address)
    with session_scope(engine) as session:
        user = User(
            handle=handle,
            display_name=display_name or handle.title(),
            kind=kind,
            role=role,
            email=email,
            phone=phone,
            address=address,
        )
        session.add(user)
        session.flush()
        token = issue_token(session, user, scopes)
        return Actor(id=user.id, handle=handle, token=token)


def bundle(note: str = "v1", *, scopes=("hydration.read", "hydration.write"), hosts=()) -> dict:
    return {
        "manifest": {
            "name": "Water Tracker",
            "entry": "index.html",
            "scopes": list(scopes),
            "hosts": list(hosts),
        },
        "files": {
            "index.html": f"<!doctype html><title>Water</title><script src=app.js></script>{note}",
            "app.js": f"// {note}\nconst goal = 3000;\nconsole.log(goal);\n",
        },
    }


def listing(title: str = "Water Tracker", **extra) -> dict:
    body = {
        "title": title,
        "summary": "Log every glass toward three litres a day.",
        "story": "I drink three litres of water a day and wanted a tracker as simple as that.",
        "category": "hydration",
        "tags": ["water", "habit"],
        "bundle": bundle(title),
    }
    body.update(extra)
    return body


def publish(client, actor: Actor, **extra) -> dict:
    response = client.post("/api/v1/subagents", json=listing(**extra), headers=actor.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def fork(client, actor: Actor, parent_id: int, note: str = "fork", **extra) -> dict:
    body = {
        "title": f"Fork {note}",
        "fork_request": f"please change it: {note}",
        "bundle": bundle(note),
    }
    body.update(extra)
    response = client.post(f"/api/v1/subagents/{parent_id}/forks", json=body, headers=actor.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()
