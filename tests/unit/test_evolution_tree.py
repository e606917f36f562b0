"""evolution.tree: the fork forest as arrays, checked against networkx on random forests."""

from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np
import pytest

from evolution.tree import Forest, ForestError


def random_forest(rng: np.random.Generator, n: int, root_share: float = 0.1) -> Forest:
    """Node i's parent is an earlier node (or none); ids are shuffled and sparse, rows shuffled,
    so construction cannot lean on any ordering."""
    parent = np.array(
        [-1 if i == 0 or rng.random() < root_share else rng.integers(0, i) for i in range(n)]
    )
    ids = rng.choice(10**12, size=n, replace=False).astype(np.int64)
    parent_ids = np.where(parent >= 0, ids[np.maximum(parent, 0)], -1)
    rows = rng.permutation(n)
    return Forest.from_parents(ids[rows], parent_ids[rows])


@pytest.mark.parametrize("seed", range(12))
def test_layout_matches_networkx(seed):
    rng = np.random.default_rng(seed)
    forest = random_forest(rng, int(rng.integers(1, 120)))
    graph = forest.to_networkx()
    assert nx.is_forest(graph)
    position_in_order = np.empty(forest.n, dtype=np.int64)
    position_in_order[forest.order] = np.arange(forest.n)
    for v in range(forest.n):
        descendants = nx.descendants(graph, v)
        ancestors = nx.ancestors(graph, v)
        assert set(forest.subtree(v).tolist()) == descendants | {v}
        assert forest.subtree_end[v] - forest.preorder[v] == len(descendants) + 1
        assert forest.depth[v] == len(ancestors)
        expected_root = min(ancestors, key=lambda a: forest.depth[a]) if ancestors else v
        assert forest.root[v] == expected_root
        assert set(forest.children(v).tolist()) == set(graph.successors(v))
        if forest.parent[v] >= 0:
            assert position_in_order[forest.parent[v]] < position_in_order[v]
            assert (
                forest.order_parent_pos[position_in_order[v]] == position_in_order[forest.parent[v]]
            )
    assert np.array_equal(np.sort(forest.preorder_nodes), np.arange(forest.n))
    assert np.array_equal(forest.preorder_nodes[forest.preorder], np.arange(forest.n))
    # Levels are contiguous slices of `order`, shallowest first.
    for d, level in enumerate(forest.levels()):
        assert np.all(forest.depth[level] == d)
    assert set(forest.roots.tolist()) == {v for v in graph if graph.in_degree(v) == 0}


def test_index_of_and_ids_round_trip():
    forest = Forest.from_parents(np.array([30, 10, 20]), np.array([10, -1, 10]))
    assert forest.index_of(np.array([10, 20, 30])).tolist() == [1, 2, 0]
    assert forest.ids[forest.parent[0]] == 10
    with pytest.raises(KeyError):
        forest.index_of(np.array([10, 99]))
    assert forest.index_of(np.array([99, 20]), missing=-1).tolist() == [-1, 2]


def test_index_of_sparse_ids():
    ids = np.array([5, 10**15, 77, -3])
    forest = Forest.from_parents(ids, np.array([-1, 5, 10**15, 77]))
    assert forest.index_of(ids).tolist() == [0, 1, 2, 3]
    assert forest.depth.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("ids", "parents", "message"),
    [
        ([1, 2], [2, 1], "cycle"),
        ([1], [1], "cycle"),
        ([1, 2, 3, 4], [-1, 3, 4, 2], "cycle"),  # a cycle beside a valid tree
        ([1, 2, 3], [-1, 3, 2], "cycle"),
        ([1, 2, 3, 4], [4, 1, 2, 3], "cycle"),  # no root at all
        ([1, 2], [-1, 5], "unknown parent id 5"),
        ([1, 1], [-1, -1], "duplicate id 1"),
        ([-1, 2], [-1, -1], "cannot be an id"),
    ],
)
def test_invalid_parent_links(ids, parents, message):
    with pytest.raises(ForestError, match=message):
        Forest.from_parents(np.array(ids), np.array(parents))


def test_tail_hanging_under_a_cycle_is_rejected():
    # 5 -> 4 -> (3 <-> 2): no path to a root.
    with pytest.raises(ForestError, match="cycle"):
        Forest.from_parents(np.array([1, 2, 3, 4, 5]), np.array([-1, 3, 2, 3, 4]))


def test_shape_mismatch():
    with pytest.raises(ForestError):
        Forest.from_parents(np.array([1, 2]), np.array([-1]))


def test_empty_forest():
    forest = Forest.from_parents(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert forest.n == 0
    assert forest.reduce_up(np.zeros(0), "max").size == 0


@pytest.mark.parametrize("seed", range(8))
def test_vectorized_passes_match_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    forest = random_forest(rng, int(rng.integers(1, 150)), root_share=0.05)
    graph = forest.to_networkx()
    values = rng.normal(size=forest.n)
    two_columns = rng.normal(size=(forest.n, 2))
    sums, maxima, minima = (forest.reduce_up(values, op) for op in ("sum", "max", "min"))
    counts = forest.reduce_up(np.ones(forest.n, dtype=np.int64), "sum")
    column_max = forest.reduce_up(two_columns, "max")
    child_max = forest.reduce_children(values, "max", -np.inf)
    child_sum = forest.reduce_children(values, "sum", 0.0)
    path = forest.path_sum(values)
    for v in range(forest.n):
        subtree = list(nx.descendants(graph, v) | {v})
        children = list(graph.successors(v))
        assert sums[v] == pytest.approx(values[subtree].sum())
        assert maxima[v] == values[subtree].max()
        assert minima[v] == values[subtree].min()
        assert counts[v] == len(subtree)
        assert np.array_equal(column_max[v], two_columns[subtree].max(axis=0))
        assert child_max[v] == (values[children].max() if children else -np.inf)
        assert child_sum[v] == pytest.approx(values[children].sum() if children else 0.0)
        assert path[v] == pytest.approx(values[[*nx.ancestors(graph, v), v]].sum())
    assert counts.dtype.kind == "i"


def test_subforest_and_nodes_of_roots():
    rng = np.random.default_rng(7)
    forest = random_forest(rng, 200, root_share=0.05)
    chosen = forest.roots[::2]
    nodes = forest.nodes_of_roots(chosen)
    assert set(nodes.tolist()) == {v for v in range(forest.n) if forest.root[v] in set(chosen)}
    part, mapped = forest.subforest(chosen)
    assert np.array_equal(forest.ids[mapped], part.ids)
    parent_ids = np.where(part.parent >= 0, part.ids[np.maximum(part.parent, 0)], -1)
    expected = np.where(
        forest.parent[mapped] >= 0, forest.ids[np.maximum(forest.parent[mapped], 0)], -1
    )
    assert np.array_equal(parent_ids, expected)
    with pytest.raises(ValueError):
        forest.nodes_of_roots(np.array([np.flatnonzero(forest.parent >= 0)[0]]))


@pytest.mark.parametrize("seed", range(6))
def test_level_order_numbering_is_the_forest_built_from_rows_in_that_order(seed):
    """``in_level_order`` permutes the arrays it has instead of walking the forest again: it
    must give, field for field and type for type, what a fresh build from the rows in level
    order gives, with ``order`` the identity and ``by_id`` still the id order."""
    rng = np.random.default_rng(200 + seed)
    forest = random_forest(rng, int(rng.integers(0, 160)), root_share=0.08)
    relabelled, old = forest.in_level_order()
    parent_ids = np.where(forest.parent >= 0, forest.ids[np.maximum(forest.parent, 0)], -1)
    fresh = Forest.from_parents(forest.ids[old], parent_ids[old])
    for name in (f.name for f in dataclasses.fields(Forest)):
        mine, theirs = getattr(relabelled, name), getattr(fresh, name)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), name
    assert np.array_equal(relabelled.order, np.arange(forest.n))
    assert np.array_equal(old, forest.order)
    assert np.all(np.diff(relabelled.ids[relabelled.by_id]) > 0)
    # A pass gives every node the same answer under either numbering.
    values = rng.normal(size=forest.n)
    assert np.array_equal(
        relabelled.reduce_up(values[old], "max"), forest.reduce_up(values, "max")[old]
    )
    assert np.array_equal(relabelled.path_sum(values[old]), forest.path_sum(values)[old])


def test_deep_chain():
    n = 3000
    forest = Forest.from_parents(np.arange(n), np.arange(n) - 1)
    assert forest.n_levels == n
    assert forest.depth[-1] == n - 1
    assert forest.reduce_up(np.arange(n, dtype=float), "max")[0] == n - 1
    assert forest.subtree_end[0] == n


def test_scale_smoke_200k():
    """Construction and the lineage passes on 200,000 random nodes (no timing assertion)."""
    from evolution.ranking import lineage_posterior

    rng = np.random.default_rng(0)
    n = 200_000
    position = np.arange(n)
    parent = np.where(position < 2_000, -1, (position * rng.random(n)).astype(np.int64))
    ids = rng.permutation(n).astype(np.int64) + 10**9
    forest = Forest.from_parents(ids, np.where(parent >= 0, ids[np.maximum(parent, 0)], -1))
    assert forest.reduce_up(np.ones(n, dtype=np.int64), "sum")[forest.roots].sum() == n
    precision = np.where(rng.random(n) < 0.3, rng.exponential(5.0, n), 0.0)
    posterior = lineage_posterior(
        forest,
        rng.normal(size=n),
        precision,
        prior_mean=0.0,
        prior_var=1.0,
        drift_mean=-0.1,
        drift_var=0.3,
    )
    assert np.all(np.isfinite(posterior.mean)) and np.all(posterior.var > 0)
