"""Two web nodes on one PostgreSQL and one Redis, and what node B shows after a write on node A.

Each node is its own gunicorn master (``tests.gunicorn_server``) on its own port, with its own
suggestion index and read cache, exactly as two machines behind a load balancer would run;
nothing is shared between them but the database and Redis. Used by
``tests/integration/platform/test_two_nodes.py`` and ``bench/nodes.py``.

A write is made on node A; from the moment A's response returned, node B is polled on the four
ways a visitor or an agent finds a sub-agent: its detail (anonymous, so the read cache is in
play), the browse page (newest first), a search for a word only its title has, and fork
suggestions for that word.
"""

from __future__ import annotations

import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import psycopg
import requests
from sqlalchemy.engine import make_url

from market.app import create_app
from market.platform.limits import LIMIT_CLASSES
from market.platform.migrate import upgrade
from market.platform.state import app_state
from tests.factories import Actor, bundle, make_user
from tests.xdist_worker import own_database, own_redis_url

API = "/api/v1"
TIMEOUT = (5.0, 30.0)
PROBES = ("detail", "browse", "search", "suggestions")


def fresh_database(base_url: str, name: str) -> str:
    """Database ``name`` on the server of ``base_url``, dropped if there and created anew at
    the migrations' head; its URL."""
    name = own_database(name)
    admin = make_url(base_url).set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as db:
        db.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        db.execute(f"CREATE DATABASE {name}")
    url = make_url(base_url).set(database=name).render_as_string(hide_password=False)
    upgrade(url)
    return url


def node_settings(database_url: str, redis_url: str) -> dict[str, str]:
    """What every node and worker is given: one database, one Redis (a database number of its
    own, so no other app's queue is shared), tasks through the queue, no rate limits (the
    probes poll far faster than any visitor)."""
    return {
        "SPRIG_DATABASE_URL": database_url,
        "SPRIG_REDIS_URL": own_redis_url(redis_url, 7),
        "SPRIG_CELERY_EAGER": "0",
        "SPRIG_SECRET_KEY": "two-nodes",
        **{f"SPRIG_RATE_LIMIT_{name.upper()}": "" for name in LIMIT_CLASSES},
    }


def make_actors(database_url: str) -> dict[str, Actor]:
    """An author, a coding agent (``suggest``) and a trainer (``exports``), with tokens."""
    app = create_app({"database_url": database_url, "secret_key": "two-nodes"})
    state = app_state(app)
    try:
        return {
            "author": make_user(state.engine, "author"),
            "agent": make_user(state.engine, "agent", kind="service", scopes=["suggest"]),
            "trainer": make_user(state.engine, "trainer", kind="service", scopes=["exports"]),
        }
    finally:
        if state.cache_listener is not None:
            state.cache_listener.stop()
        state.engine.dispose()
        state.read_engine.dispose()


def unique_word() -> str:
    """A made-up word no other listing has, so a search for it finds one sub-agent."""
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    letters = [
        (consonants if i % 2 == 0 else vowels)[secrets.randbelow(5 if i % 2 else 14)]
        for i in range(10)
    ]
    return "".join(letters).capitalize()


def listing(word: str, **extra) -> dict:
    """A publish body whose title and summary name ``word``."""
    return {
        "title": f"{word} water tracker",
        "summary": f"Counts glasses of water with the {word} method.",
        "category": "hydration",
        "tags": ["water"],
        "bundle": bundle(word),
        **extra,
    }


def publish(base: str, headers: dict, word: str, **extra) -> int:
    body = listing(word, **extra)
    response = requests.post(f"{base}{API}/subagents", json=body, headers=headers, timeout=TIMEOUT)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def set_visibility(base: str, headers: dict, subagent_id: int, visibility: str) -> None:
    response = requests.patch(
        f"{base}{API}/subagents/{subagent_id}",
        json={"visibility": visibility},
        headers=headers,
        timeout=TIMEOUT,
    )
    assert response.status_code == 200, response.text


def make_private(base: str, headers: dict, subagent_id: int) -> None:
    set_visibility(base, headers, subagent_id, "private")


def yank(base: str, headers: dict, subagent_id: int) -> None:
    response = requests.post(
        f"{base}{API}/subagents/{subagent_id}/yank",
        json={"reason": "a bug in the counting"},
        headers=headers,
        timeout=TIMEOUT,
    )
    assert response.status_code == 200, response.text


def probe(base: str, name: str, subagent_id: int, word: str, agent: dict) -> bool:
    """Whether node ``base`` shows the sub-agent through ``name`` (one of ``PROBES``)."""
    if name == "detail":
        # Shown: opened and active (a yanked one still opens by its link, marked yanked).
        response = requests.get(f"{base}{API}/subagents/{subagent_id}", timeout=TIMEOUT)
        assert response.status_code in (200, 404), response.text
        return response.status_code == 200 and response.json()["status"] == "active"
    if name == "browse":
        response = requests.get(f"{base}{API}/subagents?sort=new&limit=50", timeout=TIMEOUT)
    elif name == "search":
        response = requests.get(f"{base}{API}/subagents?q={word}&limit=20", timeout=TIMEOUT)
    else:
        response = requests.post(
            f"{base}{API}/suggestions",
            json={"request": f"track water the {word} way", "k": 5},
            headers=agent,
            timeout=TIMEOUT,
        )
    assert response.status_code == 200, response.text
    return any(
        item["subagent_id" if name == "suggestions" else "id"] == subagent_id
        for item in response.json()["items"]
    )


@dataclass
class Propagation:
    """What node B showed after node A's write returned: per probe, the seconds from then until
    the first request that showed the new state was sent (0.0: the first one already did;
    None: none within the window) and how many answers to requests sent after A returned still
    showed the old state (stale: for a hiding write, the sub-agent still shown)."""

    latency: dict[str, float | None] = field(default_factory=dict)
    stale: dict[str, int] = field(default_factory=dict)
    answers: dict[str, int] = field(default_factory=dict)


def watch(
    base: str,
    subagent_id: int,
    word: str,
    agent: dict,
    *,
    expect_shown: bool,
    since: float,
    window: float,
) -> Propagation:
    """Poll every probe of node ``base`` in parallel until ``window`` seconds after ``since``
    (when the write on the other node returned; ``time.monotonic``); each poll is a request
    sent after ``since``."""

    def poll(name: str) -> tuple[str, float | None, int, int]:
        first, stale, answers = None, 0, 0
        while (sent := time.monotonic() - since) < window:
            shown = probe(base, name, subagent_id, word, agent)
            answers += 1
            if shown == expect_shown:
                if first is None:
                    first = sent
                if expect_shown:
                    break  # seen: a publish needs nothing more
            else:
                stale += 1
        return name, first, stale, answers

    result = Propagation()
    with ThreadPoolExecutor(max_workers=len(PROBES)) as pool:
        for name, first, stale, answers in pool.map(poll, PROBES):
            result.latency[name], result.stale[name], result.answers[name] = first, stale, answers
    return result


def shown_everywhere(base: str, subagent_id: int, word: str, agent: dict, timeout: float) -> bool:
    """Wait until node ``base`` shows the sub-agent through every probe (and its detail from
    the read cache: asked twice)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(probe(base, name, subagent_id, word, agent) for name in PROBES):
            cached = requests.get(f"{base}{API}/subagents/{subagent_id}", timeout=TIMEOUT)
            if cached.headers.get("X-Sprig-Cache") == "hit":
                return True
        time.sleep(0.05)
    return False
