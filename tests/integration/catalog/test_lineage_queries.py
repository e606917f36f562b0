"""The lineage reads behind the tree view and the dashboard, against slow but obvious references.

A random forest is written straight into the tables (bushy nodes, tied install counts, private,
unlisted, yanked and quarantined nodes by several authors), then on every backend:
- ``market.usage.stats.descendants`` (one recursive query) finds exactly the nodes whose stored
  ancestry path passes through one of the given ones (what it used to filter in Python);
- the capped subtree read in one recursive query returns the same rows, in the same order, as
  the level-by-level read and as a breadth-first walk in Python, for every node as the top and
  for anonymous viewers, authors of private nodes and moderators.
"""

from __future__ import annotations

import random

import pytest

from market.catalog import queries as browse
from market.catalog.models import SubAgent
from market.identity.tokens import ANONYMOUS, Principal
from market.platform.db import session_scope
from market.usage import stats
from tests.factories import make_user

FOREST_SIZE = 160
ROOTS = 3


def _visible_in_trees(node: SubAgent, viewer: Principal) -> bool:
    public = node.visibility == "public" and node.status in ("active", "yanked")
    return public or node.author_id == viewer.user_id


@pytest.fixture
def forest(engine):
    """Nodes as detached rows (id, parent, ancestry, author, visibility, status, installs)."""
    rng = random.Random(7)
    authors = [make_user(engine, f"author{i}") for i in range(3)]
    moderator = make_user(engine, "mod", role="moderator")
    with session_scope(engine) as session:
        nodes: list[SubAgent] = []
        for i in range(FOREST_SIZE):
            # A few early nodes collect most forks, so some parents have dozens of children.
            parent = None
            if i >= ROOTS:
                parent = rng.choice(nodes[:8] if rng.random() < 0.5 else nodes)
            node = SubAgent(
                title=f"Node {i}",
                category="hydration",
                author_id=rng.choice(authors).id,
                visibility=rng.choices(["public", "private", "unlisted"], [8, 1, 1])[0],
                status=rng.choices(["active", "yanked", "quarantined"], [8, 1, 1])[0],
                parent_id=parent.id if parent else None,
                depth=parent.depth + 1 if parent else 0,
                ancestry=(
                    ""
                    if parent is None
                    else f"{parent.ancestry}/{parent.id}"
                    if parent.ancestry
                    else str(parent.id)
                ),
                dedupe_key=f"lineage-test:{i}",
                install_count=rng.randint(0, 3),  # plenty of ties: the id breaks them
            )
            session.add(node)
            session.flush()
            node.root_id = parent.root_id if parent else node.id
            if parent is not None:
                parent.fork_count += 1
            nodes.append(node)
        session.flush()
        for node in nodes:
            session.expunge(node)
    viewers = [
        ANONYMOUS,
        *(Principal(user_id=a.id, handle=a.handle, kind="person") for a in authors),
        Principal(user_id=moderator.id, handle="mod", kind="person", role="moderator"),
    ]
    return {"nodes": nodes, "viewers": viewers}


def _ancestors(node: SubAgent) -> set[int]:
    return {int(part) for part in node.ancestry.split("/") if part}


def test_descendants_are_the_nodes_whose_path_passes_through_the_given_ones(engine, forest):
    nodes = forest["nodes"]
    rng = random.Random(11)
    by_id = {n.id: n for n in nodes}
    subsets = [[n.id] for n in nodes[:ROOTS]]  # whole lineages
    for _ in range(25):
        subsets.append(rng.sample(list(by_id), rng.randint(1, 5)))
    # A node together with one of its own ancestors: the deeper one is found once, below both.
    nested = next(n for n in nodes if n.depth >= 3)
    subsets.append([nested.id, min(_ancestors(nested))])
    with session_scope(engine) as session:
        for subset in subsets:
            expected = {
                n.id: (n.ancestry, n.author_id) for n in nodes if _ancestors(n) & set(subset)
            }
            assert stats.descendants(session, subset) == expected, subset
        assert stats.descendants(session, []) == {}
        assert len(stats.descendants(session, [nodes[0].id])) > 10  # not a trivial forest


def _breadth_first(nodes, top, viewer, depth, max_children, max_nodes) -> list[int]:
    """The capped subtree, walked in Python: the top, then level by level, parents in id order,
    each one's most installed visible children (ties by id), stopping at ``max_nodes``."""
    children: dict[int, list[SubAgent]] = {}
    for node in sorted(nodes, key=lambda n: (-n.install_count, n.id)):
        if _visible_in_trees(node, viewer):
            children.setdefault(node.parent_id, []).append(node)
    rows, frontier = [top], [top]
    for _level in range(depth):
        if not frontier or len(rows) >= max_nodes:
            break
        level = []
        for parent in sorted(frontier, key=lambda n: n.id):
            level.extend(children.get(parent.id, [])[:max_children])
        frontier = []
        for node in level:
            if len(rows) >= max_nodes:
                break
            rows.append(node)
            frontier.append(node)
    return [n.id for n in rows]


TREE_CAPS = [(6, 3, 150), (2, 2, 5), (6, 1, 4), (3, 5, 40), (1, 20, 2000)]


@pytest.mark.parametrize(("depth", "max_children", "max_nodes"), TREE_CAPS)
def test_the_one_query_subtree_reads_what_the_level_by_level_walk_reads(
    engine, forest, depth, max_children, max_nodes
):
    nodes = forest["nodes"]
    # The roots and the bushy early nodes, and a sample of the rest (leaves included).
    tops = nodes[:10] + random.Random(depth * 100 + max_children).sample(nodes[10:], 30)
    columns = ("id", "parent_id", "depth", "title", "status", "install_count", "fork_count")
    with session_scope(engine) as session:
        for viewer in forest["viewers"]:
            for top in tops:
                args = (session, viewer, top, depth, max_children, max_nodes)
                one = browse._subtree_in_one_query(*args)
                by_level = browse._subtree_by_level(*args)
                assert [tuple(getattr(r, c) for c in columns) for r in one] == [
                    tuple(getattr(r, c) for c in columns) for r in by_level
                ], (viewer.user_id, top.id)
                expected = _breadth_first(nodes, top, viewer, depth, max_children, max_nodes)
                assert [r.id for r in one] == expected, (viewer.user_id, top.id)


def test_subtree_picks_the_one_query_read_only_when_its_worst_case_is_small(engine, forest):
    assert browse._full_tree_size(6, 3) <= browse.WHOLE_QUERY_MAX_ROWS
    assert browse._full_tree_size(6, 20) > browse.WHOLE_QUERY_MAX_ROWS
    top = forest["nodes"][0]
    with session_scope(engine) as session:
        for max_children in (3, 20):
            tree = browse.subtree(
                session, ANONYMOUS, top, None, depth=6, max_children=max_children, max_nodes=150
            )
            expected = _breadth_first(forest["nodes"], top, ANONYMOUS, 6, max_children, 150)
            assert [n.id for n in tree.nodes] == expected
            shown = {n.id: n.shown_children for n in tree.nodes}
            for node in tree.nodes:
                drawn = [m for m in tree.nodes[1:] if m.parent_id == node.id]
                assert shown[node.id] == len(drawn)
