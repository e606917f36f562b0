"""Personal scores: the taste term on top of the ranking's μ + b_u + θ_v (evolution.personal)."""

from __future__ import annotations

import numpy as np
import pytest

from evolution.personal import NonPersonal, fit_taste, personal_scores, predict_ratings
from evolution.ranking import debias, lineage_belief
from evolution.tree import Forest


def forked_catalog(rng, n_roots: int = 30, n_forks: int = 120) -> Forest:
    n = n_roots + n_forks
    parent = np.full(n, -1)
    forks = np.arange(n_roots, n)
    parent[forks] = (rng.random(n_forks) * forks).astype(np.int64)
    return Forest.from_parents(np.arange(n), parent)


def ratings(rng, n_users: int, n_items: int, m: int):
    user = rng.integers(0, n_users, m)
    item = rng.integers(0, n_items, m)
    keep = np.unique(user * n_items + item, return_index=True)[1]  # one rating per pair
    return user[keep], item[keep]


def non_personal_fit(user, item, value, forest: Forest, n_users: int) -> NonPersonal:
    baseline = debias(user, item, value, n_users, forest.n)
    theta = lineage_belief(forest, baseline).posterior.mean
    return NonPersonal(baseline.global_mean, baseline.user_offset, theta)


def test_without_taste_the_personal_score_is_the_non_personal_one():
    rng = np.random.default_rng(0)
    forest = forked_catalog(rng)
    n_users = 400
    user, item = ratings(rng, n_users, forest.n, 12_000)
    leniency, quality = rng.normal(0, 0.5, n_users), rng.normal(0, 1, forest.n)
    value = 0.2 + leniency[user] + quality[item] + rng.normal(0, 0.7, user.size)
    base = non_personal_fit(user, item, value, forest, n_users)

    taste = fit_taste(user, item, value, forest, base)

    every_user = np.repeat(np.arange(n_users), forest.n)
    every_item = np.tile(np.arange(forest.n), n_users)
    change = predict_ratings(taste, base, every_user, every_item) - base.predict(
        every_user, every_item
    )
    assert np.sqrt(np.mean(change**2)) < 0.02
    assert np.max(np.abs(change)) < 0.1


def planted_rank_two_taste(rng, forest: Forest, n_users: int):
    """30,000 ratings: leniency, quality, a rank-two taste (variance 2) and noise (sd 0.5)."""
    user, item = ratings(rng, n_users, forest.n, 30_000)
    preference, style = rng.normal(0, 1, (n_users, 2)), rng.normal(0, 1, (forest.n, 2))
    leniency, quality = rng.normal(0, 0.5, n_users), rng.normal(0, 1, forest.n)
    taste_term = np.einsum("ij,ij->i", preference[user], style[item])
    return user, item, leniency[user] + quality[item] + taste_term + rng.normal(0, 0.5, user.size)


def test_a_planted_rank_two_taste_is_found_on_held_out_ratings():
    rng = np.random.default_rng(1)
    forest = forked_catalog(rng)
    n_users = 600
    user, item, value = planted_rank_two_taste(rng, forest, n_users)
    test = rng.random(user.size) < 0.2
    train = ~test
    base = non_personal_fit(user[train], item[train], value[train], forest, n_users)

    taste = fit_taste(user[train], item[train], value[train], forest, base, rank=4)

    def rmse(predicted):
        return np.sqrt(np.mean((predicted - value[test]) ** 2))

    flat = rmse(base.predict(user[test], item[test]))
    personal = rmse(predict_ratings(taste, base, user[test], item[test]))
    assert flat > 1.2  # the taste term (variance 2) is most of what the ranking misses
    assert personal < 0.6 * flat


def test_a_few_sweeps_from_the_last_fit_do_what_a_fresh_fit_does_on_a_grown_catalog():
    """Yesterday's factors, a day's new ratings and new forks later: two sweeps with
    yesterday's λ from yesterday's factors (new forks from random ones) predict held-out
    ratings as well as choosing λ again and fitting from scratch, while the same two sweeps
    from random factors do worse (held-out RMSE 0.58, 0.58 and 0.67 when written)."""
    rng = np.random.default_rng(4)
    forest = forked_catalog(rng, n_roots=30, n_forks=150)
    yesterday_n = 160  # the last 20 forks are new today
    n_users = 600
    user, item, value = planted_rank_two_taste(rng, forest, n_users)
    test = rng.random(user.size) < 0.2
    today = ~test
    yesterday = today & (item < yesterday_n) & (rng.random(user.size) < 0.9)
    base = non_personal_fit(user[today], item[today], value[today], forest, n_users)

    first = fit_taste(user[yesterday], item[yesterday], value[yesterday], forest, base, rank=4)
    assert np.isfinite(first.reg)
    start = first.item_factors.copy()
    start[yesterday_n:] = 0.0  # the new forks were not in yesterday's catalog

    def held_out(taste):
        predicted = predict_ratings(taste, base, user[test], item[test])
        return np.sqrt(np.mean((predicted - value[test]) ** 2))

    fresh = fit_taste(user[today], item[today], value[today], forest, base, rank=4)
    warm = fit_taste(
        user[today], item[today], value[today], forest, base,
        rank=4, reg=first.reg, sweeps=2, start=start,
    )  # fmt: skip
    cold = fit_taste(
        user[today], item[today], value[today], forest, base, rank=4, reg=first.reg, sweeps=2
    )
    assert held_out(warm) <= held_out(fresh) * 1.01
    assert held_out(cold) > held_out(warm) * 1.05


def test_a_start_of_the_wrong_shape_or_with_nan_is_refused():
    rng = np.random.default_rng(5)
    forest = forked_catalog(rng)
    user, item = ratings(rng, 50, forest.n, 2_000)
    value = rng.normal(0, 1, user.size)
    base = non_personal_fit(user, item, value, forest, 50)
    for start in (np.zeros((forest.n - 1, 4)), np.full((forest.n, 4), np.nan)):
        with pytest.raises(ValueError, match="start"):
            fit_taste(user, item, value, forest, base, rank=4, reg=5.0, start=start)


def planted_tree_taste(rng):
    """Roots 0 and 1 with opposite styles and many ratings; 2 a fork of 0 and 3 of 1, never
    rated; 4 a fork of 2, never rated either."""
    forest = Forest.from_parents(np.arange(5), np.array([-1, -1, 0, 1, 2]))
    n_users = 300
    preference = rng.normal(0, 1, (n_users, 2))
    style = np.array([[1.5, 0.0], [-1.5, 0.5]])
    user = np.repeat(np.arange(n_users), 2)
    item = np.tile([0, 1], n_users)
    value = np.einsum("ij,ij->i", preference[user], style[item]) + rng.normal(0, 0.3, user.size)
    base = NonPersonal(0.0, np.zeros(n_users + 1), np.zeros(forest.n))  # user 300 never rated
    return forest, user, item, value, base


def test_a_fork_without_ratings_inherits_its_parents_taste():
    forest, user, item, value, base = planted_tree_taste(np.random.default_rng(2))

    taste = fit_taste(user, item, value, forest, base, rank=2)

    q = taste.item_factors
    assert np.linalg.norm(q[0]) > 0.5 and np.linalg.norm(q[0] - q[1]) > 0.5
    np.testing.assert_allclose(q[2], q[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(q[3], q[1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(q[4], q[0], rtol=1e-9, atol=1e-12)


def test_a_user_without_ratings_gets_the_non_personal_score_exactly():
    forest, user, item, value, base = planted_tree_taste(np.random.default_rng(3))
    taste = fit_taste(user, item, value, forest, base, rank=2)
    items = np.arange(forest.n)
    silent = len(base.user_offset) - 1  # a user index with no rating

    assert np.all(taste.user_factors[silent] == 0)
    np.testing.assert_array_equal(
        personal_scores(taste, base, silent, items), base.predict(np.full(5, silent), items)
    )
    newcomer = len(base.user_offset) + 7  # registered after the fit
    np.testing.assert_array_equal(
        personal_scores(taste, base, newcomer, items), base.global_mean + base.item_mean
    )
    rater = 0
    assert not np.array_equal(
        personal_scores(taste, base, rater, items), base.predict(np.zeros(5, int), items)
    )


def test_item_factors_are_the_exact_minimizer_given_the_users():
    """The two tree passes against one dense solve of the same quadratic."""
    rng = np.random.default_rng(4)
    forest = forked_catalog(rng, n_roots=3, n_forks=9)
    n_users, k = 40, 2
    user, item = ratings(rng, n_users, forest.n, 150)
    value = rng.normal(0, 1, user.size)
    base = NonPersonal(0.1, rng.normal(0, 0.3, n_users), rng.normal(0, 0.5, forest.n))
    taste = fit_taste(user, item, value, forest, base, rank=k, reg=2.0, fork_ratio=2.5)

    p = taste.user_factors
    residual = value - base.predict(user, item)
    normal = np.zeros((forest.n * k, forest.n * k))
    right = np.zeros(forest.n * k)
    for u, v, e in zip(user, item, residual, strict=True):
        normal[v * k : v * k + k, v * k : v * k + k] += np.outer(p[u], p[u])
        right[v * k : v * k + k] += e * p[u]
    for v in range(forest.n):
        c = forest.parent[v]
        block = slice(v * k, v * k + k)
        if c < 0:
            normal[block, block] += 2.0 * np.eye(k)
            continue
        up = slice(c * k, c * k + k)
        normal[block, block] += 5.0 * np.eye(k)
        normal[up, up] += 5.0 * np.eye(k)
        normal[block, up] -= 5.0 * np.eye(k)
        normal[up, block] -= 5.0 * np.eye(k)
    exact = np.linalg.solve(normal, right).reshape(forest.n, k)

    np.testing.assert_allclose(taste.item_factors, exact, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(
    "change",
    [
        lambda u, i, v, b: (u[:-1], i, v, b),  # lengths differ
        lambda u, i, v, b: (u, i, np.where(np.arange(v.size) == 3, np.nan, v), b),
        lambda u, i, v, b: (u, i, np.where(np.arange(v.size) == 3, np.inf, v), b),
        lambda u, i, v, b: (u, i + 100, v, b),  # sub-agent out of range
        lambda u, i, v, b: (u - 1, i, v, b),  # negative user
        lambda u, i, v, b: (u.astype(float), i, v, b),
        lambda u, i, v, b: (u, i, v, NonPersonal(0.0, b.user_offset, b.item_mean[:-1])),
        lambda u, i, v, b: (u, i, v, NonPersonal(0.0, b.user_offset + np.nan, b.item_mean)),
    ],
)
def test_hostile_input_is_refused(change):
    forest, user, item, value, base = planted_tree_taste(np.random.default_rng(5))
    u, i, v, b = change(user, item, value, base)
    with pytest.raises(ValueError):
        fit_taste(u, i, v, forest, b, rank=2)


def test_scores_of_unknown_sub_agents_are_refused():
    forest, user, item, value, base = planted_tree_taste(np.random.default_rng(6))
    taste = fit_taste(user, item, value, forest, base, rank=2)
    with pytest.raises(ValueError):
        personal_scores(taste, base, 0, np.array([0, forest.n]))
    with pytest.raises(ValueError):
        personal_scores(taste, base, -1, np.array([0]))
