"""Who sees and may change what: every sub-agent endpoint, for every state and every caller.

Each sub-agent under test lives in a small world built through the API:

    P  public root by carol
    └── X  alice's fork of P, in the state under test      <- the object of the matrix
        └── C  alice's public fork of X (made before a yank or quarantine)
    R  alice's root, published straight into the state (visibility in the publish body)
    Y  alice's root born public, installed by alice, bob and the moderator, a fork request
       from bob, a preview link issued to every caller, then moved into the state (PATCH
       visibility / yank / quarantine)

States: public, unlisted, private (publish/fork body), yanked (POST /yank by alice),
quarantined (POST /quarantine by the moderator). Callers: owner (alice), other (bob),
anonymous, service (publish:on-behalf + suggest; writes on behalf of bob), moderator.

Speed: ~600 rows per backend. Building a world per row through the per-test ``app`` fixture
would take minutes, so this module keeps one app and database per backend (``shared``):
reads and lists share one world per state (they change nothing), and every write row builds
its own P and X, so rows never see each other's writes. The database is wiped when the
module ends, like the ``app`` fixture does after each test.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from dataclasses import dataclass, field

import pytest
from sqlalchemy import text

from market.entrypoints.mcp_server import build_server
from market.platform.state import app_state
from tests.conftest import make_app
from tests.factories import FRAMED, Actor, bundle, fork, make_user, publish
from tests.functional.entrypoints import test_mcp_server as mcp

API = "/api/v1"
STATES = ("public", "unlisted", "private", "yanked", "quarantined")
ACTORS = ("owner", "other", "anonymous", "service", "moderator")

# ---- the expectations -------------------------------------------------------------------

# Who can open the sub-agent by its link (detail, versions, forks, lineage, tree, diff).
#                owner  other  anon   service moderator
SEES = {
    "public":      "Y      Y      Y      Y       Y",
    "unlisted":    "Y      Y      Y      Y       Y",
    "private":     "Y      -      -      -       -",
    "yanked":      "Y      Y      Y      Y       Y",
    "quarantined": "Y      -      -      -       Y",
}  # fmt: skip


def sees(state: str, actor: str) -> bool:
    return SEES[state].split()[ACTORS.index(actor)] == "Y"


# Every way to read a version's files: the bundle (JSON and zip), the diff (API, page, MCP),
# the preview the sub-agent page offers, and a preview link of Y issued while it was public.
FILE_READS = ("bundle", "zip", "diff", "diff-page", "mcp-diff", "preview", "preview-issued-before")
READS = ("detail", "versions", "forks", "lineage", "tree", *FILE_READS)


def expected_read(state: str, actor: str, endpoint: str) -> int:
    if not sees(state, actor):
        return 404
    if endpoint in FILE_READS and state == "yanked":
        # Yanked files: only the author, moderators and those who installed that version
        # (nobody installed X; Y was installed before its yank).
        readers = ("owner", "moderator", *(INSTALLERS if endpoint.endswith("before") else ()))
        if actor not in readers:
            return 404
    return 200


# Each write on a sub-agent the caller can see, while it is active (public or unlisted).
#                  owner other anon service moderator
WRITE_IF_SEEN = {
    "install":      (201,  201,  401, 403,    201),
    "uninstall":    (204,  204,  401, 403,    204),
    "fork-request": (201,  201,  401, 403,    201),
    "report":       (201,  201,  401, 201,    201),
    "yank":         (200,  403,  401, 403,    200),
    "quarantine":   (403,  403,  401, 403,    200),
    "patch":        (200,  403,  401, 403,    403),
    "new-version":  (201,  403,  401, 403,    403),
    "fork":         (201,  201,  401, 201,    201),
}  # fmt: skip
WRITES = tuple(WRITE_IF_SEEN)

# Where the sub-agent's status changes the answer (for a caller who can see it).
STATE_OVERRIDES = {
    ("yanked", "install"): {"other": 409, "moderator": 409},  # its author still may
    ("yanked", "fork-request"): {"owner": 409, "other": 409, "moderator": 409},
    ("quarantined", "install"): {"owner": 409, "moderator": 409},
    ("quarantined", "fork-request"): {"owner": 409, "moderator": 409},
    ("quarantined", "yank"): {"owner": 409, "moderator": 409},
    ("quarantined", "new-version"): {"owner": 409},
    ("quarantined", "fork"): {"owner": 409, "moderator": 409},
}

# Checked before the sub-agent is looked up: the same answer whether it is visible or not.
BEFORE_LOOKUP = {
    "anonymous": dict.fromkeys(
        ("install", "uninstall", "fork-request", "report", "yank", "quarantine", "patch"), 401
    ),
    "service": dict.fromkeys(("install", "uninstall", "fork-request"), 403),  # no such scopes
}


def expected_write(state: str, actor: str, action: str) -> int:
    if action in BEFORE_LOOKUP.get(actor, {}):
        return BEFORE_LOOKUP[actor][action]
    if not sees(state, actor):
        return 404
    status = WRITE_IF_SEEN[action][ACTORS.index(actor)]
    return STATE_OVERRIDES.get((state, action), {}).get(actor, status)


# Is the sub-agent listed?  "all": for every caller; "owner": only for its author.
#                        public  unlisted private  yanked  quarantined
LISTED = {
    "browse":            "all    owner    owner    owner   owner",
    "search":            "all    owner    owner    owner   owner",
    "forks-of-parent":   "all    owner    owner    all     owner",
    "tree-of-parent":    "all    owner    owner    all     owner",
}  # fmt: skip
LISTS = (*LISTED, "lineage-of-child", "my-installs", "fork-requests")
INSTALLERS = ("owner", "other", "moderator")  # of Y, before its change of state
QUEUE_READERS = ("other", "moderator", "service")  # bob asked; these read the queue


def expected_listed(state: str, actor: str, endpoint: str) -> bool:
    if endpoint in LISTED:
        who = LISTED[endpoint].split()[STATES.index(state)]
        return who == "all" or actor == "owner"
    if endpoint == "lineage-of-child":
        return sees(state, actor)  # else a hidden placeholder
    if endpoint == "my-installs":
        return actor in INSTALLERS and sees(state, actor)
    return actor in QUEUE_READERS and sees(state, actor)  # fork-requests


# Known bugs (strict xfails): lists that show what the caller may not see.
# Cells that once failed (each a bug this matrix found, since fixed) would go here with the
# reason, as strict expected failures. Empty: every cell holds.
LEAKS: dict = {}
WRITE_BUGS: dict = {}

# ---- the world -------------------------------------------------------------------------

_notes = itertools.count(1)


@dataclass
class Shared:
    client: object
    engine: object
    users: dict[str, Actor]
    actors: dict[str, dict[str, str]]
    worlds: dict[str, World] = field(default_factory=dict)


@dataclass
class World:
    actors: dict[str, dict[str, str]]
    ids: dict[str, int] = field(default_factory=dict)
    version: dict[str, int] = field(default_factory=dict)
    word: str = ""
    previews: dict[str, str] = field(default_factory=dict)  # Y's, issued to each actor


@pytest.fixture(scope="module")
def shared(database_url):
    with make_app(database_url) as app:
        engine = app_state(app).engine
        users = {
            "owner": make_user(engine, "alice"),
            "other": make_user(engine, "bob"),
            "moderator": make_user(engine, "mod", role="moderator"),
            "service": make_user(
                engine, "coder", kind="service", scopes=["publish:on-behalf", "suggest"]
            ),
            "carol": make_user(engine, "carol"),
        }
        actors = {name: user.headers for name, user in users.items()} | {"anonymous": {}}
        yield Shared(app.test_client(), engine, users, actors)


def _ok(response, *statuses):
    assert response.status_code in statuses, (response.status_code, response.get_json())
    return response.get_json()


def _enter_state(client, world: World, name: str, state: str) -> None:
    url = f"{API}/subagents/{world.ids[name]}"
    owner, moderator = world.actors["owner"], world.actors["moderator"]
    if state == "yanked":
        _ok(client.post(f"{url}/yank", json={"reason": "data loss bug"}, headers=owner), 200)
    elif state == "quarantined":
        body = {"reason": "privacy leak"}
        _ok(client.post(f"{url}/quarantine", json=body, headers=moderator), 200)


def build(shared: Shared, state: str, *, with_lists: bool = False) -> World:
    """A fresh P -> X (-> C) for ``state``; with the lists, also R and Y."""
    client, users = shared.client, shared.users
    n = next(_notes)
    # Ended by a letter, so that no world's word is inside another's: the owner's search for
    # "zebra3" also matched their "Sprout zebra312" (a title containing the text), and with a
    # hundred of those from later worlds the page of 100 ended before this world's own.
    world = World(actors=shared.actors, word=f"zebra{n}z")
    born = state if state in ("public", "unlisted", "private") else "public"
    owner = users["owner"]

    p = publish(client, users["carol"], title=f"Parent Plant {n}", bundle=bundle(f"p{n}"))
    x = fork(client, owner, p["id"], f"x{n}", title=f"Sprout {world.word}", visibility=born)
    world.ids.update(P=p["id"], X=x["id"])
    world.version["X"] = x["latest_version"]["id"]
    if with_lists:
        c = fork(client, owner, x["id"], f"c{n}", title=f"Child Leaf {n}")
        world.ids["C"] = c["id"]
    _enter_state(client, world, "X", state)
    if not with_lists:
        return world

    root = bundle(f"r{n}")
    r = publish(client, owner, title=f"Root {world.word}", visibility=born, bundle=root)
    y = publish(client, owner, title=f"Yak Diary {n}", bundle=bundle(f"y{n}"))
    world.ids.update(R=r["id"], Y=y["id"])
    _enter_state(client, world, "R", state)
    y_url = f"{API}/subagents/{y['id']}"
    for who in INSTALLERS:
        _ok(client.post(f"{y_url}/install", json={}, headers=shared.actors[who]), 201)
    asked = {"text": "for a family of four"}
    _ok(client.post(f"{y_url}/fork-requests", json=asked, headers=shared.actors["other"]), 201)
    for who in ACTORS:
        page = client.get(f"/s/{y['id']}", headers=shared.actors[who])
        world.previews[who] = preview_src(page)
    if state in ("unlisted", "private"):
        patch = {"visibility": state}
        _ok(client.patch(y_url, json=patch, headers=shared.actors["owner"]), 200)
    _enter_state(client, world, "Y", state)
    return world


def world_for(shared: Shared, state: str) -> World:
    """The read-only world of a state, built once per backend (reads and lists change nothing)."""
    if state not in shared.worlds:
        shared.worlds[state] = build(shared, state, with_lists=True)
    return shared.worlds[state]


# ---- helpers ---------------------------------------------------------------------------

SUBAGENT_ID_KEYS = {"parent_id", "root_id", "subagent_id", "fulfilled_by_id"}


def subagent_ids(body) -> set[int]:
    """Every sub-agent id in a response: ``id`` of cards and tree nodes (they have a title),
    and the fields that point at sub-agents. Version, install and request ids are skipped."""
    found: set[int] = set()
    if isinstance(body, dict):
        for key, value in body.items():
            is_card_id = key == "id" and "title" in body
            if (key in SUBAGENT_ID_KEYS or is_card_id) and isinstance(value, int):
                found.add(value)
            elif key not in ("latest_version", "manifest"):
                found |= subagent_ids(value)
    elif isinstance(body, list):
        for item in body:
            found |= subagent_ids(item)
    return found


def listed_ids(endpoint: str, body: dict) -> set[int]:
    """The sub-agents a list is about (not those its items merely point at)."""
    if endpoint == "tree-of-parent":
        return {node["id"] for node in body["nodes"]}
    if endpoint in ("my-installs", "fork-requests"):
        return {item["subagent_id"] for item in body["items"]}
    return {card["id"] for card in body["items"]}


@dataclass
class Answer:
    """A page's or an MCP tool's answer, read like an API response."""

    status_code: int
    detail: str | None = None  # None: a page, whose 404 is not a problem document

    def get_json(self) -> dict:
        return {"detail": self.detail}


def preview_src(page) -> str | None:
    match = re.search(r'<iframe src="([^"]+)"', page.get_data(as_text=True))
    return match.group(1).replace("&amp;", "&") if match else None


def read(shared: Shared, world: World, endpoint: str, actor: str):
    client, headers, x = shared.client, world.actors[actor], world.ids["X"]
    if endpoint == "diff-page":
        return Answer(client.get(f"/s/{x}/diff", headers=headers).status_code)
    if endpoint == "preview":  # the preview the page offers, if it offers one
        page = client.get(f"/s/{x}", headers=headers)
        src = preview_src(page) if page.status_code == 200 else None
        return Answer(client.get(src, headers=FRAMED).status_code if src else 404)
    if endpoint == "preview-issued-before":
        return Answer(client.get(world.previews[actor], headers=FRAMED).status_code)
    if endpoint == "mcp-diff":
        token = shared.users[actor].token if actor in shared.users else None
        server = build_server(shared.engine, token=token)
        [result] = mcp.call_tools(server, ("get_diff", {"subagent_id": x}))
        if not result.is_error:
            return Answer(200)
        message = result.content[0].text
        status = int(re.search(r"\((\d{3})\)", message).group(1))
        return Answer(status, message.split("): ", 1)[1])
    url = f"{API}/subagents/{x}"
    path = {
        "detail": "",
        "versions": "/versions",
        "bundle": f"/versions/{world.version['X']}/bundle",
        "zip": f"/versions/{world.version['X']}/bundle?format=zip",
        "forks": "/forks",
        "lineage": "/lineage",
        "tree": "/tree",
        "diff": "/diff",
    }[endpoint]
    return client.get(url + path, headers=headers)


TABLES = ("subagent", "subagent_version", "subagent_tag", "fork_request", "report")


def snapshot(shared: Shared, world: World) -> dict:
    """Everything a rejected write could have changed."""
    client, x, owner = shared.client, world.ids["X"], world.actors["owner"]
    with shared.engine.connect() as connection:
        counts = {
            t: connection.execute(text(f"SELECT count(*) FROM {t}")).scalar()  # noqa: S608
            for t in TABLES
        }
        counts["active installs"] = connection.execute(
            text("SELECT count(*) FROM install WHERE active")
        ).scalar()
    return {
        "detail": client.get(f"{API}/subagents/{x}", headers=owner).get_json(),
        "versions": client.get(f"{API}/subagents/{x}/versions", headers=owner).get_json(),
        "forks": client.get(f"{API}/subagents/{x}/forks", headers=owner).get_json(),
        "counts": counts,
    }


def write(client, world: World, action: str, actor: str):
    url = f"{API}/subagents/{world.ids['X']}"
    headers = world.actors[actor]
    on_behalf = {"on_behalf_of": "bob"} if actor == "service" else {}
    note = world.word
    if action == "install":
        return client.post(f"{url}/install", json={}, headers=headers)
    if action == "uninstall":
        return client.delete(f"{url}/install", headers=headers)
    if action == "fork-request":
        return client.post(f"{url}/fork-requests", json={"text": "make it vegan"}, headers=headers)
    if action == "report":
        return client.post(f"{url}/report", json={"reason": "spam"}, headers=headers)
    if action == "yank":
        return client.post(f"{url}/yank", json={"reason": "broken build"}, headers=headers)
    if action == "quarantine":
        return client.post(f"{url}/quarantine", json={"reason": "malware"}, headers=headers)
    if action == "patch":
        return client.patch(url, json={"title": "Renamed"}, headers=headers)
    if action == "new-version":
        body = {"bundle": bundle(f"{note}-v2"), "changelog": "v2", **on_behalf}
        return client.post(f"{url}/versions", json=body, headers=headers)
    body = {"title": "Matrix fork", "fork_request": "fork it", "bundle": bundle(f"{note}-f")}
    return client.post(f"{url}/forks", json=body | on_behalf, headers=headers)


def list_response(client, world: World, endpoint: str, headers):
    ids = world.ids
    if endpoint == "browse":  # every page: the shared database holds other rows' sub-agents
        items, cursor = [], None
        while True:
            query = {"limit": 100} | ({"cursor": cursor} if cursor else {})
            response = client.get(f"{API}/subagents", query_string=query, headers=headers)
            assert response.status_code == 200, response.get_json()
            page = response.get_json()
            items += page["items"]
            cursor = page["next_cursor"]
            if not cursor:
                return {"items": items, "next_cursor": None}
    if endpoint == "search":
        url = f"{API}/subagents?q={world.word}&limit=100"
    elif endpoint == "forks-of-parent":
        url = f"{API}/subagents/{ids['P']}/forks?limit=100"
    elif endpoint == "tree-of-parent":
        url = f"{API}/subagents/{ids['P']}/tree?depth=6"
    elif endpoint == "lineage-of-child":
        url = f"{API}/subagents/{ids['C']}/lineage"
    elif endpoint == "my-installs":
        url = f"{API}/me/installs?limit=100"
    else:
        url = f"{API}/fork-requests?limit=100"
    return client.get(url, headers=headers)


def _rows(endpoints) -> list:
    return [
        pytest.param(s, a, e, id=f"{s}-{a}-{e}") for s in STATES for a in ACTORS for e in endpoints
    ]


def _xfail_if(request, reason: str | None) -> None:
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


# ---- the matrix ------------------------------------------------------------------------


@pytest.mark.parametrize("state,actor,endpoint", _rows(READS))
def test_read(shared, state, actor, endpoint):
    world = world_for(shared, state)
    response = read(shared, world, endpoint, actor)
    expected = expected_read(state, actor, endpoint)
    assert response.status_code == expected, response.get_json()
    detail = (response.get_json() or {}).get("detail") if expected == 404 else None
    if expected == 404 and not sees(state, actor) and detail is not None:
        # What a sub-agent that never existed answers: no existence leak.
        assert detail == f"No sub-agent {world.ids['X']}."
    elif expected == 404 and detail is not None:
        assert detail == f"Version {world.version['X']} was yanked: data loss bug"
    if expected == 200 and endpoint == "detail":
        body = response.get_json()
        assert body["id"] == world.ids["X"] and body["visibility"] == (
            state if state in ("unlisted", "private") else "public"
        )
        assert body["status"] == (state if state in ("yanked", "quarantined") else "active")
        if state == "yanked":
            assert body["status_reason"] == "data loss bug"  # readable, with the reason


@pytest.mark.parametrize("state,actor,action", _rows(WRITES))
def test_write(request, shared, state, actor, action):
    _xfail_if(request, WRITE_BUGS.get((state, action, actor)))
    world = build(shared, state)
    before = snapshot(shared, world)
    response = write(shared.client, world, action, actor)
    expected = expected_write(state, actor, action)
    assert response.status_code == expected, response.get_json()
    after = snapshot(shared, world)
    if expected >= 400:
        assert response.headers["Content-Type"] == "application/problem+json"
        assert after == before, "a rejected write changed something"
    elif action != "uninstall":  # uninstalling what one never installed is a no-op
        assert after != before, "an accepted write changed nothing"
    if expected == 404:
        assert response.get_json()["detail"] == f"No sub-agent {world.ids['X']}."


@pytest.mark.parametrize("state,actor,endpoint", _rows(LISTS))
def test_list(request, shared, state, actor, endpoint):
    _xfail_if(request, LEAKS.get((endpoint, state, actor)))
    world = world_for(shared, state)
    response = list_response(shared.client, world, endpoint, world.actors[actor])
    if actor == "anonymous" and endpoint in ("my-installs", "fork-requests"):
        assert response.status_code == 401
        return
    body = response if isinstance(response, dict) else _ok(response, 200)
    listed = expected_listed(state, actor, endpoint)
    ids = world.ids

    if endpoint == "lineage-of-child":
        assert body["subagent_id"] == ids["C"] and body["root_id"] == ids["P"]
        p_node, x_node = body["ancestors"]
        assert p_node["subagent"]["id"] == ids["P"] and not p_node["hidden"]
        if listed:
            assert x_node["subagent"]["id"] == ids["X"] and not x_node["hidden"]
        else:  # the path still reaches its root, without saying what is hidden
            assert x_node == {"depth": 1, "hidden": True, "subagent": None}
    else:
        shown = listed_ids(endpoint, body)
        targets = {
            "browse": ("X", "R"),
            "search": ("X", "R"),
            "forks-of-parent": ("X",),
            "tree-of-parent": ("X", "C"),  # the branch below X goes with it
            "my-installs": ("Y",),
            "fork-requests": ("Y",),
        }[endpoint]
        assert {t for t in targets if ids[t] in shown} == (set(targets) if listed else set())

    # Whatever the caller may not open never shows up in a list, not even as an id.
    hidden = {ids[n] for n in ("X", "R", "Y") if not sees(state, actor)}
    assert not hidden & subagent_ids(body), json.dumps(body)[:600]


# A creator's figures: the API, the dashboard page and its CSV. Y (installed, so it has daily
# figures) is among them for its author, and for a moderator only if the moderator may open it.
FIGURES = ("creator-stats", "dashboard", "dashboard-csv")


def expected_figures(state: str, actor: str, endpoint: str) -> tuple[int, bool]:
    """(status, whether Y's figures are shown)."""
    if actor == "owner":
        return 200, True
    if actor == "moderator":
        return 200, sees(state, actor)
    if actor == "anonymous" and endpoint == "creator-stats":
        return 401, False  # the API asks for a token before looking anyone up
    if actor == "anonymous":
        return 302, False  # pages send anyone signed out to sign in, whatever the handle
    return 404, False  # what an unknown handle answers


@pytest.mark.parametrize("state,actor,endpoint", _rows(FIGURES))
def test_figures(shared, state, actor, endpoint):
    world = world_for(shared, state)
    url = {
        "creator-stats": f"{API}/creators/alice/stats",
        "dashboard": "/creators/alice",
        "dashboard-csv": "/creators/alice/stats.csv",
    }[endpoint]
    response = shared.client.get(url, headers=world.actors[actor])
    status, shows_y = expected_figures(state, actor, endpoint)
    assert response.status_code == status
    if status == 302:
        assert response.headers["Location"].startswith("/signin?next=")
    if status != 200:
        if endpoint == "creator-stats":
            assert response.get_json()["status"] == status
        return
    if endpoint == "creator-stats":
        shown = {row["id"] for row in response.get_json()["subagents"]}
    elif endpoint == "dashboard":
        page = response.get_data(as_text=True)
        shown = {int(i) for i in re.findall(r'href="/s/(\d+)"', page)}
    else:
        rows = csv.DictReader(io.StringIO(response.get_data(as_text=True)))
        shown = {int(row["subagent_id"]) for row in rows}
    assert (world.ids["Y"] in shown) == shows_y
    if not sees(state, actor):
        assert not {world.ids[n] for n in ("X", "R", "Y")} & shown


# ---- what one table row cannot say -------------------------------------------------------


def test_yanked_bundle_stays_downloadable_for_installers(shared):
    world = build(shared, "public")
    client, x, version = shared.client, world.ids["X"], world.version["X"]
    bob, service = world.actors["other"], world.actors["service"]
    _ok(client.post(f"{API}/subagents/{x}/install", json={}, headers=bob), 201)
    _enter_state(client, world, "X", "yanked")
    url = f"{API}/subagents/{x}/versions/{version}/bundle"
    assert client.get(url, headers=bob).status_code == 200
    assert client.get(url, headers=service).status_code == 404
    assert client.get(url).status_code == 404
    # bob keeps it (same version: not a new install); a newcomer cannot install it any more.
    assert client.post(f"{API}/subagents/{x}/install", json={}, headers=bob).status_code == 200
    newcomer = make_user(shared.engine, f"dave-{world.word}")
    refused = client.post(f"{API}/subagents/{x}/install", json={}, headers=newcomer.headers)
    assert refused.status_code == 409 and "data loss bug" in refused.get_json()["detail"]


def test_service_publishes_versions_on_behalf_of_the_owner(shared):
    world = build(shared, "public")
    client, x, service = shared.client, world.ids["X"], world.actors["service"]
    body = {"bundle": bundle(f"{world.word}-svc"), "on_behalf_of": "alice"}
    made = client.post(f"{API}/subagents/{x}/versions", json=body, headers=service)
    assert made.status_code == 201 and made.get_json()["number"] == 2
    anonymous_body = {"bundle": bundle(f"{world.word}-v3")}
    without = client.post(f"{API}/subagents/{x}/versions", json=anonymous_body, headers=service)
    assert without.status_code == 422  # a service always says for whom it publishes


@pytest.mark.parametrize("state", ["private", "quarantined"])
def test_hidden_looks_exactly_like_missing(shared, state):
    world = world_for(shared, state)
    client, x = shared.client, world.ids["X"]
    for actor in ("other", "anonymous", "service"):
        headers = world.actors[actor]
        hidden = client.get(f"{API}/subagents/{x}", headers=headers)
        missing = client.get(f"{API}/subagents/{2**31 - 1}", headers=headers)
        assert hidden.status_code == missing.status_code == 404
        assert hidden.headers["Content-Type"] == missing.headers["Content-Type"]
        assert {**hidden.get_json(), "detail": ""} == {**missing.get_json(), "detail": ""}


def test_visibility_round_trip_keeps_counts_and_lists_consistent(shared):
    """PATCH public -> private -> public: the parent's fork_count follows, and the fork
    leaves and re-enters the parent's forks list for others."""
    world = build(shared, "public")
    client, p, x = shared.client, world.ids["P"], world.ids["X"]
    owner, bob = world.actors["owner"], world.actors["other"]

    def seen_by_bob():
        count = client.get(f"{API}/subagents/{p}", headers=bob).get_json()["fork_count"]
        forks = client.get(f"{API}/subagents/{p}/forks", headers=bob).get_json()["items"]
        return count, [card["id"] for card in forks]

    assert seen_by_bob() == (1, [x])
    _ok(client.patch(f"{API}/subagents/{x}", json={"visibility": "private"}, headers=owner), 200)
    assert seen_by_bob() == (0, [])
    assert client.get(f"{API}/subagents/{x}", headers=bob).status_code == 404
    _ok(client.patch(f"{API}/subagents/{x}", json={"visibility": "public"}, headers=owner), 200)
    assert seen_by_bob() == (1, [x])
