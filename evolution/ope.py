"""Off-policy evaluation: a candidate policy's value estimated from another policy's logs.

A logged row is one decision (here: one slot of a slate, given the sub-agents placed in earlier
slots) with the action the logging policy took, the probability it had of taking it (its
propensity p), the reward that followed, and the probability π the candidate (target) policy
would have given the same action in the same situation. With w = π / p:

* IPS (inverse propensity scoring): mean of w·r. Unbiased when every action the target may
  take has p > 0 (overlap) and p is the true logging probability; its variance grows with the
  weights.
* SNIPS (self-normalized IPS): Σ w·r / Σ w. Biased by O(1/n) but consistent under the same
  assumptions; much smaller variance when weights are uneven, and invariant to a constant
  shift of the rewards. With every weight 1 it is the plain mean.
* DR (doubly robust): mean of  Σ_a π(a)·r̂(a) + w·(r − r̂(logged action)), with r̂ a reward
  model. Unbiased if the propensities are right (whatever r̂) or if r̂ is right (the
  direct-method part is then exact and the correction has mean zero); its variance is that
  of IPS on the residuals r − r̂, small when r̂ is good.

Weights are clipped at ``weight_cap`` (``DEFAULT_WEIGHT_CAP``): a row whose π/p exceeds it
counts with weight cap instead. Clipping trades variance for a bias toward the logging
policy's rewards; every estimate reports how many rows were clipped, and a large count means
the candidate strays where the log has little data. The effective sample size (Σw)²/Σw² says
how many on-policy rows the weighted log is worth: n for the logging policy itself, small
when a few rows carry most of the weight.

Overlap: an action the target may take but the logging policy never takes is invisible to all
three (``unsupported_mass`` measures the target's probability on such actions).

Standard errors are cluster-robust over ``LoggedRows.group`` (the slots of one slate share a
user and are not independent; without groups, every row counts as independent, which makes
them optimistic); the interval is estimate ± 1.96 standard errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_WEIGHT_CAP = 100.0
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class LoggedRows:
    """The log, one entry per row. ``target_probability``: π(logged action | row).
    ``group``: rows that share one draw of the world (the slots of one slate share a user),
    for standard errors; None: every row is independent."""

    propensity: np.ndarray
    reward: np.ndarray
    target_probability: np.ndarray
    group: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("propensity", "reward", "target_probability"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.float64))
        n = self.propensity.size
        if n == 0:
            raise ValueError("no logged rows to evaluate")
        for name in ("reward", "target_probability"):
            if getattr(self, name).shape != (n,):
                raise ValueError(
                    f"{name} has shape {getattr(self, name).shape}, the propensities ({n},)"
                )
        if self.propensity.shape != (n,):
            raise ValueError(f"propensity must be one value per row, got {self.propensity.shape}")
        if self.group is not None:
            group = np.asarray(self.group)
            if group.shape != (n,):
                raise ValueError(f"group has shape {group.shape}, the propensities ({n},)")
            object.__setattr__(self, "group", np.unique(group, return_inverse=True)[1])
        not_finite = int(np.sum(~np.isfinite(self.reward)))
        if not_finite:
            raise ValueError(f"{not_finite} rewards are NaN or infinite")
        _check_probabilities("propensity", self.propensity, allow_zero=False)
        _check_probabilities("target_probability", self.target_probability, allow_zero=True)

    @property
    def n(self) -> int:
        return self.propensity.size


@dataclass(frozen=True)
class Distributions:
    """A policy's whole distribution per row, sparse: probability[j] of action[j] in row[j]
    (actions absent from a row have probability 0). Each row's probabilities sum to 1."""

    row: np.ndarray
    action: np.ndarray
    probability: np.ndarray

    @classmethod
    def dense(cls, matrix: np.ndarray) -> Distributions:
        """From a (rows, actions) matrix of probabilities."""
        matrix = np.asarray(matrix, dtype=np.float64)
        row, action = np.nonzero(matrix)
        return cls(row, action, matrix[row, action])

    def probability_of(self, action: np.ndarray) -> np.ndarray:
        """Per row r, the probability of ``action[r]`` (0 when the row does not list it)."""
        action = np.asarray(action, dtype=np.int64)
        hit = self.action == action[self.row]
        out = np.zeros(action.size)
        out[self.row[hit]] = self.probability[hit]
        return out

    def rows(self, keep: np.ndarray) -> Distributions:
        """The distributions of rows ``keep``, in that order, renumbered from 0."""
        keep = np.asarray(keep, dtype=np.int64)
        new_of = np.full(max(int(self.row.max(initial=-1)), int(keep.max(initial=-1))) + 1, -1)
        new_of[keep] = np.arange(keep.size)
        kept = new_of[self.row] >= 0
        return Distributions(new_of[self.row[kept]], self.action[kept], self.probability[kept])

    def tempered(self, alpha: float) -> Distributions:
        """p^α renormalized per row, over the same support: α = 1 is this policy, α < 1
        flatter (α = 0: uniform over the support), α > 1 sharper (toward the mode)."""
        if not alpha >= 0:
            raise ValueError(f"alpha must be ≥ 0, got {alpha}")
        powered = self.probability**alpha
        totals = np.bincount(self.row, weights=powered)
        return Distributions(self.row, self.action, powered / totals[self.row])

    def greedy(self) -> Distributions:
        """All of each row's mass on its most probable actions (ties share it evenly)."""
        top = np.full(int(self.row.max(initial=-1)) + 1, -np.inf)
        np.maximum.at(top, self.row, self.probability)
        best = self.probability == top[self.row]
        counts = np.bincount(self.row[best])
        return Distributions(self.row[best], self.action[best], 1.0 / counts[self.row[best]])

    def expected(self, predicted: np.ndarray, n_rows: int) -> np.ndarray:
        """Per row, Σ_a π(a)·predicted[a] (``predicted`` per action, or (rows, actions))."""
        predicted = np.asarray(predicted, dtype=np.float64)
        values = predicted[self.action] if predicted.ndim == 1 else predicted[self.row, self.action]
        totals = np.bincount(self.row, weights=self.probability, minlength=n_rows)
        if self.row.size and (self.row.max() >= n_rows or not np.allclose(totals, 1.0, atol=1e-6)):
            raise ValueError("each row's target distribution must sum to 1 over its actions")
        return np.bincount(self.row, weights=self.probability * values, minlength=n_rows)


def unsupported_mass(target: Distributions, logging: Distributions, n_rows: int) -> float:
    """The target's probability on actions the logging policy never takes in the same row,
    averaged over rows: the part of the target's value the log cannot see (no weight reaches
    it). IPS counts it as zero reward, SNIPS and DR as the seen part's average; above a few
    percent, no estimate of the target is trustworthy."""
    width = int(max(target.action.max(initial=0), logging.action.max(initial=0))) + 1
    seen = np.isin(target.row * width + target.action, logging.row * width + logging.action)
    return float(np.sum(target.probability[~seen])) / n_rows


@dataclass(frozen=True)
class Estimate:
    estimator: str
    value: float
    standard_error: float
    ci_low: float
    ci_high: float
    effective_sample_size: float
    rows: int
    clipped: int  # rows whose weight π/p was above the cap
    weight_cap: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _check_probabilities(name: str, values: np.ndarray, *, allow_zero: bool) -> None:
    bad = ~np.isfinite(values) | (values > 1.0 + 1e-9) | (values < 0.0)
    if not allow_zero:
        bad |= values == 0.0
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        allowed = "[0, 1]" if allow_zero else "(0, 1]"
        raise ValueError(
            f"{int(bad.sum())} {name} values outside {allowed} (row {first}: {values[first]}); "
            "a logged action the logging policy could not take cannot be reweighted"
        )


def _weights(log: LoggedRows, weight_cap: float) -> tuple[np.ndarray, int]:
    if not weight_cap > 0:
        raise ValueError(f"weight_cap must be positive, got {weight_cap}")
    raw = log.target_probability / log.propensity
    return np.minimum(raw, weight_cap), int(np.sum(raw > weight_cap))


def _effective_sample_size(weights: np.ndarray) -> float:
    squares = float(np.sum(weights * weights))
    return float(np.sum(weights)) ** 2 / squares if squares > 0 else 0.0


def _estimate(name: str, value: float, se: float, weights, clipped, cap) -> Estimate:
    return Estimate(
        estimator=name,
        value=value,
        standard_error=se,
        ci_low=value - Z_95 * se,
        ci_high=value + Z_95 * se,
        effective_sample_size=_effective_sample_size(weights),
        rows=weights.size,
        clipped=clipped,
        weight_cap=cap,
    )


def _standard_error(deviation: np.ndarray, group: np.ndarray | None, scale: float) -> float:
    """√(G/(G−1)·Σ_g (Σ_{i∈g} d_i)²) / scale: the cluster-robust (sandwich) standard error of
    Σ d / scale, with G groups; without groups each row is one, which is the usual s/√n."""
    sums = deviation if group is None else np.bincount(group, weights=deviation)
    g = sums.size
    if g < 2:
        return 0.0
    return float(np.sqrt(g / (g - 1) * np.sum(sums * sums))) / scale


def _mean_and_se(terms: np.ndarray, group: np.ndarray | None) -> tuple[float, float]:
    mean = float(np.mean(terms))
    return mean, _standard_error(terms - mean, group, terms.size)


def ips(log: LoggedRows, *, weight_cap: float = DEFAULT_WEIGHT_CAP) -> Estimate:
    weights, clipped = _weights(log, weight_cap)
    value, se = _mean_and_se(weights * log.reward, log.group)
    return _estimate("ips", value, se, weights, clipped, weight_cap)


def snips(log: LoggedRows, *, weight_cap: float = DEFAULT_WEIGHT_CAP) -> Estimate:
    weights, clipped = _weights(log, weight_cap)
    total = float(np.sum(weights))
    if total == 0:
        # The target never takes a logged action: the log says nothing about it.
        return _estimate("snips", float("nan"), float("nan"), weights, clipped, weight_cap)
    value = float(np.sum(weights * log.reward)) / total
    # Delta method for a ratio of means.
    se = _standard_error(weights * (log.reward - value), log.group, total)
    return _estimate("snips", value, se, weights, clipped, weight_cap)


def doubly_robust(
    log: LoggedRows,
    *,
    predicted_logged: np.ndarray,
    predicted_under_target: np.ndarray,
    weight_cap: float = DEFAULT_WEIGHT_CAP,
) -> Estimate:
    """``predicted_logged``: r̂ of each row's logged action; ``predicted_under_target``: per
    row, Σ_a π(a)·r̂(a) (``Distributions.expected``)."""
    predicted_logged = np.asarray(predicted_logged, dtype=np.float64)
    predicted_under_target = np.asarray(predicted_under_target, dtype=np.float64)
    for name, values in (
        ("predicted_logged", predicted_logged),
        ("predicted_under_target", predicted_under_target),
    ):
        if values.shape != (log.n,):
            raise ValueError(f"{name} has shape {values.shape}, the log ({log.n},)")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name} has NaN or infinite values")
    weights, clipped = _weights(log, weight_cap)
    terms = predicted_under_target + weights * (log.reward - predicted_logged)
    value, se = _mean_and_se(terms, log.group)
    return _estimate("dr", value, se, weights, clipped, weight_cap)


def mean_reward_model(
    action: np.ndarray, reward: np.ndarray, n_actions: int, prior_weight: float = 1.0
) -> np.ndarray:
    """r̂ per action: the action's mean logged reward, shrunk toward the log's mean by
    ``prior_weight`` pseudo-rows (an action never logged gets the log's mean)."""
    action = np.asarray(action, dtype=np.int64)
    reward = np.asarray(reward, dtype=np.float64)
    overall = float(np.mean(reward))
    sums = np.bincount(action, weights=reward, minlength=n_actions)
    counts = np.bincount(action, minlength=n_actions)
    return (sums + prior_weight * overall) / (counts + prior_weight)


def evaluate(
    log: LoggedRows,
    *,
    predicted_logged: np.ndarray,
    predicted_under_target: np.ndarray,
    weight_cap: float = DEFAULT_WEIGHT_CAP,
) -> dict[str, Estimate]:
    """All three estimates of one candidate."""
    return {
        "ips": ips(log, weight_cap=weight_cap),
        "snips": snips(log, weight_cap=weight_cap),
        "dr": doubly_robust(
            log,
            predicted_logged=predicted_logged,
            predicted_under_target=predicted_under_target,
            weight_cap=weight_cap,
        ),
    }
