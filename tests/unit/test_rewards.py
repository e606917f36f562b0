"""feedback.rewards: the debiased reward on plain rating arrays, the pair covariance against a
dense Gaussian, pair selection and labels, splits, prompts; and the export's numbers against the
evolution simulator's ground truth."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from scipy.special import ndtr

from bench.export import CURVE_WORLDS, accuracy_on_world, coverage_accuracy
from evolution.ranking import Ratings, lineage_posterior, rank
from evolution.tree import Forest
from feedback import rewards
from feedback.rewards import RatingArrays, VersionText
from tests.unit.test_evolution_ranking import dense_posterior


def forest_of(parent: list[int]) -> Forest:
    return Forest.from_parents(np.arange(len(parent)), np.array(parent))


def test_a_harsh_rater_does_not_sink_what_they_rate():
    """Four items, each rated 4 stars by the same three people; a fourth person, harsh
    everywhere, gave 1 star to items 1, 2 and 3. The raw mean puts item 1 below item 0; the
    rater-corrected figures close most of that gap, because the harsh rater is harsh
    everywhere (the leniency is shrunk toward 0 by λ_u = 15 pseudo-ratings, so not all of it)."""
    forest = forest_of([-1, -1, -1, -1])
    user = [0, 1, 2, 0, 1, 2, 3, 3, 3, 0, 1, 2, 0, 1, 2]
    item = [0, 0, 0, 1, 1, 1, 1, 2, 3, 2, 2, 2, 3, 3, 3]
    value = [4, 4, 4, 4, 4, 4, 1, 1, 1, 4, 4, 4, 4, 4, 4]
    estimate = rewards.estimate_rewards(
        forest, RatingArrays(np.array(user), np.array(item), np.array(value)), n_users=4
    )
    assert estimate.raw_mean[1] < estimate.raw_mean[0]
    assert estimate.own_mean[1] > estimate.raw_mean[1]
    assert estimate.user_offset[3] < -0.2 < 0 < estimate.user_offset[0]
    assert abs(estimate.mean[1] - estimate.mean[0]) < abs(
        estimate.raw_mean[1] - estimate.raw_mean[0]
    )
    assert list(estimate.raters) == [3, 4, 4, 4]
    assert list(estimate.ratings) == [3, 4, 4, 4]


def test_the_reward_is_the_rankings_belief_with_top_marks_read_as_bounds():
    """One reward: a version's reward and sd are the ranking's E[θ] and sd(θ) for the same
    ratings (no half-life: a version never changes), end-of-scale ratings read as bounds
    included. Two versions are rated five stars by everyone, one by twice as many people;
    read as values they would tie, read as "at least 4.5" the better-attested one is likely
    higher, and the reward says so as the ranking does."""
    rng = np.random.default_rng(3)
    parent = [-1, 0, 0, -1, 3, 4, -1]
    forest = forest_of(parent)
    users, items, values, thumbs = [], [], [], []
    for item in range(len(parent)):
        raters = 24 if item == 1 else 12 if item == 2 else 8
        for user in rng.choice(40, raters, replace=False):
            users.append(user)
            items.append(item)
            values.append(5 if item in (1, 2) else int(rng.integers(1, 6)))
            thumbs.append(item == 6)
    user, item = np.array(users), np.array(items)
    value = np.where(thumbs, np.array(values) > 3, np.array(values)).astype(np.int64)
    thumb = np.array(thumbs)
    estimate = rewards.estimate_rewards(forest, RatingArrays(user, item, value, thumb), n_users=40)
    scores = rank(forest, Ratings(user, item, value, thumb), n_users=40)
    np.testing.assert_allclose(estimate.mean, scores.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(estimate.sd, scores.sd, rtol=1e-12, atol=1e-12)
    assert estimate.mean[1] > estimate.mean[2]  # more top marks: higher, not a tie
    uncensored = rank(forest, Ratings(user, item, value, thumb), n_users=40, censored=False)
    assert not np.allclose(estimate.mean, uncensored.mean)


def test_raw_figures_count_stars_thumbs_and_exposures():
    forest = forest_of([-1, 0])
    user = np.array([0, 1, 2, 0, 1])
    item = np.array([0, 0, 0, 1, 1])
    value = np.array([5, 3, 1, 1, 0])
    thumb = np.array([False, False, False, True, True])
    propensity = np.array([0.5, np.nan, 0.25, np.nan, 0.1])
    e = rewards.estimate_rewards(
        forest, RatingArrays(user, item, value, thumb, propensity), n_users=3
    )
    assert list(e.stars_count) == [3, 0] and e.stars_sum[0] == 9
    assert list(e.thumbs_up) == [0, 1] and list(e.thumbs_down) == [0, 1]
    assert list(e.exposed) == [2, 1]
    assert e.propensity_mean[0] == pytest.approx(0.375)
    assert e.propensity_min[0] == pytest.approx(0.25)
    z = e.rating_z
    # Self-normalized inverse propensity weighting of the exposed ratings.
    expected = (z[0] / 0.5 + z[2] / 0.25) / (1 / 0.5 + 1 / 0.25)
    assert e.ips_mean[0] == pytest.approx(expected)


def test_repeated_pairs_count_once_as_raters():
    forest = forest_of([-1])
    ratings = RatingArrays(np.array([0, 0, 1]), np.array([0, 0, 0]), np.array([5, 4, 2]))
    assert rewards.estimate_rewards(forest, ratings, n_users=2).raters[0] == 2


@pytest.mark.parametrize(
    "parent, a, b",
    [
        ([-1, 0, 0, 1], 1, 0),  # child and parent
        ([-1, 0, 0, 1], 0, 1),  # parent and child, the other way round
        ([-1, 0, 0, 1], 1, 2),  # siblings
        ([-1, 0, 0, 1, 3], 4, 3),  # a deeper child and its parent
    ],
)
def test_pair_covariance_matches_the_dense_posterior(parent, a, b):
    forest = forest_of(parent)
    rng = np.random.default_rng(len(parent) + a)
    y = rng.normal(0, 1, len(parent))
    precision = rng.uniform(0.5, 4, len(parent))
    prior = {"prior_mean": 0.1, "prior_var": 0.9, "drift_mean": -0.2, "drift_var": 0.4}
    posterior = lineage_posterior(forest, y, precision, **prior)
    _, covariance = dense_posterior(parent, y, precision, 0.1, 0.9, -0.2, 0.4)
    found = rewards.pair_covariance(forest, posterior, np.array([a]), np.array([b]))[0]
    assert found == pytest.approx(covariance[a, b], rel=1e-9)


def test_unrelated_pairs_get_no_covariance_which_only_understates_confidence():
    parent = [-1, 0, 1, -1]
    forest = forest_of(parent)
    posterior = lineage_posterior(
        forest,
        np.array([0.0, 0.5, 1.0, 0.2]),
        np.ones(4),
        prior_mean=0,
        prior_var=1,
        drift_mean=0,
        drift_var=0.5,
    )
    _, covariance = dense_posterior(parent, [0.0, 0.5, 1.0, 0.2], np.ones(4), 0, 1, 0, 0.5)
    grandchild = rewards.pair_covariance(forest, posterior, np.array([2]), np.array([0]))[0]
    assert grandchild == 0.0 < covariance[2, 0]  # same tree, not parent and child
    other_tree = rewards.pair_covariance(forest, posterior, np.array([2]), np.array([3]))[0]
    assert other_tree == 0.0 == pytest.approx(covariance[2, 3], abs=1e-12)


def _estimate_for(forest: Forest, means: list[float], sds: list[float]):
    """A RewardEstimate with a chosen posterior (no covariance between the nodes)."""
    base = rewards.estimate_rewards(
        forest, RatingArrays(np.array([0]), np.array([0]), np.array([3])), n_users=1
    )
    mean, sd = np.array(means, float), np.array(sds, float)
    posterior = base.posterior.__class__(
        mean=mean,
        var=sd**2,
        up_precision=np.zeros(forest.n),
        up_info=np.zeros(forest.n),
        gain=np.zeros(forest.n),  # no covariance: the test's probabilities are exact
        drift_mean=np.zeros(forest.n),
        drift_var=np.ones(forest.n),
    )
    return base.__class__(**{**vars(base), "mean": mean, "sd": sd, "posterior": posterior})


def test_pairs_are_kept_only_with_a_confident_margin():
    # 0 is the parent of 1, 2 and 3; 4 is a root of its own.
    forest = forest_of([-1, 0, 0, 0, -1])
    estimate = _estimate_for(forest, [0.0, 1.0, 0.1, -1.0, 0.5], [0.2] * 5)
    ratings = RatingArrays(np.zeros(0, int), np.zeros(0, int), np.zeros(0))
    pairs = rewards.select_pairs(
        forest,
        estimate,
        ratings,
        eligible=np.ones(5, bool),
        category=np.zeros(5, int),
        test=np.zeros(5, bool),
        confidence=0.95,
    )
    found = {
        (int(c), int(r)): rewards.RELATIONS[k]
        for c, r, k in zip(pairs.chosen, pairs.rejected, pairs.relation, strict=True)
    }
    # 0 vs 2: margin 0.1, sd 0.28: P = 0.64, left out; every other related pair is confident.
    assert found == {
        (1, 0): "parent_child",
        (0, 3): "parent_child",
        (1, 2): "sibling",
        (1, 3): "sibling",
        (2, 3): "sibling",
    }
    for c, r, p, margin in zip(
        pairs.chosen, pairs.rejected, pairs.p_better, pairs.margin, strict=True
    ):
        assert margin == pytest.approx(estimate.mean[c] - estimate.mean[r])
        assert p == pytest.approx(ndtr(margin / np.sqrt(0.08)))


def test_pairs_need_eligible_versions_and_one_split_and_respect_the_cap():
    forest = forest_of([-1, 0, 0, 0, 0, -1])
    estimate = _estimate_for(forest, [0, 1, 2, 3, 4, -3], [0.01] * 6)
    users = np.repeat(np.arange(10), 2)
    items = np.tile([4, 5], 10)  # every user rated 4 and 5: a co-rated candidate
    ratings = RatingArrays(users, items, np.full(20, 3))
    common = {"category": np.zeros(6, int), "confidence": 0.9, "sibling_window": 4}
    everything = rewards.select_pairs(
        forest, estimate, ratings, eligible=np.ones(6, bool), test=np.zeros(6, bool), **common
    )
    assert (4, 5) in set(zip(everything.chosen.tolist(), everything.rejected.tolist(), strict=True))
    assert everything.co_raters[everything.relation == rewards.CO_RATED].max() >= 1
    not_2 = np.ones(6, bool)
    not_2[2] = False
    fewer = rewards.select_pairs(
        forest, estimate, ratings, eligible=not_2, test=np.zeros(6, bool), **common
    )
    assert 2 not in set(fewer.chosen.tolist()) | set(fewer.rejected.tolist())
    split = np.array([False] * 5 + [True])  # root 5 alone in test: no pair crosses
    apart = rewards.select_pairs(
        forest, estimate, ratings, eligible=np.ones(6, bool), test=split, **common
    )
    assert 5 not in set(apart.chosen.tolist()) | set(apart.rejected.tolist())
    capped = rewards.select_pairs(
        forest,
        estimate,
        ratings,
        eligible=np.ones(6, bool),
        test=np.zeros(6, bool),
        max_pairs_per_item=2,
        **common,
    )
    per_item = np.bincount(np.concatenate([capped.chosen, capped.rejected]), minlength=6)
    assert per_item.max() <= 2 and len(capped) > 0


def test_unpaired_labels_only_where_confident_against_the_category_median():
    forest = forest_of([-1] * 7)
    estimate = _estimate_for(forest, [-2, 0, 0.05, 2, 5, 5, 5], [0.1] * 7)
    labels = rewards.unpaired_labels(
        estimate,
        eligible=np.array([True] * 6 + [False]),
        category=np.array([0, 0, 0, 0, 1, 1, 1]),
        confidence=0.95,
    )
    # Category 0's median is 0.025: -2 is below, 2 above, 0 and 0.05 too close to call.
    # Category 1 has under 3 exported versions: the whole export's median (0.025) applies.
    assert dict(zip(labels.item.tolist(), labels.label.tolist(), strict=True)) == {
        0: False,
        3: True,
        4: True,
        5: True,
    }
    assert labels.reference[0] == pytest.approx(0.025)


def test_split_is_by_root_deterministic_and_near_the_share():
    roots = np.arange(1, 20_001)
    test = rewards.is_test_root(roots, 0.1)
    assert np.array_equal(test, rewards.is_test_root(roots, 0.1))
    assert 0.09 < test.mean() < 0.11
    assert not rewards.is_test_root(roots, 0.0).any()
    # A larger share only adds roots to test: nothing moves the other way.
    assert (rewards.is_test_root(roots, 0.2) >= test).all()


def _text(**fields) -> VersionText:
    base = {
        "version_id": 1,
        "number": 1,
        "category": "diet",
        "title": "Meal Planner",
        "summary": "Plans a week of meals.",
        "description": "Plans meals for a family.",
        "completion": "{}",
    }
    return VersionText(**{**base, **fields})


def test_prompts_say_what_produced_each_version():
    root = _text()
    assert rewards.version_prompt(root) == (
        "Write a diet mini-app, “Meal Planner”: Plans meals for a family."
    )
    fork = _text(
        is_fork=True,
        fork_request="no peanuts, please",
        parent_title="Meal Planner",
        parent_summary="Plans a week of meals.",
    )
    assert rewards.version_prompt(fork) == (
        "Fork this diet mini-app, “Meal Planner”: Plans a week of meals.\n"
        "Request: no peanuts, please"
    )
    hidden_parent = _text(is_fork=True, fork_request="vegan")
    assert rewards.version_prompt(hidden_parent) == "Fork a diet mini-app.\nRequest: vegan"
    revision = _text(number=3, changelog="bigger buttons")
    assert rewards.version_prompt(revision).endswith("Change requested: bigger buttons")


def test_openai_preference_line_has_the_documented_shape():
    line = rewards.openai_preference_line("p", "good", "bad")
    assert line == {
        "input": {"messages": [{"role": "user", "content": "p"}]},
        "preferred_output": [{"role": "assistant", "content": "good"}],
        "non_preferred_output": [{"role": "assistant", "content": "bad"}],
    }


def test_on_the_simulators_truth_pairs_are_right_and_rewards_rank_quality():
    """The simulated world (bench/evolution_sim.py, seed 3): 2,000 raters with leniency
    sd 0.8, ratings missing not at random. Exported pairs must name the truly better version
    at least 90% of the time, and the reward must rank versions by latent quality with
    Spearman ≥ 0.9; raw mean ratings are printed beside them."""
    figures = accuracy_on_world(3)
    print(
        f"\nlabel accuracy {figures['label_accuracy']:.3f} over {figures['pairs']} pairs "
        f"(raw mean ordering of the same pairs {figures['raw_on_same_pairs']:.3f}; "
        f"{figures['raw_pairs']} raw-mean pairs, accuracy {figures['raw_pairs_accuracy']:.3f}); "
        f"Spearman {figures['spearman']:.3f} (raw mean {figures['raw_spearman']:.3f})"
    )
    assert figures["pairs"] >= 100
    assert all(figures["pairs_by_relation"].values())
    assert figures["label_accuracy"] >= 0.9
    assert figures["spearman"] >= 0.9


def test_over_every_candidate_pair_the_reward_orders_better_than_raw_means_when_ratings_are_few():
    """bench/export.py's coverage curve, in the sparse world shown by popularity: over all the
    export's candidate pairs (no confidence cut), the reward's most confident pairs are the
    ones it orders right, and it orders the lot better than a z test on raw means does."""
    curve = coverage_accuracy(0, CURVE_WORLDS["sparse, popular"])
    assert curve["pairs"] > 100
    model, raw = curve["model"], curve["raw"]
    assert model[0] == 1.0  # the most confident 5%
    assert all(a >= b for a, b in pairwise(model))  # confident first
    assert model[-1] > raw[-1] + 0.02
