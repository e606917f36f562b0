"""Properties of the catalog under random sequences of API calls (Hypothesis), on every backend.

Each example starts from an empty database (``_wipe``) and makes its own users, so examples
never see each other's rows; that is why sharing the function-scoped ``client``/``engine``
fixtures across examples is safe (HealthCheck.function_scoped_fixture is suppressed for it).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import text

from tests.conftest import _wipe
from tests.factories import bundle, listing, make_user

API = "/api/v1"
SETTINGS = settings(
    max_examples=30,
    deadline=None,
    # Safe: every example wipes the database first and builds its own users and rows.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
_notes = itertools.count(1)


def fresh_users(engine, *names: str, moderator: str | None = None) -> dict:
    """Empty the database, then make these people (and a moderator)."""
    _wipe(engine)
    users = {name: make_user(engine, name) for name in names}
    if moderator:
        users[moderator] = make_user(engine, moderator, role="moderator")
    return users


def count(engine, sql: str) -> int:
    with engine.connect() as connection:
        return connection.execute(text(sql)).scalar()


# ---- (a) identical bytes are stored once ----------------------------------------------------

AUTHORS = ("alice", "bob", "carol")


@SETTINGS
@given(
    publishes=st.lists(
        st.tuples(st.sampled_from(AUTHORS), st.integers(0, 3)),  # (author, which bundle)
        min_size=1,
        max_size=12,
    )
)
def test_republishing_identical_bytes_returns_the_same_subagent(client, engine, publishes):
    users = fresh_users(engine, *AUTHORS)
    n = next(_notes)
    first: dict[tuple[str, int], dict] = {}
    for author, which in publishes:
        body = listing(title=f"Tracker {which}", bundle=bundle(f"{n}-{which}"))
        response = client.post(f"{API}/subagents", json=body, headers=users[author].headers)
        made = response.get_json()
        key = (author, which)
        if key in first:
            assert response.status_code == 200, made
            assert made["id"] == first[key]["id"]
            assert made["latest_version"]["id"] == first[key]["latest_version"]["id"]
            assert made["latest_version"]["number"] == 1
        else:
            assert response.status_code == 201, made
            first[key] = made
    # One sub-agent and one version per distinct (author, bytes); one stored blob per bytes.
    assert count(engine, "SELECT count(*) FROM subagent") == len(first)
    assert count(engine, "SELECT count(*) FROM subagent_version") == len(first)
    assert count(engine, "SELECT count(*) FROM bundle_blob") == len({w for _, w in first})
    assert len({made["id"] for made in first.values()}) == len(first)


@SETTINGS
@given(versions=st.lists(st.integers(0, 4), min_size=1, max_size=12))
def test_republishing_a_version_returns_the_same_version(client, engine, versions):
    """Bundle 0 is the one the sub-agent was published with: posting it again as a "new"
    version returns version 1. New bytes get the next number, in order of first sight."""
    users = fresh_users(engine, "alice", "bob")
    alice = users["alice"].headers
    n = next(_notes)
    published = client.post(
        f"{API}/subagents", json=listing(bundle=bundle(f"{n}-0")), headers=alice
    ).get_json()
    sid = published["id"]
    seen = {0: published["latest_version"]}
    latest = published["latest_version"]
    url = f"{API}/subagents/{sid}/versions"
    for which in versions:
        # Interleaved: someone else publishes the same bytes as their own sub-agent.
        other = listing(bundle=bundle(f"{n}-{which}"))
        assert client.post(
            f"{API}/subagents", json=other, headers=users["bob"].headers
        ).status_code in (200, 201)
        response = client.post(url, json={"bundle": bundle(f"{n}-{which}")}, headers=alice)
        version = response.get_json()
        if which in seen:
            assert response.status_code == 200, version
            assert version["id"] == seen[which]["id"]
            assert version["number"] == seen[which]["number"]
        else:
            assert response.status_code == 201, version
            assert version["number"] == len(seen) + 1
            seen[which] = latest = version
    listed = client.get(url).get_json()["items"]
    assert [v["id"] for v in listed] == [
        v["id"] for v in sorted(seen.values(), key=lambda v: v["number"])
    ]
    assert [v["number"] for v in listed] == list(range(1, len(seen) + 1))
    # Re-posting old bytes does not move `latest`: it stays the last version made.
    assert client.get(f"{API}/subagents/{sid}").get_json()["latest_version"]["id"] == latest["id"]


# ---- (b) lineage always ends at the root -----------------------------------------------------


@SETTINGS
@given(
    roots=st.integers(1, 2),
    forks=st.lists(
        st.tuples(st.integers(0, 50), st.sampled_from(AUTHORS)),  # (parent pick, author)
        max_size=10,
    ),
)
def test_random_fork_trees_keep_their_lineage(client, engine, roots, forks):
    users = fresh_users(engine, *AUTHORS)
    n = next(_notes)
    parent_of: dict[int, int | None] = {}
    order: list[int] = []
    for i in range(roots):
        body = listing(title=f"Root {i}", bundle=bundle(f"{n}-root-{i}"))
        made = client.post(f"{API}/subagents", json=body, headers=users["alice"].headers)
        assert made.status_code == 201, made.get_json()
        parent_of[made.get_json()["id"]] = None
        order.append(made.get_json()["id"])
    for step, (pick, author) in enumerate(forks):
        parent = order[pick % len(order)]
        body = {
            "title": f"Fork {step}",
            "fork_request": f"step {step}",
            "bundle": bundle(f"{n}-fork-{step}"),
        }
        made = client.post(
            f"{API}/subagents/{parent}/forks", json=body, headers=users[author].headers
        )
        assert made.status_code == 201, made.get_json()
        parent_of[made.get_json()["id"]] = parent
        order.append(made.get_json()["id"])

    def path(node: int) -> list[int]:  # the model: root first, the node itself excluded
        chain = []
        while parent_of[node] is not None:
            node = parent_of[node]
            chain.append(node)
        return chain[::-1]

    # Every stored row names its family, a root its own id: queries read root_id as is.
    with engine.connect() as connection:
        stored = dict(connection.execute(text("SELECT id, root_id FROM subagent")).all())
    details = {sid: client.get(f"{API}/subagents/{sid}").get_json() for sid in order}
    for sid in order:
        detail = details[sid]
        expected = path(sid)
        root = expected[0] if expected else sid
        assert stored[sid] == root
        assert detail["parent_id"] == parent_of[sid]
        assert detail["root_id"] == root
        assert detail["depth"] == len(expected)
        if parent_of[sid] is not None:
            assert detail["depth"] == details[parent_of[sid]]["depth"] + 1
            assert detail["parent_version_id"] == details[parent_of[sid]]["latest_version"]["id"]

        lineage = client.get(f"{API}/subagents/{sid}/lineage").get_json()
        ancestors = lineage["ancestors"]
        assert lineage["subagent_id"] == sid and lineage["root_id"] == root
        assert len(ancestors) == detail["depth"]
        assert [a["subagent"]["id"] for a in ancestors] == expected
        for depth, node in enumerate(ancestors):
            assert node["depth"] == depth and not node["hidden"]
            card = node["subagent"]
            assert card["depth"] == depth
            assert card["parent_id"] == (ancestors[depth - 1]["subagent"]["id"] if depth else None)
        if ancestors:
            assert ancestors[0]["subagent"]["id"] == root
            assert ancestors[-1]["subagent"]["id"] == parent_of[sid]

        children = {c for c, p in parent_of.items() if p == sid}
        page = client.get(f"{API}/subagents/{sid}/forks?limit=100").get_json()
        assert {card["id"] for card in page["items"]} == children
        assert detail["fork_count"] == len(children)


# ---- (c) a private sub-agent never shows to anyone else -------------------------------------

PEOPLE = ("alice", "bob")
VISIBILITIES = ("public", "unlisted", "private")
SUBAGENT_REFS = ("parent_id", "root_id", "subagent_id")


def can_view(node: dict, viewer: str | None) -> bool:
    return node["owner"] == viewer or node["visibility"] != "private"


def leaks(body, private: set[int], visible: set[int], path: str = "$") -> list[str]:
    """Where a private id shows up in a response, including as the ``parent_id`` of a visible
    card or tree node (that once leaked; test_cards_do_not_point_at_hidden_parents)."""
    found = []
    if isinstance(body, dict):
        is_card = "title" in body
        for key, value in body.items():
            if is_card and key == "id" and value in private:
                found.append(f"{path}.id={value}")
            elif key in SUBAGENT_REFS and value in private:
                found.append(f"{path}.{key}={value}")
            elif isinstance(value, dict | list):
                found += leaks(value, private, visible, f"{path}.{key}")
    elif isinstance(body, list):
        for i, item in enumerate(body):
            found += leaks(item, private, visible, f"{path}[{i}]")
    return found


class PrivacyMachine(RuleBasedStateMachine):
    """Publish, fork, change visibility and yank at random; after every step, everyone but
    a private sub-agent's owner (the other person, anonymous, a moderator) reads browse,
    search, and the forks, tree and lineage of every sub-agent they can open."""

    def __init__(self, client, engine):
        super().__init__()
        self.client = client
        users = fresh_users(engine, *PEOPLE, moderator="mod")
        self.headers = {name: users[name].headers for name in (*PEOPLE, "mod")} | {None: {}}
        self.n = next(_notes)
        self.word = f"sprig{self.n}"
        self.nodes: dict[int, dict] = {}
        self.order: list[int] = []
        self.steps = 0

    def _note(self) -> str:
        self.steps += 1
        return f"{self.n}-{self.steps}"

    def _pick(self, pick: int) -> int:
        return self.order[pick % len(self.order)]

    @rule(owner=st.sampled_from(PEOPLE), visibility=st.sampled_from(VISIBILITIES))
    def publish(self, owner, visibility):
        note = self._note()
        body = listing(title=f"{self.word} root {note}", visibility=visibility, bundle=bundle(note))
        made = self.client.post(f"{API}/subagents", json=body, headers=self.headers[owner])
        assert made.status_code == 201, made.get_json()
        self._add(made.get_json()["id"], owner, visibility, None)

    @precondition(lambda self: self.order)
    @rule(
        owner=st.sampled_from(PEOPLE),
        pick=st.integers(0, 30),
        visibility=st.sampled_from(VISIBILITIES),
    )
    def fork(self, owner, pick, visibility):
        parent, note = self._pick(pick), self._note()
        body = {
            "title": f"{self.word} fork {note}",
            "fork_request": "change it",
            "bundle": bundle(note),
            "visibility": visibility,
        }
        made = self.client.post(
            f"{API}/subagents/{parent}/forks", json=body, headers=self.headers[owner]
        )
        if not can_view(self.nodes[parent], owner):
            assert made.status_code == 404, made.get_json()
            return
        assert made.status_code == 201, made.get_json()
        self._add(made.get_json()["id"], owner, visibility, parent)

    @precondition(lambda self: self.order)
    @rule(pick=st.integers(0, 30), visibility=st.sampled_from(VISIBILITIES))
    def change_visibility(self, pick, visibility):
        sid = self._pick(pick)
        changed = self.client.patch(
            f"{API}/subagents/{sid}",
            json={"visibility": visibility},
            headers=self.headers[self.nodes[sid]["owner"]],
        )
        assert changed.status_code == 200, changed.get_json()
        self.nodes[sid]["visibility"] = visibility

    @precondition(lambda self: self.order)
    @rule(pick=st.integers(0, 30))
    def yank(self, pick):
        sid = self._pick(pick)
        yanked = self.client.post(
            f"{API}/subagents/{sid}/yank",
            json={"reason": "broken"},
            headers=self.headers[self.nodes[sid]["owner"]],
        )
        assert yanked.status_code == 200, yanked.get_json()

    def _add(self, sid, owner, visibility, parent):
        self.nodes[sid] = {"owner": owner, "visibility": visibility, "parent": parent}
        self.order.append(sid)

    def _seen_by(self, viewer):
        headers = self.headers[viewer]
        get = self.client.get
        yield "browse", get(f"{API}/subagents?limit=100", headers=headers)
        yield "search", get(f"{API}/subagents?q={self.word}&limit=100", headers=headers)
        for sid, node in self.nodes.items():
            if can_view(node, viewer):
                yield f"forks of {sid}", get(f"{API}/subagents/{sid}/forks", headers=headers)
                yield f"tree of {sid}", get(f"{API}/subagents/{sid}/tree?depth=6", headers=headers)
                yield f"lineage of {sid}", get(f"{API}/subagents/{sid}/lineage", headers=headers)

    def _check(self, viewer):
        private = {s for s, node in self.nodes.items() if not can_view(node, viewer)}
        if not private:
            return
        visible = set(self.nodes) - private
        for name, response in self._seen_by(viewer):
            assert response.status_code == 200, (name, response.get_json())
            found = leaks(response.get_json(), private, visible)
            assert not found, f"{viewer or 'anonymous'} sees private ids in {name}: {found}"

    @invariant()
    def no_private_id_reaches_anyone_else(self):
        for viewer in (*PEOPLE, None):
            self._check(viewer)

    def teardown(self):
        # A moderator sees what anyone who owns nothing sees here (nothing is quarantined),
        # so checking them once, at the end of each run, is enough.
        self._check("mod")


def test_private_subagents_never_show_to_others(client, engine):
    run_state_machine_as_test(
        lambda: PrivacyMachine(client, engine),
        settings=settings(SETTINGS, stateful_step_count=8),
    )


# ---- a leak this property once found (fixed) --------------------------------------------


@pytest.mark.parametrize("where", ["browse", "search", "tree", "lineage", "detail"])
def test_cards_do_not_point_at_hidden_parents(client, engine, where):
    users = fresh_users(engine, "alice", "bob")
    alice = users["alice"].headers
    made = client.post(
        f"{API}/subagents", json=listing(title="Secret diary", visibility="private"), headers=alice
    )
    secret = made.get_json()["id"]
    child = client.post(
        f"{API}/subagents/{secret}/forks",
        json={"title": "Open garden", "fork_request": "share it", "bundle": bundle("open")},
        headers=alice,
    ).get_json()["id"]
    grandchild = client.post(
        f"{API}/subagents/{child}/forks",
        json={"title": "Open garden two", "fork_request": "again", "bundle": bundle("two")},
        headers=alice,
    ).get_json()["id"]
    url = {
        "browse": f"{API}/subagents",
        "search": f"{API}/subagents?q=garden",
        "tree": f"{API}/subagents/{child}/tree",
        "lineage": f"{API}/subagents/{grandchild}/lineage",
        "detail": f"{API}/subagents/{child}",
    }[where]
    for viewer in (users["bob"].headers, {}):
        body = client.get(url, headers=viewer).get_json()
        assert client.get(f"{API}/subagents/{secret}", headers=viewer).status_code == 404
        assert leaks(body, {secret}, set()) == [], body
