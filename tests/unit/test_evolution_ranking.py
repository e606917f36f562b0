"""evolution.ranking: every formula on hand-checked cases, the tree posterior against a dense
Gaussian computed with numpy.linalg."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from evolution import ranking
from evolution.ranking import (
    Baseline,
    LineagePrior,
    Ratings,
    ancestor_covariance_gain,
    best_descendant,
    branch_drift,
    branch_value,
    censored_evidence,
    censoring_bounds,
    debias,
    estimate_lineage_prior,
    fork_gain,
    lineage_posterior,
    rank,
    rating_levels,
    rising_score,
    sample_lineage,
    to_common_scale,
    usage_stats,
)
from evolution.tree import Forest


def dense_posterior(parent, obs_mean, obs_precision, mu0, var0, drift, tau2):
    """The same model as one joint Gaussian: prior precision from the tree's factors, plus the
    observations, inverted with numpy.linalg."""
    precision = np.diag(np.asarray(obs_precision, dtype=float))
    info = np.asarray(obs_precision, dtype=float) * np.asarray(obs_mean, dtype=float)
    for v, p in enumerate(parent):
        if p < 0:
            precision[v, v] += 1 / var0
            info[v] += mu0 / var0
        else:  # (θ_v − θ_p − δ̄)² / τ²
            precision[v, v] += 1 / tau2
            precision[p, p] += 1 / tau2
            precision[v, p] -= 1 / tau2
            precision[p, v] -= 1 / tau2
            info[v] += drift / tau2
            info[p] -= drift / tau2
    covariance = np.linalg.inv(precision)
    return covariance @ info, covariance


def forest_of(parent: list[int]) -> Forest:
    return Forest.from_parents(np.arange(len(parent)), np.array(parent))


PRIOR = {"prior_mean": 0.2, "prior_var": 0.8, "drift_mean": -0.1, "drift_var": 0.3}


def posterior_of(forest, y, precision, **prior):
    return lineage_posterior(forest, np.asarray(y, float), np.asarray(precision, float), **prior)


# --------------------------------------------------------------------------- scale and bias
def test_common_scale_z_scores_each_kind():
    stars = np.array([1, 3, 5, 5.0])
    thumbs = np.array([0, 1, 1, 1.0])
    z = to_common_scale(np.r_[stars, thumbs], np.r_[np.zeros(4, bool), np.ones(4, bool)])
    assert z[:4] == pytest.approx((stars - stars.mean()) / stars.std())
    assert z[4:] == pytest.approx((thumbs - thumbs.mean()) / thumbs.std())
    # Too few ratings of a kind: fixed fallbacks.
    assert to_common_scale(np.array([5.0]), np.array([False]))[0] == pytest.approx(2 / 1.2)
    assert to_common_scale(np.array([0.0]), np.array([True]))[0] == pytest.approx(-1.0)


def test_censoring_bounds_of_end_of_scale_ratings():
    # Stars 1, 3, 3, 5: mean 3, sd √2. Thumbs 0, 1: mean 0.5, sd 0.5.
    value = np.array([1, 3, 3, 5, 0, 1.0])
    thumb = np.array([False] * 4 + [True] * 2)
    bound, direction = censoring_bounds(value, thumb)
    root2 = math.sqrt(2)
    assert direction.tolist() == [-1, 0, 0, 1, -1, 1]
    assert bound == pytest.approx([-1.5 / root2, 0, 0, 1.5 / root2, 0, 0])
    # Inside the scale the bound is the rating's own value on the common scale.
    assert bound[1:3] == pytest.approx(to_common_scale(value, thumb)[1:3])


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float64])
def test_whole_number_ratings_take_the_table_path_with_the_same_numbers(dtype):
    """Stars and thumbs of any numeric type read the 16-entry table; half stars (any other
    value) are numbered by np.unique. Both give the formula's numbers."""
    rng = np.random.default_rng(3)
    thumb = rng.random(5000) < 0.3
    value = np.where(thumb, rng.integers(0, 2, 5000), rng.integers(1, 6, 5000)).astype(dtype)
    levels = rating_levels(value, thumb)
    assert levels.code.dtype == np.uint8 and levels.levels.size == 8
    z = to_common_scale(value, thumb)
    for kind in (False, True):
        mine = value[thumb == kind].astype(float)
        assert z[thumb == kind] == pytest.approx((mine - mine.mean()) / mine.std(), abs=1e-12)

    half = value.astype(float) + np.where(thumb, 0.0, 0.5 * (rng.random(5000) < 0.2))
    levels = rating_levels(half, thumb)
    assert levels.code.dtype == np.intp and 0.5 in levels.levels % 1
    z = to_common_scale(half, thumb)
    stars = half[~thumb]
    assert z[~thumb] == pytest.approx((stars - stars.mean()) / stars.std(), abs=1e-12)
    bound, direction = censoring_bounds(half, thumb)
    # 4.5 stars is inside the scale; only 5 is a top box.
    assert set(direction[~thumb & (half == 4.5)]) == {0}
    assert set(direction[~thumb & (half == 5)]) == {1}
    assert bound[~thumb & (half == 4.5)] == pytest.approx(z[~thumb & (half == 4.5)])


def one_scale_baseline(n_items: int, user_offset=(0.0,), global_mean=0.0, noise_var=1.0):
    return Baseline(
        global_mean=global_mean,
        user_offset=np.asarray(user_offset, float),
        item_effect=np.zeros(n_items),
        item_count=np.zeros(n_items),
        item_evidence=np.zeros(n_items),
        noise_var=noise_var,
        item_noise_var=np.full(n_items, noise_var),
    )


def test_censored_evidence_of_one_top_box_rating_at_the_boundary():
    """θ on the boundary (α = 0): the truncated normal x | x ≥ 0 has mean √(2/π) and variance
    1 − 2/π, so the rating weighs ρ = 2/π and reads as θ + 1/λ(0) = √(π/2)."""
    baseline = one_scale_baseline(2)
    one = np.zeros(1, np.int64)
    y, precision = censored_evidence(
        baseline, one, one, np.zeros(1), np.ones(1, np.int8), np.zeros(2)
    )
    assert y[0] == pytest.approx(math.sqrt(math.pi / 2))
    assert precision[0] == pytest.approx(2 / math.pi)
    assert y[1] == 0 and precision[1] == 0  # no ratings, no evidence
    # A bottom-box rating is the mirror image; σ² = 4 halves what it reads and quarters its weight.
    baseline = one_scale_baseline(2, noise_var=4.0)
    y, precision = censored_evidence(
        baseline, one, one, np.zeros(1), -np.ones(1, np.int8), np.zeros(2)
    )
    assert y[0] == pytest.approx(-2 * math.sqrt(math.pi / 2))
    assert precision[0] == pytest.approx(2 / math.pi / 4)


@pytest.mark.parametrize("theta", [-4.0, -1.0, 0.3, 2.0, 6.0])
def test_censored_evidence_has_the_tobit_slope_and_curvature(theta):
    """The Gaussian pseudo-rating −ρ(θ − y)²/2σ² matches the log-likelihood of a top-box rating,
    log P(x ≥ c | θ) = log Φ((θ + μ + b_u − c)/σ), in slope and curvature at θ (checked by
    finite differences of scipy's norm.logcdf)."""
    sigma, c, mu, b = 1.3, 0.4, 0.1, -0.2
    baseline = one_scale_baseline(1, user_offset=[b], global_mean=mu, noise_var=sigma**2)
    one = np.zeros(1, np.int64)
    y, precision = censored_evidence(
        baseline, one, one, np.array([c]), np.ones(1, np.int8), np.array([theta])
    )

    def loglik(t):
        return norm.logcdf((t + mu + b - c) / sigma)

    h = 1e-4
    slope = (loglik(theta + h) - loglik(theta - h)) / (2 * h)
    curvature = (loglik(theta + h) - 2 * loglik(theta) + loglik(theta - h)) / h**2
    assert precision[0] * (y[0] - theta) == pytest.approx(slope, rel=1e-5, abs=1e-9)
    assert -precision[0] == pytest.approx(curvature, rel=1e-3, abs=1e-6)


def test_censored_evidence_far_inside_and_against_the_belief():
    baseline = one_scale_baseline(2)
    items = np.array([0, 1], np.int64)
    users = np.zeros(2, np.int64)
    y, precision = censored_evidence(
        baseline, users, items, np.zeros(2), np.ones(2, np.int8), np.array([6.0, -5.0])
    )
    # A 5-star for what is believed far above the boundary says almost nothing...
    assert precision[0] < 1e-7
    # ...one for what is believed far below counts almost as a rating at the boundary
    # (y = c + 2σ/α + O(α⁻³), α = 5).
    assert precision[1] > 0.9
    assert y[1] == pytest.approx(0.4, abs=0.05)


def test_censored_evidence_combines_exact_and_censored_ratings_with_offsets_and_weights():
    """Item 0: a 3-star-like exact rating 1.0 from a user with offset 0.5, and a top-box rating
    at the boundary (α = 0) weighted by half. y = Σ wρ(value − μ − b_u)/Σ wρ."""
    baseline = one_scale_baseline(1, user_offset=[0.5, -0.25], global_mean=0.25)
    users, items = np.array([0, 1]), np.zeros(2, np.int64)
    theta = 0.5  # boundary c = μ + b_1 + θ = 0.5
    y, precision = censored_evidence(
        baseline,
        users,
        items,
        np.array([1.0, 0.5]),
        np.array([0, 1], np.int8),
        np.array([theta]),
        weight=np.array([1.0, 0.5]),
    )
    rho = 2 / math.pi
    exact = 1.0 - 0.25 - 0.5
    censored = theta + math.sqrt(math.pi / 2)
    assert y[0] == pytest.approx((exact + 0.5 * rho * censored) / (1 + 0.5 * rho))
    assert precision[0] == pytest.approx(1 + 0.5 * rho)


def test_branch_drift_hand_checked():
    """0 → 1 → 2 and 0 → 3, steps y_1 − y_0 = 1, y_2 − y_1 = 1, y_3 − y_0 = 0.5, all known
    exactly (weight 1/τ² = 1), δ̄ = 0.2 with one pseudo-step."""
    forest = forest_of([-1, 0, 1, 0, -1])
    y = np.array([0.0, 1.0, 2.0, 0.5, 0.0])
    precision = np.array([1e12, 1e12, 1e12, 1e12, 0.0])  # node 4: no evidence
    prior = LineagePrior(prior_mean=0.0, prior_var=1.0, drift_mean=0.2, drift_var=1.0)
    drift = branch_drift(forest, y, precision, prior, pseudo_steps=1.0)
    # A new fork of 0 sees 0's two forks; of 1 or 2 also 1's fork; of 3 only 0's forks.
    assert drift.next_fork[0] == pytest.approx((1.5 + 0.2) / 3)
    assert drift.next_fork[1] == pytest.approx((2.5 + 0.2) / 4)
    assert drift.next_fork[2] == pytest.approx((2.5 + 0.2) / 4)
    assert drift.next_fork[3] == pytest.approx((1.5 + 0.2) / 3)
    assert drift.next_fork[4] == pytest.approx(0.2)  # no forks on its path: δ̄
    # The step into a node leaves that node's own step out.
    assert drift.into[1] == pytest.approx((0.5 + 0.2) / 2)
    assert drift.into[2] == pytest.approx((1.5 + 0.2) / 3)
    assert drift.into[3] == pytest.approx((1.0 + 0.2) / 2)
    assert drift.into[0] == pytest.approx(0.2) and drift.into[4] == pytest.approx(0.2)
    # Noisy ends weigh less: with π = 1 everywhere a step weighs 1/(τ² + 2) = 1/3.
    noisy = branch_drift(forest, y, np.r_[np.ones(4), 0.0], prior, pseudo_steps=1.0)
    assert noisy.next_fork[0] == pytest.approx((1.5 / 3 + 0.2) / (2 / 3 + 1))


def test_debias_separates_a_harsh_rater_from_a_bad_sub_agent():
    # Items 0..3 with true quality 2, 1, 0, -1; user 0 is harsh (−4 everywhere) and keeps rating
    # the two best items, users 1..3 are fair and rate everything once. Raw means then put
    # item 0 below item 2; the baseline recovers the order and flags user 0.
    quality = np.array([2.0, 1.0, 0.0, -1.0])
    users, items = [], []
    for u in (1, 2, 3):
        users += [u] * 4
        items += [0, 1, 2, 3]
    for _ in range(6):  # the harsh user keeps coming back to items 0 and 1
        users += [0, 0]
        items += [0, 1]
    users, items = np.array(users), np.array(items)
    rating = quality[items] + np.where(users == 0, -4.0, 0.0)
    raw_mean = np.bincount(items, rating) / np.bincount(items)
    assert raw_mean[0] < raw_mean[2]  # raw means are dragged down by the harsh rater
    fit = debias(users, items, rating, 4, 4, reg_user=1.0, reg_item=1.0, epochs=200)
    # Offsets are relative to the global mean, which the harsh rater's many ratings pull down.
    assert fit.user_offset[1:] == pytest.approx(np.full(3, fit.user_offset[1]))
    assert fit.user_offset[0] - fit.user_offset[1] < -3.0
    assert np.argsort(-fit.item_effect).tolist() == [0, 1, 2, 3]
    assert np.argsort(-fit.item_evidence).tolist() == [0, 1, 2, 3]
    assert fit.item_count.tolist() == [9, 9, 3, 3]


def test_debias_converges_to_the_ridge_solution():
    """ALS alternates exact coordinate minimizations of Σ(r − μ − b_u − b_i)² + λ_u Σb_u² +
    λ_i Σb_i², so with enough epochs it reaches that ridge problem's solution."""
    rng = np.random.default_rng(3)
    n_users, n_items, n = 6, 5, 25
    users, items = rng.integers(0, n_users, n), rng.integers(0, n_items, n)
    rating = rng.normal(size=n)
    fit = debias(
        users, items, rating, n_users, n_items, reg_user=15, reg_item=10, epochs=3000, tolerance=0.0
    )
    mu = rating.mean()
    design = np.zeros((n, n_users + n_items))
    design[np.arange(n), users] = 1
    design[np.arange(n), n_users + items] = 1
    penalty = np.diag([15.0] * n_users + [10.0] * n_items)
    solution = np.linalg.solve(design.T @ design + penalty, design.T @ (rating - mu))
    assert fit.global_mean == pytest.approx(mu)
    assert fit.user_offset == pytest.approx(solution[:n_users], abs=1e-6)
    assert fit.item_effect == pytest.approx(solution[n_users:], abs=1e-6)


def test_debias_stops_once_the_offsets_settle():
    """Early stopping changes nothing a score shows: the fit that stops at tolerance 1e-4
    agrees with 40 full epochs to 1e-3, and a loose tolerance really stops after one epoch."""
    rng = np.random.default_rng(5)
    n_users, n_items, n = 300, 40, 6000
    users, items = rng.integers(0, n_users, n), rng.integers(0, n_items, n)
    rating = (
        rng.normal(size=n) + rng.normal(0, 0.8, n_users)[users] + np.linspace(-1, 1, n_items)[items]
    )
    full = debias(users, items, rating, n_users, n_items, epochs=40, tolerance=0.0)
    early = debias(users, items, rating, n_users, n_items, epochs=40)
    assert early.user_offset == pytest.approx(full.user_offset, abs=1e-3)
    assert early.item_evidence == pytest.approx(full.item_evidence, abs=1e-3)
    assert early.noise_var == pytest.approx(full.noise_var, rel=1e-3)
    one = debias(users, items, rating, n_users, n_items, epochs=40, tolerance=10.0)
    first_epoch = debias(users, items, rating, n_users, n_items, epochs=1, tolerance=0.0)
    assert one.user_offset == pytest.approx(first_epoch.user_offset)
    assert not np.allclose(one.user_offset, full.user_offset, atol=1e-3)


def test_debias_warm_start_and_weights():
    rng = np.random.default_rng(4)
    users, items = rng.integers(0, 20, 400), rng.integers(0, 10, 400)
    rating = rng.normal(size=400) + 0.5 * (users % 3)
    cold = debias(users, items, rating, 20, 10, epochs=50, tolerance=0.0)
    warm = debias(users, items, rating, 20, 10, epochs=2, init_user_offset=cold.user_offset)
    assert warm.user_offset == pytest.approx(cold.user_offset, abs=1e-6)
    weighted = debias(users, items, rating, 20, 10, weight=np.full(400, 0.5))
    assert weighted.item_count == pytest.approx(0.5 * np.bincount(items, minlength=10))
    # The per-item noise is shrunk toward the pooled one and stays positive.
    assert np.all(cold.item_noise_var > 0)
    assert cold.item_precision == pytest.approx(cold.item_count / cold.item_noise_var)


# --------------------------------------------------------------------------- lineage posterior
def test_three_node_chain_against_dense_gaussian():
    forest = forest_of([-1, 0, 1])
    y, precision = [1.0, 0.0, 2.5], [2.0, 0.0, 4.0]  # the middle node has no evidence
    posterior = posterior_of(forest, y, precision, **PRIOR)
    mean, cov = dense_posterior([-1, 0, 1], y, precision, 0.2, 0.8, -0.1, 0.3)
    assert posterior.mean == pytest.approx(mean)
    assert posterior.var == pytest.approx(np.diag(cov))


@pytest.mark.parametrize("seed", range(10))
def test_random_trees_against_dense_gaussian(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    parent = [-1 if i == 0 or rng.random() < 0.2 else int(rng.integers(0, i)) for i in range(n)]
    rows = rng.permutation(n)  # build from shuffled rows with sparse ids
    ids = np.arange(n) * 7 + 3
    parent_ids = np.array([ids[p] if p >= 0 else -1 for p in parent])
    forest = Forest.from_parents(ids[rows], parent_ids[rows])
    y = rng.normal(size=n)
    precision = rng.exponential(size=n) * (rng.random(n) < 0.6)
    mean, cov = dense_posterior(parent, y, precision, 0.2, 0.8, -0.1, 0.3)
    posterior = posterior_of(forest, y[rows], precision[rows], **PRIOR)
    assert posterior.mean == pytest.approx(mean[rows])
    assert posterior.var == pytest.approx(np.diag(cov)[rows])
    # Ancestor–descendant covariances from the product of per-step gains.
    log_gain = ancestor_covariance_gain(forest, posterior)
    cov_rows = cov[np.ix_(rows, rows)]
    for d in range(n):
        v = forest.parent[d]
        while v >= 0:
            assert math.exp(log_gain[d] - log_gain[v]) * posterior.var[v] == pytest.approx(
                cov_rows[d, v]
            )
            v = forest.parent[v]


def test_new_fork_inherits_its_parents_belief_plus_drift():
    forest = forest_of([-1, 0, 0])
    posterior = posterior_of(forest, [1.0, 0.5, 0.0], [3.0, 2.0, 0.0], **PRIOR)
    parent_alone = posterior_of(forest_of([-1, 0]), [1.0, 0.5], [3.0, 2.0], **PRIOR)
    # The unrated fork changes nothing above it and starts at parent + δ̄, τ² wider.
    assert posterior.mean[:2] == pytest.approx(parent_alone.mean)
    assert posterior.mean[2] == pytest.approx(posterior.mean[0] - 0.1)
    assert posterior.var[2] == pytest.approx(posterior.var[0] + 0.3)


def test_evidence_on_children_informs_the_ancestor():
    forest = forest_of([-1, 0, 0, 1])
    quiet = posterior_of(forest, [0, 0, 0, 0], [0, 0, 0, 0], **PRIOR)
    loud = posterior_of(forest, [0, 0, 0, 3.0], [0, 0, 0, 50.0], **PRIOR)
    assert quiet.mean[0] == pytest.approx(0.2)
    assert loud.mean[1] > loud.mean[0] > quiet.mean[0]  # grandchild's evidence reaches the root
    assert loud.mean[2] > quiet.mean[2]  # and, through it, the sibling line
    assert loud.var[0] < quiet.var[0]


def test_per_node_prior_arrays_and_bad_drift_var():
    forest = forest_of([-1, -1, 0])
    posterior = lineage_posterior(
        forest,
        np.zeros(3),
        np.zeros(3),
        prior_mean=np.array([1.0, -1.0, 0.0]),
        prior_var=1.0,
        drift_mean=np.array([0.0, 0.0, 0.5]),
        drift_var=0.2,
    )
    assert posterior.mean.tolist() == pytest.approx([1.0, -1.0, 1.5])
    with pytest.raises(ValueError):
        posterior_of(forest, np.zeros(3), np.zeros(3), **{**PRIOR, "drift_var": 0.0})


def test_joint_samples_match_the_dense_posterior():
    parent = [-1, 0, 0, 1, 1, -1]
    forest = forest_of(parent)
    y, precision = [0.5, 1.0, 0.0, -0.5, 2.0, 0.0], [1.0, 2.0, 0.0, 1.0, 0.5, 0.0]
    posterior = posterior_of(forest, y, precision, **PRIOR)
    mean, cov = dense_posterior(parent, y, precision, 0.2, 0.8, -0.1, 0.3)
    draws = sample_lineage(forest, posterior, 40_000, np.random.default_rng(0), dtype=np.float64)
    assert draws.mean(axis=1) == pytest.approx(mean, abs=0.03)
    assert np.cov(draws) == pytest.approx(cov, abs=0.03)


# --------------------------------------------------------------------------- derived scores
def test_branch_value_is_at_least_the_node_mean_and_sees_a_better_child():
    forest = forest_of([-1, 0, 0, -1])
    posterior = posterior_of(forest, [0.0, 2.0, -1.0, 0.0], [20.0, 20.0, 20.0, 20.0], **PRIOR)
    value = branch_value(forest, posterior, np.random.default_rng(1), n_samples=64)
    assert np.all(value >= posterior.mean)
    assert value[[1, 2, 3]] == pytest.approx(posterior.mean[[1, 2, 3]])  # leaves: just the mean
    assert value[0] == pytest.approx(posterior.mean[1], abs=0.1)  # the root is worth its child


def test_branch_value_in_threads_is_the_same_to_the_bit():
    """Keyed draws make the chunks independent: run at once in threads, added in chunk order,
    they give exactly the sequential answer; a Generator's draws stay in sequence."""
    rng = np.random.default_rng(5)
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, 400)]
    forest = forest_of(parent)
    posterior = posterior_of(
        forest, rng.normal(size=400).tolist(), rng.uniform(0, 5, 400).tolist(), **PRIOR
    )
    keyed = ranking.NodeNoise(11)
    alone = branch_value(forest, posterior, keyed, n_samples=64, chunk=8)
    together = branch_value(forest, posterior, keyed, n_samples=64, chunk=8, threads=3)
    assert np.array_equal(alone, together)
    in_sequence = branch_value(forest, posterior, np.random.default_rng(2), n_samples=32, chunk=8)
    asked_for_threads = branch_value(
        forest, posterior, np.random.default_rng(2), n_samples=32, chunk=8, threads=2
    )
    assert np.array_equal(in_sequence, asked_for_threads)


def test_branch_value_is_the_mean_subtree_maximum_of_the_joint_draws():
    """The per-level excess (a parent's best subtree draw minus its own, taken as the maxima
    climb) is E[max θ over the subtree] of the very draws ``sample_lineage`` makes."""
    rng = np.random.default_rng(8)
    parent = [-1, -1] + [int(rng.integers(0, i)) for i in range(2, 300)]
    forest = forest_of(parent)
    posterior = posterior_of(
        forest, rng.normal(size=300).tolist(), rng.uniform(0, 5, 300).tolist(), **PRIOR
    )
    keyed = ranking.NodeNoise(3)
    draws = sample_lineage(forest, posterior, 24, keyed)
    textbook = posterior.mean + (forest.reduce_up(draws, "max") - draws).mean(axis=1)
    value = branch_value(forest, posterior, keyed, n_samples=24, chunk=8)
    assert value == pytest.approx(textbook, abs=1e-6)
    assert np.any(value > posterior.mean + 0.05)  # some subtrees are worth more than their root


def test_keyed_draws_do_not_depend_on_how_many_ids_are_drawn_at_once():
    """``NodeNoise`` fills its draws a block of ids at a time: an id's draws are the same
    wherever the block edges fall, and for any window of draw numbers."""
    noise = ranking.NodeNoise(42)
    ids = np.arange(1, 2 * ranking.NodeNoise.BLOCK + 7, dtype=np.int64)[::-1]
    whole = noise.draws(ids, 0, 10)
    assert whole.shape == (ids.size, 10) and whole.dtype == np.float32
    assert np.array_equal(noise.draws(ids[-5:], 0, 10), whole[-5:])
    assert np.array_equal(noise.draws(ids[5000:40000], 3, 6), whole[5000:40000, 3:9])
    assert abs(float(whole.mean())) < 0.01 and abs(float(whole.std()) - 1.0) < 0.01


def test_best_descendant_only_when_clearly_better():
    forest = forest_of([-1, 0, 1, -1, 3])
    y = [0.0, 0.1, 2.0, 0.0, 0.3]
    posterior = posterior_of(forest, y, [30.0, 30.0, 30.0, 1.0, 1.0], **PRIOR)
    best, prob = best_descendant(forest, posterior)
    assert best[0] == 2 and best[1] == 2  # the grandchild is clearly better than both
    assert prob[0] > 0.99
    assert best[3] == -1  # a barely-known child that might be better is not "clearly better"
    assert 0.0 < prob[3] < 0.8
    assert best[2] == -1 and prob[2] == 0.0  # leaves have no descendant
    # The probability is the exact Gaussian one for the pair.
    _, cov = dense_posterior([-1, 0, 1, -1, 3], y, [30, 30, 30, 1, 1], 0.2, 0.8, -0.1, 0.3)
    diff_sd = math.sqrt(cov[4, 4] + cov[3, 3] - 2 * cov[3, 4])
    expected = 0.5 * math.erfc(-(posterior.mean[4] - posterior.mean[3]) / diff_sd / math.sqrt(2))
    assert prob[3] == pytest.approx(expected)


def test_fork_gain_sign_and_shrinkage():
    forest = forest_of([-1, 0, 0, -1, 3, 3, -1])
    means = np.array([0.0, 1.0, 0.6, 0.0, -1.0, -0.5, 0.4])
    gain = fork_gain(forest, means, drift_mean=-0.1)
    assert gain[0] == pytest.approx((1.0 + 0.6 - 0.1) / 3)
    assert gain[3] == pytest.approx((-1.0 - 0.5 - 0.1) / 3)
    assert gain[6] == pytest.approx(-0.1)  # no children: the prior step
    assert gain[0] > 0 > gain[3]


def test_rising_marks_young_forks_better_than_their_parent():
    forest = forest_of([-1, 0, 0])
    posterior = posterior_of(forest, [0.0, 1.5, -1.0], [10.0, 10.0, 10.0], **PRIOR)
    score = rising_score(forest, posterior, np.array([True, True, False]))
    assert score[1] > 2
    assert score[0] == -np.inf and score[2] == -np.inf


def test_estimate_lineage_prior_recovers_a_simulated_tree():
    rng = np.random.default_rng(5)
    n_roots, n = 300, 6000
    parent = np.r_[np.full(n_roots, -1), rng.integers(0, np.arange(n_roots, n))]
    theta = np.zeros(n)
    theta[:n_roots] = rng.normal(0.5, 1.0, n_roots)
    for v in range(n_roots, n):
        theta[v] = theta[parent[v]] - 0.2 + rng.normal(0, 0.4)
    precision = rng.uniform(5, 40, n)
    y = theta + rng.normal(size=n) / np.sqrt(precision)
    prior = estimate_lineage_prior(forest_of(parent.tolist()), y, precision)
    assert prior.prior_mean == pytest.approx(0.5, abs=0.2)
    assert prior.prior_var == pytest.approx(1.0, abs=0.3)
    assert prior.drift_mean == pytest.approx(-0.2, abs=0.05)
    assert prior.drift_var == pytest.approx(0.16, abs=0.04)


def test_estimate_lineage_prior_falls_back_without_evidence():
    prior = estimate_lineage_prior(forest_of([-1, 0]), np.zeros(2), np.zeros(2))
    assert prior == LineagePrior(0.0, 1.0, 0.0, 0.5)


# --------------------------------------------------------------------------- usage, references
def test_usage_counts_distinct_users_with_half_life_and_retention():
    usage = usage_stats(
        item_idx=np.array([0, 0, 0, 0, 1, 1, 2]),
        user_idx=np.array([5, 5, 5, 6, 5, 5, 7]),
        age_days=np.array([1.0, 20.0, 20.0, 3.0, 0.0, 40.0, 10.0]),
        n_items=3,
        retention_prior=0.0,
    )
    # Item 0: user 5 last seen 1 day ago (three events, one user), user 6 three days ago.
    assert usage.active_users[0] == pytest.approx(0.5 ** (1 / 30) + 0.5 ** (3 / 30))
    assert usage.active_users[2] == pytest.approx(0.5 ** (10 / 30))
    # Users first seen ≥ 7 days ago: 5 came back to items 0 and 1, 7 never came back to 2.
    assert usage.retention.tolist() == [1.0, 1.0, 0.0]
    assert usage.recent_users.tolist() == [2, 1, 0]
    assert usage.weekly_baseline.tolist() == [0.25, 0.0, 0.25]
    assert usage.trending[0] == pytest.approx(math.log((2 + 5) / (0.25 + 5)))
    assert usage.score == pytest.approx(np.log1p(usage.active_users * usage.retention))


def test_usage_retention_is_shrunk_toward_the_catalog_rate():
    usage = usage_stats(np.array([0, 0, 1]), np.array([1, 1, 2]), np.array([0.0, 30.0, 30.0]), 2)
    overall = 0.5 ** (30 / 30) / (2 * 0.5 ** (30 / 30))  # one of two cohort users came back
    assert usage.retention[1] == pytest.approx(10 * overall / (0.5 + 10))


# --------------------------------------------------------------------------- rank end to end
def small_world(seed: int = 0):
    """Two trees; item 4 is a strong fork, user 0 a harsh rater of everything."""
    rng = np.random.default_rng(seed)
    parent = [-1, 0, 0, 1, 1, -1, 5]
    quality = np.array([0.0, 0.5, -1.0, 0.3, 1.5, -0.5, -0.4])
    users = rng.integers(0, 30, 900)
    items = rng.integers(0, 7, 900)
    harsh = np.where(users == 0, -2.0, 0.0)
    stars = np.clip(np.round(3 + quality[items] + harsh + rng.normal(0, 0.7, 900)), 1, 5)
    ratings = Ratings(user_idx=users, item_idx=items, value=stars)
    return forest_of(parent), ratings, quality


def test_rank_end_to_end():
    forest, ratings, quality = small_world()
    scores = rank(forest, ratings, n_users=30)
    assert np.argmax(scores.mean) == 4
    assert np.corrcoef(scores.mean, quality)[0, 1] > 0.9
    assert scores.baseline.user_offset[0] == scores.baseline.user_offset.min()
    assert scores.display == pytest.approx(scores.mean - 1.64 * scores.sd)
    assert np.all(scores.branch_value >= scores.mean)
    assert scores.best_descendant[1] == 4 and scores.best_descendant[0] == 4
    assert ranking.top(scores, 3)[0] == 4
    assert ranking.trending(scores, 3).size == 0  # no usage given


def test_rank_incremental_roots_matches_a_full_pass():
    forest, ratings, _ = small_world()
    first = rank(forest, ratings, n_users=30)
    # New ratings for tree 5 only; recompute that tree's lineage scores with the same prior.
    more = Ratings(
        user_idx=np.r_[ratings.user_idx, np.arange(20)],
        item_idx=np.r_[ratings.item_idx, np.full(20, 6)],
        value=np.r_[ratings.value, np.full(20, 5.0)],
    )
    partial = rank(forest, more, n_users=30, previous=first, roots=np.array([5]), prior=first.prior)
    full = rank(forest, more, n_users=30, previous=first, prior=first.prior)
    tree = forest.nodes_of_roots(np.array([5]))
    other = forest.nodes_of_roots(np.array([0]))
    assert partial.mean[tree] == pytest.approx(full.mean[tree])
    assert partial.sd[tree] == pytest.approx(full.sd[tree])
    assert partial.mean[other] == pytest.approx(first.mean[other])  # untouched tree kept
    assert partial.posterior.mean[tree] == pytest.approx(full.posterior.mean[tree])


def test_rank_rising_with_ages():
    forest, ratings, _ = small_world()
    scores = rank(forest, ratings, n_users=30, item_age_days=np.array([90, 90, 90, 5, 5, 90, 5]))
    assert np.isfinite(scores.rising[[3, 4, 6]]).all()
    assert ranking.rising(scores, 1).tolist() == [4]


def test_young_counts_evidence_not_ratings():
    """Six ratings that agree (everyone pans a broken fork) leave the young pool; ten that
    disagree keep a fork in it: exploration goes where the uncertainty is."""
    rng = np.random.default_rng(8)
    forest = forest_of([-1, 0, 0, 0, -1, 4])
    users = list(rng.integers(0, 40, 600))
    items = list(rng.integers(0, 4, 600))  # items 0..3 well rated: they set the pooled σ²
    stars = list(np.clip(np.round(3 + rng.normal(0, 1.0, 600)), 1, 5))
    users += list(range(40, 46))
    items += [4] * 6
    stars += [1.0] * 6  # unanimous
    users += list(range(40, 50))
    items += [5] * 10
    stars += [1.0, 5.0] * 5  # split down the middle
    scores = rank(
        forest,
        Ratings(user_idx=np.array(users), item_idx=np.array(items), value=np.array(stars)),
        n_users=50,
    )
    assert not scores.young[4] and scores.young[5]
    assert not scores.young[:4].any()
    expected = scores.baseline.item_precision < 10 / scores.baseline.noise_var
    assert np.array_equal(scores.young, expected)


def test_best_descendant_skips_nodes_that_may_not_be_named():
    """A private or yanked fork is never the branch a public page points to: the next best
    eligible descendant is named instead, or none."""
    forest = forest_of([-1, 0, 1, 0])
    y = [0.0, 1.0, 2.0, -1.0]
    posterior = posterior_of(forest, y, [30.0, 30.0, 30.0, 30.0], **PRIOR)
    best, _ = best_descendant(forest, posterior)
    assert best[0] == 2
    eligible = np.array([True, True, False, True])
    best, prob = best_descendant(forest, posterior, eligible=eligible)
    assert best[0] == 1  # the grandchild is out; its parent, also clearly better, is named
    assert prob[0] > 0.99
    assert best[1] == -1  # its only descendant is out
    nobody = np.array([True, False, False, False])
    assert best_descendant(forest, posterior, eligible=nobody)[0][0] == -1


def test_usage_with_no_events_is_all_zero():
    usage = usage_stats(np.zeros(0), np.zeros(0), np.zeros(0), 3)
    assert usage.active_users.tolist() == [0.0, 0.0, 0.0]
    assert usage.trending.tolist() == [0.0, 0.0, 0.0]  # ln((0 + 5) / (0 + 5))
    assert usage.score.tolist() == [0.0, 0.0, 0.0]


def test_noise_variance_holds_when_most_people_rate_once():
    """2,000 people rate one of 50 sub-agents each (noise sd 0.5 around the sub-agent's
    quality). Counting each regularized rater offset as a whole parameter would leave no
    degrees of freedom and blow σ² up; effective degrees of freedom keep it near 0.25."""
    rng = np.random.default_rng(3)
    quality = rng.normal(0, 1, 50)
    items = rng.integers(0, 50, 2000)
    values = quality[items] + rng.normal(0, 0.5, 2000)
    baseline = debias(np.arange(2000), items, values, 2000, 50)
    assert 0.18 < baseline.noise_var < 0.4


def test_young_forks_count_as_recent_for_rising_whatever_their_age():
    """A fork made a year ago that only now gets its first ratings is still rising."""
    _, ratings, _ = small_world()
    forest = forest_of([-1, 0, 0, 1, 1, -1, 5, 4])  # node 7: a late fork of the strong 4
    late = Ratings(
        user_idx=np.r_[ratings.user_idx, [1, 2]],
        item_idx=np.r_[ratings.item_idx, [7, 7]],
        value=np.r_[ratings.value, [5.0, 5.0]],
    )
    scores = rank(forest, late, n_users=30, item_age_days=np.full(forest.n, 400.0))
    assert scores.young.tolist() == [False] * 7 + [True]
    assert np.isfinite(scores.rising).tolist() == [False] * 7 + [True]


def improving_line(seed: int = 1):
    """Four roots; root 0 starts a line whose forks improve by one star each, 0 → 4 → 5 → 6 → 7,
    so that the last ones get almost nothing but 5 stars."""
    rng = np.random.default_rng(seed)
    parent = [-1, -1, -1, -1, 0, 4, 5, 6]
    quality = np.array([-1.0, -0.5, 0.0, 0.5, 0.0, 1.0, 2.0, 3.0])
    users, items = rng.integers(0, 200, 4000), rng.integers(0, 8, 4000)
    lenient = rng.normal(0, 0.5, 200)
    stars = np.clip(np.round(3 + quality[items] + lenient[users] + rng.normal(0, 0.8, 4000)), 1, 5)
    return forest_of(parent), Ratings(user_idx=users, item_idx=items, value=stars)


def test_censoring_keeps_top_box_ratings_from_capping_the_best_forks():
    """Items 6 and 7 get 72% and 92% 5-star ratings. Read as values, those ratings squeeze the
    last step of the line to a third of the others; read as bounds, it stays about as large."""
    forest, ratings = improving_line()
    first_step = {}
    last_step = {}
    for censored in (True, False):
        mean = rank(forest, ratings, n_users=200, censored=censored).mean
        first_step[censored] = mean[5] - mean[4]
        last_step[censored] = mean[7] - mean[6]
    assert first_step[True] == pytest.approx(first_step[False], rel=0.1)  # unsaturated: alike
    assert last_step[True] > 0.7 * first_step[True]
    assert last_step[False] < 0.4 * first_step[False]


def test_branch_drift_moves_unrated_forks_with_their_line():
    """Line 0 → 4 → 5 → 6 improves by a star per fork, line 1 → 8 → 9 → 10 loses one: the
    catalog-wide δ̄ is about 0, but an unrated fork of 6 (node 7) is expected above its parent
    and one of 10 (node 11) below; with one catalog-wide δ̄ both just get δ̄."""
    rng = np.random.default_rng(2)
    parent = [-1, -1, -1, -1, 0, 4, 5, 6, 1, 8, 9, 10]
    quality = np.array([0.0, 0.0, 0.0, 0.0, 0.5, 1.0, 1.5, 0, -0.5, -1.0, -1.5, 0])
    rated = np.array([0, 1, 2, 3, 4, 5, 6, 8, 9, 10])
    users, items = rng.integers(0, 100, 3000), rng.choice(rated, 3000)
    stars = np.clip(np.round(3 + quality[items] + rng.normal(0, 0.5, 3000)), 1, 5)
    forest, ratings = forest_of(parent), Ratings(user_idx=users, item_idx=items, value=stars)
    scores = rank(forest, ratings, n_users=100)
    assert scores.mean[7] - scores.mean[6] > 0.2
    assert scores.mean[11] - scores.mean[10] < -0.2
    assert scores.fork_gain[6] > 0 > scores.fork_gain[10]
    flat = rank(forest, ratings, n_users=100, drift_pseudo_steps=None)
    assert flat.mean[7] - flat.mean[6] == pytest.approx(flat.prior.drift_mean, abs=1e-6)
    assert flat.mean[11] - flat.mean[10] == pytest.approx(flat.prior.drift_mean, abs=1e-6)
    assert abs(flat.prior.drift_mean) < 0.2


def test_rank_without_censoring_and_branch_drift_is_the_plain_pipeline():
    forest, ratings = improving_line()
    scores = rank(forest, ratings, n_users=200, censored=False, drift_pseudo_steps=None)
    baseline = debias(ratings.user_idx, ratings.item_idx, to_common_scale(ratings.value), 200, 8)
    prior = estimate_lineage_prior(forest, baseline.item_evidence, baseline.item_precision)
    posterior = lineage_posterior(
        forest,
        baseline.item_evidence,
        baseline.item_precision,
        prior_mean=prior.prior_mean,
        prior_var=prior.prior_var,
        drift_mean=prior.drift_mean,
        drift_var=prior.drift_var,
    )
    assert scores.prior == prior
    assert scores.mean == pytest.approx(posterior.mean)
    assert scores.sd == pytest.approx(posterior.sd)
    assert scores.fork_gain == pytest.approx(fork_gain(forest, posterior.mean, prior.drift_mean))
