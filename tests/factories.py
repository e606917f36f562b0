"""Small builders for tests: users with tokens, valid bundles, publish and fork calls."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from market.catalog import near_copies
from market.identity.models import User
from market.identity.tokens import issue_token
from market.platform.db import session_scope
from market.ranking.models import SubAgentScore
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


# ---- near-copies: apps of one template, the way the demo writes them -------------------

# The engine every demo-like app is written from: shared by all of them, so it is boilerplate.
_ENGINE = "".join(
    f"function step{i}(items, state) {{\n"
    f"  const total = items.reduce((sum, item) => sum + item.amount{i}, 0);\n"
    f"  state.render{i}(total, items.length, 'entries-{i}');\n"
    f"  return state.save{i}(items.filter((item) => item.kept{i}));\n"
    "}\n"
    for i in range(12)
)

_APPS = {
    "water": ("Water Tracker", "glasses litres thirst morning bottle refill sip tap jug kettle"),
    "coffee": ("Caffeine Log", "espresso latte mocha beans grinder crema roast barista cup"),
    "sleep": ("Sleep Diary", "pillow dream nap snore blanket midnight alarm dawn yawn"),
    "steps": ("Step Counter", "walk stride pedometer trail hike sneaker mile park stairs"),
}


def app_bundle(kind: str, name: str | None = None) -> dict:
    """A template app: the shared engine plus its own labels, fields and help text."""
    title, words = _APPS[kind]
    words = words.split()
    config = "const CONFIG = {\n" + "".join(
        f'  "{w}": "Record the {w} you had with a {words[(i + 3) % len(words)]} '
        f'and a {words[(i + 5) % len(words)]} note",\n'
        for i, w in enumerate(words)
    )
    config += "};\n"
    return {
        "manifest": {"name": name or title, "entry": "index.html", "scopes": []},
        "files": {
            "index.html": f"<!doctype html><title>{name or title}</title>"
            "<script src=config.js></script><script src=engine.js></script>",
            "config.js": config,
            "engine.js": _ENGINE,
        },
    }


def publish_app(client, actor, kind: str, *, name=None, title=None, visibility="public"):
    body = {
        "title": title or name or _APPS[kind][0],
        "category": "health",
        "visibility": visibility,
        "bundle": app_bundle(kind, name),
    }
    response = client.post("/api/v1/subagents", json=body, headers=actor.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def learn_boilerplate(engine) -> dict:
    """What the nightly refresh does: learn the template text, sign what is not signed."""
    with session_scope(engine) as session:
        return near_copies.refresh(session)


def catalog_of_templates(client, engine, alice, carol) -> dict:
    """Two apps of one template by two authors, the boilerplate learned from them."""
    water = publish_app(client, alice, "water")
    publish_app(client, carol, "coffee")
    assert learn_boilerplate(engine)["changed"]
    return water


def rank(
    engine, qualities: dict[int, float], *, best: int, better_than: dict[int, float], sd=0.2
) -> None:
    """Score rows as a ranking run leaves them: each sub-agent's quality (displayed 1.64 sd
    lower), and ``best`` named as the best descendant of each sub-agent in ``better_than``
    (with its P(better)) and of itself."""
    with session_scope(engine) as session:
        for subagent_id, quality in qualities.items():
            named = subagent_id in better_than or subagent_id == best
            session.add(
                SubAgentScore(
                    subagent_id=subagent_id,
                    quality=quality,
                    quality_sd=sd,
                    display=quality - 1.64 * sd,
                    branch_value=max(qualities.values()),
                    best_descendant_id=best if named else None,
                    p_descendant_better=better_than.get(subagent_id, 0.0),
                )
            )
