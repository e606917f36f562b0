"""Lineage updates (item 3b of issue 18): scoring some trees alone, with the global fit of a
whole run, gives them exactly the figures the whole run gave them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolution.ranking import NodeNoise, Ratings, rank, sample_lineage, usage_stats
from evolution.tree import Forest

FIELDS = ("mean", "sd", "display", "branch_value", "p_descendant_better", "fork_gain", "rising")


def catalog(seed: int, n: int = 300, n_users: int = 60):
    """A forest of ~30 trees with stars and thumbs, aged ratings and usage."""
    rng = np.random.default_rng(seed)
    ids = np.arange(1, n + 1) * 3  # ids with gaps, as a database has after deletes
    index = np.arange(n)
    parent_index = np.floor(index * rng.random(n) ** 2).astype(np.int64)
    parents = np.where(index < n // 10, -1, ids[parent_index])
    forest = Forest.from_parents(ids, parents)
    m = 6 * n
    items = np.floor(n * rng.random(m) ** 1.5).astype(np.int64)
    thumbs = rng.random(m) < 0.2
    stars = np.clip(np.round(3 + rng.normal(0, 1.2, m)), 1, 5)
    ratings = Ratings(
        user_idx=rng.integers(0, n_users, m),
        item_idx=items,
        value=np.where(thumbs, rng.random(m) < 0.6, stars).astype(np.float64),
        is_thumb=thumbs,
        age_days=rng.uniform(0, 90, m),
    )
    events = (
        rng.integers(0, n, 4 * n),
        rng.integers(0, n_users, 4 * n),
        rng.integers(0, 60, 4 * n).astype(np.float64),
    )
    return forest, ratings, events, n_users


def trees_alone(forest: Forest, ratings: Ratings, events, roots: np.ndarray):
    """The chosen trees as their own forest (nodes in catalog order), their ratings and events
    in the order the catalog holds them, and where each of their nodes sits in the catalog."""
    nodes = np.sort(forest.nodes_of_roots(roots))
    parent = forest.parent[nodes]
    part = Forest.from_parents(
        forest.ids[nodes], np.where(parent >= 0, forest.ids[np.maximum(parent, 0)], -1)
    )
    local = np.full(forest.n, -1)
    local[nodes] = np.arange(nodes.size)
    keep = local[ratings.item_idx] >= 0
    part_ratings = Ratings(
        user_idx=ratings.user_idx[keep],
        item_idx=local[ratings.item_idx[keep]],
        value=ratings.value[keep],
        is_thumb=ratings.is_thumb[keep],
        age_days=ratings.age_days[keep],
    )
    used = local[events[0]] >= 0
    part_events = (local[events[0][used]], events[1][used], events[2][used])
    return part, part_ratings, part_events, nodes


def whole_and_alone(seed: int, roots: np.ndarray, eligible_share: float = 0.9):
    forest, ratings, events, n_users = catalog(seed)
    eligible = np.random.default_rng(seed + 1).random(forest.n) < eligible_share
    ages = np.random.default_rng(seed + 2).uniform(0, 90, forest.n)
    usage = usage_stats(*events, forest.n)
    whole = rank(
        forest, ratings, n_users=n_users, usage=usage, item_age_days=ages,
        eligible=eligible, noise_seed=7,
    )  # fmt: skip
    part, part_ratings, part_events, nodes = trees_alone(forest, ratings, events, roots)
    alone = rank(
        part,
        part_ratings,
        n_users=n_users,
        usage=usage_stats(*part_events, part.n, retention_rate=usage.retention_rate),
        item_age_days=ages[nodes],
        eligible=eligible[nodes],
        fit=whole.fit,
        noise_seed=7,
    )
    return whole, alone, nodes


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), picks=st.lists(st.integers(0, 29), min_size=1, max_size=5))
def test_trees_scored_alone_with_the_fit_equal_the_whole_run(seed, picks):
    forest = catalog(seed)[0]
    roots = np.unique(forest.roots[np.array(picks) % forest.roots.size])
    whole, alone, nodes = whole_and_alone(seed, roots)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(alone, name), getattr(whole, name)[nodes], name)
    best = np.where(alone.best_descendant >= 0, nodes[np.maximum(alone.best_descendant, 0)], -1)
    np.testing.assert_array_equal(best, whole.best_descendant[nodes])
    np.testing.assert_array_equal(alone.young, whole.young[nodes])
    for name in ("active_users", "retention", "score", "trending"):
        np.testing.assert_array_equal(getattr(alone.usage, name), getattr(whole.usage, name)[nodes])


def test_the_fit_holds_what_a_lineage_update_needs():
    forest, ratings, _, n_users = catalog(3)
    whole = rank(forest, ratings, n_users=n_users, noise_seed=1)
    assert whole.fit is not None
    assert len(whole.fit.priors) == 5  # the first reading, then four censored rounds
    assert whole.fit.user_offset is whole.baseline.user_offset
    assert whole.fit.scale_centre[1] != 0.5  # thumbs measured, not the fallback


def test_a_changed_tree_scored_alone_moves_and_the_others_stay():
    """New ratings on one tree: scored alone with the old fit it moves; the others' figures
    (not recomputed) are still the whole run's."""
    forest, ratings, _, n_users = catalog(11)
    whole = rank(forest, ratings, n_users=n_users, noise_seed=7)
    root = forest.roots[0]
    target = forest.nodes_of_roots(np.array([root]))[-1]
    more = Ratings(
        user_idx=np.r_[ratings.user_idx, np.arange(20)],
        item_idx=np.r_[ratings.item_idx, np.full(20, target)],
        value=np.r_[ratings.value, np.full(20, 5.0)],
        is_thumb=np.r_[ratings.is_thumb, np.zeros(20, bool)],
        age_days=np.r_[ratings.age_days, np.zeros(20)],
    )
    part, part_ratings, _, nodes = trees_alone(forest, more, (np.zeros(0, int),) * 3, [root])
    alone = rank(part, part_ratings, n_users=n_users, fit=whole.fit, noise_seed=7)
    assert alone.mean[np.searchsorted(nodes, target)] > whole.mean[target]
    # And a whole run with the same fit agrees on that tree.
    again = rank(forest, more, n_users=n_users, fit=whole.fit, noise_seed=7)
    np.testing.assert_array_equal(alone.mean, again.mean[nodes])
    np.testing.assert_array_equal(alone.branch_value, again.branch_value[nodes])


def test_node_noise_depends_on_the_id_only():
    noise = NodeNoise(4)
    ids = np.array([5, 9000, 3, 70_000, 12])
    together = noise.draws(ids, 16, 8)
    for k, node in enumerate(ids):
        np.testing.assert_array_equal(noise.draws(np.array([node]), 16, 8)[0], together[k])
    assert not np.array_equal(noise.draws(ids, 0, 8), together)  # other draws, other numbers
    assert abs(float(noise.draws(np.arange(20_000), 0, 8).std()) - 1.0) < 0.02
    with pytest.raises(ValueError):
        noise.draws(np.array([-2]), 0, 4)


def test_keyed_draws_sample_the_same_posterior():
    """Draws keyed by id are draws of the same joint posterior as a generator's."""
    forest, ratings, _, n_users = catalog(5)
    whole = rank(forest, ratings, n_users=n_users)
    keyed = sample_lineage(forest, whole.posterior, 400, NodeNoise(2), dtype=np.float64)
    assert np.abs(keyed.mean(axis=1) - whole.posterior.mean).max() < 5 * whole.sd.max() / 20


def test_usage_in_whole_days_sorts_keys_and_ages_together():
    """The one-sort path for whole-day ages gives what the general path gives."""
    rng = np.random.default_rng(2)
    items, users = rng.integers(0, 50, 3000), rng.integers(0, 40, 3000)
    days = rng.integers(0, 180, 3000).astype(np.float64)
    whole = usage_stats(items, users, days, 50)
    # A millionth of a day changes no week bucket and no decayed weight beyond 1e-7, but
    # takes the general path (an argsort and two gathers).
    general = usage_stats(items, users, days + 1e-6, 50)
    for name in ("active_users", "retention", "score", "recent_users", "weekly_baseline"):
        np.testing.assert_allclose(getattr(whole, name), getattr(general, name), rtol=1e-6)
    np.testing.assert_array_equal(whole.trending, general.trending)
