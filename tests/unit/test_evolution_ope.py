"""evolution.ope: IPS, self-normalized IPS and doubly robust estimates of a target policy's
value from another policy's logs, on synthetic bandits whose true values are known."""

from __future__ import annotations

import numpy as np
import pytest

from evolution.ope import (
    Distributions,
    LoggedRows,
    doubly_robust,
    evaluate,
    ips,
    mean_reward_model,
    snips,
    unsupported_mass,
)

# A 5-armed bandit: the logging policy favours arm 0, the target arm 3.
MEANS = np.array([0.2, 0.5, 0.3, 0.8, 0.4])
LOGGING = np.array([0.4, 0.2, 0.2, 0.1, 0.1])
TARGET = np.array([0.1, 0.2, 0.1, 0.5, 0.1])
TRUE_VALUE = float(TARGET @ MEANS)


def bandit_log(seed: int, n: int = 2000, target=TARGET, logging=LOGGING):
    rng = np.random.default_rng(seed)
    action = rng.choice(MEANS.size, size=n, p=logging)
    reward = (rng.random(n) < MEANS[action]).astype(float)
    log = LoggedRows(propensity=logging[action], reward=reward, target_probability=target[action])
    return action, log


def estimates_of(seed: int, n: int = 2000):
    action, log = bandit_log(seed, n)
    model = mean_reward_model(action, log.reward, MEANS.size)
    under_target = Distributions.dense(np.tile(TARGET, (n, 1))).expected(model, n)
    return evaluate(log, predicted_logged=model[action], predicted_under_target=under_target)


def test_each_estimator_is_unbiased_and_its_interval_covers_the_truth():
    seeds = range(200)
    runs = [estimates_of(seed) for seed in seeds]
    for name in ("ips", "snips", "dr"):
        values = np.array([run[name].value for run in runs])
        standard_errors = np.array([run[name].standard_error for run in runs])
        # The mean over 200 seeds sits within 3 of its own standard errors of the truth.
        spread = values.std(ddof=1) / np.sqrt(len(values))
        assert abs(values.mean() - TRUE_VALUE) < 3 * spread, name
        # The reported standard error is the seeds' real spread, to within 20%.
        assert standard_errors.mean() == pytest.approx(values.std(ddof=1), rel=0.2), name
        covered = np.mean([run[name].ci_low <= TRUE_VALUE <= run[name].ci_high for run in runs])
        assert 0.9 <= covered <= 0.99, name
        assert all(run[name].clipped == 0 for run in runs)


def test_a_biased_logging_mean_is_not_the_target_value():
    # The check above is not vacuous: the log's plain mean is far from the target's value.
    _, log = bandit_log(0, 20_000)
    assert abs(log.reward.mean() - TRUE_VALUE) > 0.15


def test_target_equal_to_logging_gives_the_on_policy_mean_exactly():
    _, log = bandit_log(3, target=LOGGING)
    estimate = ips(log)
    assert estimate.value == pytest.approx(log.reward.mean(), abs=1e-12)
    assert estimate.effective_sample_size == pytest.approx(log.n)


def test_snips_with_all_weights_one_is_the_mean():
    rng = np.random.default_rng(1)
    propensity = rng.uniform(0.1, 1.0, 500)
    reward = rng.normal(size=500)
    log = LoggedRows(propensity=propensity, reward=reward, target_probability=propensity)
    assert snips(log).value == pytest.approx(reward.mean(), abs=1e-12)


def test_snips_is_invariant_to_a_reward_shift_and_ips_is_not():
    _, log = bandit_log(4)
    shifted = LoggedRows(log.propensity, log.reward + 10.0, log.target_probability)
    assert snips(shifted).value == pytest.approx(snips(log).value + 10.0)
    assert abs(ips(shifted).value - ips(log).value - 10.0) > 0.1


def test_dr_with_a_perfect_reward_model_has_no_variance_from_the_model_part():
    # Deterministic rewards and r̂ equal to them: every DR term is Σ π(a)·r(a) exactly.
    rng = np.random.default_rng(5)
    n = 3000
    action = rng.choice(MEANS.size, size=n, p=LOGGING)
    log = LoggedRows(LOGGING[action], MEANS[action], TARGET[action])
    dense = Distributions.dense(np.tile(TARGET, (n, 1)))
    dr = doubly_robust(
        log, predicted_logged=MEANS[action], predicted_under_target=dense.expected(MEANS, n)
    )
    assert dr.value == pytest.approx(TRUE_VALUE, abs=1e-12)
    assert dr.standard_error == pytest.approx(0.0, abs=1e-12)
    assert ips(log).standard_error > 0.005


def test_dr_stays_unbiased_with_a_wrong_reward_model():
    values = []
    for seed in range(100):
        action, log = bandit_log(seed)
        wrong = np.full(MEANS.size, 0.9)
        under_target = Distributions.dense(np.tile(TARGET, (log.n, 1))).expected(wrong, log.n)
        values.append(
            doubly_robust(
                log, predicted_logged=wrong[action], predicted_under_target=under_target
            ).value
        )
    values = np.array(values)
    assert abs(values.mean() - TRUE_VALUE) < 3 * values.std(ddof=1) / np.sqrt(values.size)


def test_weights_above_the_cap_are_clipped_and_counted():
    propensity = np.array([0.01, 0.5, 0.5, 0.02])
    target = np.array([1.0, 0.5, 0.5, 1.0])
    log = LoggedRows(propensity, np.ones(4), target)
    clipped = ips(log, weight_cap=10.0)
    assert clipped.clipped == 2
    assert clipped.value == pytest.approx((10 + 1 + 1 + 10) / 4)
    assert ips(log).clipped == 0
    assert ips(log).value == pytest.approx((100 + 1 + 1 + 50) / 4)


def test_effective_sample_size_falls_as_weights_concentrate():
    even = LoggedRows(np.full(100, 0.5), np.ones(100), np.full(100, 0.5))
    uneven_target = np.r_[np.full(99, 0.01), 1.0]
    uneven = LoggedRows(np.full(100, 0.5), np.ones(100), uneven_target)
    assert ips(even).effective_sample_size == pytest.approx(100)
    # Weights 0.02 (99 rows) and 2 (one row): (Σw)² / Σw².
    assert ips(uneven).effective_sample_size == pytest.approx(3.98**2 / (99 * 0.02**2 + 4))


def test_mean_reward_model_shrinks_toward_the_log_mean():
    model = mean_reward_model(np.array([0, 0, 1]), np.array([1.0, 1.0, 0.0]), 3)
    overall = 2 / 3
    assert model[0] == pytest.approx((2 + overall) / 3)
    assert model[1] == pytest.approx(overall / 2)
    assert model[2] == pytest.approx(overall)


def test_sparse_distributions_give_the_expected_prediction_per_row():
    dist = Distributions(
        row=np.array([0, 0, 1]), action=np.array([2, 0, 1]), probability=np.array([0.25, 0.75, 1])
    )
    assert dist.expected(np.array([1.0, 2.0, 3.0]), 2) == pytest.approx([0.75 + 0.75, 2.0])
    with pytest.raises(ValueError, match="sum to 1"):
        Distributions(np.array([0]), np.array([0]), np.array([0.5])).expected(np.ones(1), 1)


@pytest.mark.parametrize(
    ("propensity", "reward", "target", "message"),
    [
        ([0.5, 0.0], [1.0, 0.0], [0.5, 0.5], "propensity values outside"),
        ([0.5, 0.5], [1.0, np.nan], [0.5, 0.5], "NaN"),
        ([0.5, 0.5], [1.0], [0.5, 0.5], "reward has shape"),
        ([0.5, 0.5], [1.0, 0.0], [0.5], "target_probability has shape"),
        ([0.5, 1.5], [1.0, 0.0], [0.5, 0.5], "propensity values outside"),
        ([0.5, 0.5], [1.0, 0.0], [0.5, -0.1], "target_probability values outside"),
        ([], [], [], "no logged rows"),
    ],
)
def test_hostile_input_raises_a_clear_error(propensity, reward, target, message):
    with pytest.raises(ValueError, match=message):
        LoggedRows(np.array(propensity), np.array(reward), np.array(target))


def test_dr_rejects_predictions_of_the_wrong_length():
    _, log = bandit_log(0, 10)
    with pytest.raises(ValueError, match="predicted_logged has shape"):
        doubly_robust(log, predicted_logged=np.zeros(9), predicted_under_target=np.zeros(10))


def test_unsupported_mass_is_the_target_probability_the_log_cannot_reach():
    logging = Distributions.dense(np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]))
    target = Distributions.dense(np.array([[0.2, 0.2, 0.6], [0.5, 0.5, 0.0]]))
    assert unsupported_mass(target, logging, 2) == pytest.approx((0.6 + 0.5) / 2)
    assert unsupported_mass(logging, logging, 2) == 0.0


def test_tempered_and_greedy_reshape_each_row_over_its_support():
    logged = Distributions(
        row=np.array([0, 0, 0, 1, 1]),
        action=np.array([4, 7, 9, 4, 7]),
        probability=np.array([0.6, 0.3, 0.1, 0.5, 0.5]),
    )
    assert logged.tempered(1.0).probability == pytest.approx(logged.probability)
    assert logged.tempered(0.0).probability == pytest.approx([1 / 3] * 3 + [0.5, 0.5])
    sharper = logged.tempered(2.0).probability
    assert sharper[:3] == pytest.approx(np.array([0.36, 0.09, 0.01]) / 0.46)
    greedy = logged.greedy()
    assert greedy.row.tolist() == [0, 1, 1]
    assert greedy.action.tolist() == [4, 4, 7]
    assert greedy.probability == pytest.approx([1.0, 0.5, 0.5])
    assert logged.probability_of(np.array([7, 9])) == pytest.approx([0.3, 0.0])


def test_grouped_rows_are_not_counted_as_independent_evidence():
    # Every row logged twice in the same group: no new information, so the same standard error
    # (to within G/(G−1) vs n/(n−1)); counted as independent, it would shrink by √2.
    _, log = bandit_log(6, 500)
    twice = LoggedRows(
        np.repeat(log.propensity, 2),
        np.repeat(log.reward, 2),
        np.repeat(log.target_probability, 2),
    )
    grouped = LoggedRows(
        twice.propensity,
        twice.reward,
        twice.target_probability,
        group=np.repeat(np.arange(500) * 7, 2),
    )
    for estimator in (ips, snips):
        alone = estimator(log).standard_error
        assert estimator(grouped).standard_error == pytest.approx(alone, rel=1e-3)
        assert estimator(twice).standard_error == pytest.approx(alone / np.sqrt(2), rel=1e-2)
    with pytest.raises(ValueError, match="group has shape"):
        LoggedRows(log.propensity, log.reward, log.target_probability, group=np.zeros(3))
