r"""How Sprig ranks sub-agents.

Every number below is computed from three kinds of data: ratings (stars or thumbs), usage events
(who used which sub-agent on which day), and the fork tree (each sub-agent's parent). Nothing
counts raw opens or installs, and nothing adds up descendants' popularity.

1. One rating scale
   Stars (1..5) and thumbs (0/1) are different instruments, so each is put in standard units of
   its own kind: z = (r - mean_kind) / sd_kind, the mean and sd taken over all ratings of that
   kind. A 5-star and a thumbs-up then both mean "about one standard deviation above what that
   instrument usually says". (Fewer than two ratings of a kind, or no spread: stars use
   (r - 3) / 1.2 and thumbs (r - 0.5) / 0.5.)
   1b. The ends of a scale are bounds, not values: 5 stars says "at least 4.5 stars", 1 star
   "at most 1.5", a thumbs-up "above the middle" (0.5), a thumbs-down "below" it, each bound on
   the same standard units. When most people give a sub-agent 5 stars, the rating says it is
   good, not how good: taking 5 as its value would squeeze every excellent sub-agent onto one
   ceiling and stop better forks of them from rising above it (see 2b).

2. Separating the rater from the sub-agent (Koren's baseline)
   z_uv ≈ μ + b_u + b_v: μ the overall mean, b_u how lenient user u is, b_v how good sub-agent v
   is. Because people rate several sub-agents, a harsh rater is recognized by being harsh
   everywhere, and their low rating stops counting against the sub-agent. Fitted by alternating
   least squares (as Surprise's BaselineOnly), each step a closed form:
       b_v ← Σ_u w_uv (z_uv − μ − b_u) / (λ_v + Σ_u w_uv)        λ_v = 10
       b_u ← Σ_v w_uv (z_uv − μ − b_v) / (λ_u + Σ_v w_uv)        λ_u = 15
   for 10 rounds (3 when started from the previous run's b_u). w_uv = 2^(−age/30 days): a rating
   loses half its weight every 30 days, because sub-agents get edited.
   The evidence handed to step 3 is the rater-corrected mean and its weight:
       y_v = Σ_u w_uv (z_uv − μ − b_u) / n_v,   n_v = Σ_u w_uv,   precision π_v = n_v / σ_v²,
       σ_v² = (Σ_u w_uv (z_uv − μ − b_u − y_v)² + 5 σ²) / (n_v − 1 + 5),
   σ² the residual variance of all ratings and σ_v² the spread of this sub-agent's own ratings,
   pulled toward σ² by 5 pseudo-ratings (ratings that agree, e.g. all at the top of the scale,
   make a sub-agent known sooner than ratings all over the place). y_v is not shrunk here:
   step 3 shrinks it toward the sub-agent's lineage, which knows more than "toward zero".
   2b. End-of-scale ratings (1b) then replace that evidence by the censored (Tobit) one: a rating
   "at least c" of a sub-agent believed to be at θ_v has the likelihood P(x ≥ c) with
   x = μ + b_u + θ_v + ε, ε ~ N(0, σ²). Around θ_v it counts as one Gaussian rating of value
   θ_v + σ/(λ − α) and weight ρ = λ(λ − α), with α = (c − μ − b_u − θ_v)/σ and
   λ = φ(α)/(1 − Φ(α)) (Laplace: same slope and curvature as the exact likelihood); "at most"
   is the mirror image, ratings inside the scale keep value and weight 1. So a 5-star rating of
   a sub-agent believed far above 4.5 stars weighs almost nothing, and one of a sub-agent
   believed below it weighs almost as much as a rating at the bound. Then
       y_v = Σ w ρ (value − μ − b_u) / Σ w ρ,   π_v = Σ w ρ / σ².
   Because the weights depend on the belief, evidence and lineage posterior (3) are computed in
   turn, 4 times, starting from the evidence of 2: where ratings stop telling sub-agents apart,
   their lineage (3b) orders them.

3. The lineage posterior (what the ranking believes about quality θ_v)
   Roots:  θ_root ~ N(μ0, σ0²).   Forks:  θ_child ~ N(θ_parent + δ̄, τ²).   Evidence: y_v ~ N(θ_v,
   1/π_v). On a tree this Gaussian model is solved exactly by two passes (belief propagation):
   * upward, leaves to roots: each node sums its own evidence and its children's messages,
         J_v = π_v + Σ_c m_c,          h_v = π_v y_v + Σ_c g_c,
         m_c = J_c / (1 + τ² J_c),    g_c = (h_c − δ̄ J_c) / (1 + τ² J_c)
     (J, h: precision and precision-weighted mean of all evidence below and at v, seen from v);
   * downward, roots to leaves: the root's posterior is N((μ0/σ0² + h)/(1/σ0² + J), 1/(1/σ0² + J));
     a child takes its parent's posterior minus its own message (everything but its subtree),
     adds the fork step (+δ̄, +τ²) and combines that with its own J, h.
   So a new fork with no ratings starts at its parent's belief plus δ̄, with τ² more variance; and
   ratings of children move the parent's belief (and, more weakly, the grandparent's). Cost: one
   pass over the nodes each way.
   The four numbers μ0, σ0², δ̄, τ² are estimated from the data by random-effects moments (Paule–
   Mandel): roots' y spread around μ0 with variance σ0² + 1/π; parent-to-child differences of y
   spread around δ̄ with variance τ² + 1/π_child + 1/π_parent. τ² is kept at least 0.05·σ0², so a
   fork is never assumed to be a copy of its parent; with under 3 usable roots (or pairs) the
   defaults are N(0, 1) for roots and N(0, σ0²/2) for the fork step.
   3b. Branches differ in how their forks go (a well-kept line keeps improving, a neglected one
   decays), so δ̄ is per branch: each fork c whose parent p also has evidence gives a step
   d_c = y_c − y_p of weight w_c = 1/(τ² + 1/π_c + 1/π_p), and a fork of v is expected to move by
       δ̄_v = (Σ_a Σ_c w_c d_c + k δ̄/τ²) / (Σ_a Σ_c w_c + k/τ²),   k = 3,
   a over v and its ancestors, c over their forks: the steps of the forks made along v's line,
   shrunk toward the catalog-wide δ̄ with 3 perfectly known steps. The step into a node leaves
   its own step out, so its evidence is not counted twice.

4. Scores built on the posterior (E = posterior mean, sd = posterior standard deviation)
   * display score ("top"): E[θ] − 1.64·sd(θ), a one-sided 95% lower bound: a sub-agent climbs
     by being good and by being known to be good.
   * branch value: E[max of θ over the sub-agent and all its descendants], from 64 joint draws of
     the whole tree posterior (each child drawn given its parent's draw, so related sub-agents move
     together): E[θ_v] + average over draws of (max over the subtree − θ_v). It is never below
     E[θ_v], and it is high when a line of forks may hold something better.
   * best descendant: among the descendants, the one with the highest display score, shown only
     if P(θ_descendant > θ_v) ≥ 0.8, computed exactly from the joint posterior (the covariance of
     an ancestor and a descendant is the product of the per-step gains 1/(1 + τ² J) along the
     path times the ancestor's variance).
   * fork gain: what forking this sub-agent has tended to do,
         (Σ_children E[θ_child − θ_v] + κ δ̄_v) / (number of children + κ),   κ = 1,
     a mean of the children's improvements shrunk toward its branch's fork step δ̄_v (3b).
   * rising: for recent forks (first seen less than 30 days ago, or under 10 ratings without
     ages, or still young as defined next), E[θ_v − θ_parent] / sd(θ_v − θ_parent): how surely
     the fork beats what it was forked from.
   * young (for exploration): a sub-agent whose own ratings are worth less than 10 typical ones,
     π_v < 10/σ². Counting evidence rather than ratings lets ten ratings that disagree keep a fork
     in the young pool while six that agree (a broken fork panned by everyone) let it out.
   Sub-agents are never ranked by their descendants' installs: that counts popularity twice.

5. Usage (distinct people, never opens)
   * active users: Σ over distinct users of 2^(−days since their last use/30).
   * retention: of users who first used it at least 7 days ago, the share who used it again 7 or
     more days after their first use, each user weighted by 2^(−days since first use/30), and
     shrunk toward the catalog-wide rate r̄ with 10 pseudo-users: (retained + 10 r̄)/(cohort + 10).
   * usage score: ln(1 + active users × retention).
   * trending: ln((u_7 + 5) / (ū_28 + 5)), u_7 the distinct users of the last 7 days and ū_28 the
     average weekly distinct users of the 28 days before: a sub-agent trends against its own past,
     and 5 pseudo-users keep a jump from 1 to 3 users from looking like a surge.

6. What is shown (evolution.explore)
   The main agent fills its slates by Thompson sampling on the posterior of step 3, with 15% of
   slots kept for young sub-agents (step 4), and logs each choice's propensity.

Incremental runs reuse the previous rater offsets (3 rounds instead of 10). What is fitted on the
whole catalog at once (the scales of 1, μ, b_u and σ² of 2, the prior of 3 at each reading of the
evidence) is a run's GlobalFit; given it, every figure of a sub-agent depends on its own tree
only, so a run over the trees that changed, with the last full run's fit, gives them exactly what
a full run with that fit would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import brentq
from scipy.special import erfcx, ndtr

from evolution.tree import Forest

LOWER_BOUND_Z = 1.64
BRANCH_SAMPLES = 64
BEST_DESCENDANT_CONFIDENCE = 0.8
FORK_GAIN_PSEUDO_CHILDREN = 1.0
RECENT_AGE_DAYS = 30.0
YOUNG_RATINGS = 10
HALF_LIFE_DAYS = 30.0
BRANCH_DRIFT_PSEUDO_STEPS = 3.0
CENSORED_ROUNDS = 4
_STAR_FALLBACK = (3.0, 1.2)
_THUMB_FALLBACK = (0.5, 0.5)


# --------------------------------------------------------------------------- 1. one scale
@dataclass(frozen=True)
class RatingLevels:
    """Ratings as small codes, code = kind · L + the index of the value among ``levels`` (kind 0
    stars, 1 thumbs; L = ``levels.size``). Anything computed from a rating's kind and value
    alone (its place on the common scale, its bound) is then a table of 2·L entries and one
    gather, instead of several passes over millions of floats and as many temporary arrays."""

    code: np.ndarray  # uint8 for whole-number ratings 0..7 (every Sprig rating), else intp
    levels: np.ndarray  # float64, the distinct values a code can stand for

    def per_code(self, table: np.ndarray) -> np.ndarray:
        """``table`` of shape (2, L) (row = kind) read at every rating's code."""
        return np.asarray(table).reshape(-1)[self.code]

    def counts(self) -> np.ndarray:
        """How many ratings of each kind (row) have each level (column)."""
        n_levels = self.levels.size
        return np.bincount(self.code, minlength=2 * n_levels).reshape(2, n_levels)


_WHOLE_LEVELS = np.arange(8.0)


def rating_levels(value: np.ndarray, is_thumb: np.ndarray | None = None) -> RatingLevels:
    """The codes of ``value`` (see ``RatingLevels``): kind · 8 + value for whole numbers in
    0..7, which costs a cast and a check; other values (half stars, say) are numbered by
    ``np.unique``, a sort."""
    value = np.asarray(value)
    kind = None if is_thumb is None else np.asarray(is_thumb, bool).view(np.uint8)
    if value.size and value.dtype.kind in "biuf" and value.min() >= 0 and value.max() < 8:
        code = value.astype(np.uint8)
        if value.dtype.kind != "f" or np.array_equal(code, value):
            if kind is not None:
                code += kind << np.uint8(3)
            return RatingLevels(code, _WHOLE_LEVELS)
    levels, index = np.unique(np.asarray(value, dtype=np.float64), return_inverse=True)
    code = index.astype(np.intp).reshape(value.shape)
    if kind is not None:
        code += kind.astype(np.intp) * levels.size
    return RatingLevels(code, levels)


def scale_of_kind(ratings: RatingLevels) -> tuple[np.ndarray, np.ndarray]:
    """Per kind the centre and spread of the common scale (module docstring, 1); a kind with
    fewer than two ratings, or all of them equal, keeps its fallback scale."""
    counts = ratings.counts().astype(np.float64)
    count = counts.sum(axis=1)
    total = counts @ ratings.levels
    squares = counts @ (ratings.levels * ratings.levels)
    centre, spread = np.empty(2), np.empty(2)
    for k, (fallback_mean, fallback_sd) in enumerate((_STAR_FALLBACK, _THUMB_FALLBACK)):
        centre[k], spread[k] = fallback_mean, fallback_sd
        if count[k] >= 2:
            mean = total[k] / count[k]
            variance = squares[k] / count[k] - mean * mean
            if variance > 1e-12 * max(1.0, mean * mean):
                centre[k], spread[k] = mean, math.sqrt(variance)
    return centre, spread


def common_scale_table(
    ratings: RatingLevels, scale: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """The common-scale value of each code, shape (2, L); ``scale`` (centre and spread per
    kind) is taken from ``ratings`` themselves unless given."""
    centre, spread = scale_of_kind(ratings) if scale is None else scale
    return (ratings.levels[None, :] - centre[:, None]) / spread[:, None]


def to_common_scale(
    value: np.ndarray,
    is_thumb: np.ndarray | None = None,
    scale: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Stars and thumbs in standard units of their own kind (see the module docstring, 1)."""
    ratings = rating_levels(value, is_thumb)
    return ratings.per_code(common_scale_table(ratings, scale))


def censoring_bounds(
    value: np.ndarray,
    is_thumb: np.ndarray | None = None,
    scale: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """What an end-of-scale rating says, on the common scale (module docstring, 1b).

    Returns per rating the bound and its direction: +1 for a top-box rating (5 stars, thumbs
    up: "at least" the boundary with the next category down), −1 for a bottom-box one (1 star,
    thumbs down: "at most" the boundary with the next one up), 0 for a rating inside the scale
    (its own value is taken as it is; the bound is then that value)."""
    ratings = rating_levels(value, is_thumb)
    centre, spread = scale_of_kind(ratings) if scale is None else scale
    level = ratings.levels[None, :]
    top, bottom = np.array([[5.0], [1.0]]), np.array([[1.0], [0.0]])
    direction = np.where(level >= top, 1, np.where(level <= bottom, -1, 0)).astype(np.int8)
    bound = (level - 0.5 * direction - centre[:, None]) / spread[:, None]
    return ratings.per_code(bound), ratings.per_code(direction)


# --------------------------------------------------------------------------- 2. rater bias
@dataclass(frozen=True)
class Baseline:
    global_mean: float
    user_offset: np.ndarray  # b_u
    item_effect: np.ndarray  # b_v as in Koren/Surprise (shrunk toward 0 by reg_item)
    item_count: np.ndarray  # n_v = Σ weights of the item's ratings
    item_evidence: np.ndarray  # y_v, unshrunk rater-corrected mean; 0 where n_v = 0
    noise_var: float  # σ², residual variance of one rating, all sub-agents pooled
    item_noise_var: np.ndarray  # σ_v², the same per sub-agent, shrunk toward σ²

    @property
    def item_precision(self) -> np.ndarray:
        return self.item_count / self.item_noise_var


def debias(
    user_idx: np.ndarray,
    item_idx: np.ndarray,
    rating: np.ndarray,
    n_users: int,
    n_items: int,
    *,
    reg_user: float = 15.0,
    reg_item: float = 10.0,
    epochs: int = 10,
    weight: np.ndarray | None = None,
    init_user_offset: np.ndarray | None = None,
    noise_prior: float = 5.0,
    tolerance: float = 1e-4,
) -> Baseline:
    """Koren's baseline μ + b_u + b_v by alternating least squares (module docstring, 2).

    ``rating`` is already on one scale (see ``to_common_scale``). ``weight`` (default 1) is the
    evidence weight of each rating, e.g. its half-life decay. ``init_user_offset`` warm-starts
    from a previous run, so a few epochs suffice. At most ``epochs`` epochs: the fit stops
    early once no rater's offset moved by more than ``tolerance`` (rating standard units; 1e-4
    is far below what any score shows) in an epoch. On ten million ratings that takes 4 epochs
    instead of 10; 0 runs every epoch."""
    user_idx = np.asarray(user_idx, dtype=np.int64)
    item_idx = np.asarray(item_idx, dtype=np.int64)
    rating = np.asarray(rating, dtype=np.float64)
    # Unweighted fits (the reward export's ten million ratings) skip the multiplications by 1.
    weighted = weight is not None
    if weighted:
        weight = np.asarray(weight, dtype=np.float64)
        total = float(weight.sum())
        global_mean = float(weight @ rating / total) if total > 0 else 0.0
    else:
        total = float(rating.size)
        global_mean = float(rating.mean()) if rating.size else 0.0
    user_count = np.bincount(user_idx, weight, minlength=n_users).astype(np.float64)
    item_count = np.bincount(item_idx, weight, minlength=n_items).astype(np.float64)
    user_offset = np.zeros(n_users)
    if init_user_offset is not None:
        known = min(n_users, len(init_user_offset))
        user_offset[:known] = init_user_offset[:known]
    item_effect = np.zeros(n_items)
    centred = rating - global_mean
    # Every per-rating intermediate lives in ``buffer`` (and, once the fit is done, in
    # ``centred``): on ten million ratings a fresh array per step costs more in page faults
    # than the arithmetic. ``take`` with mode="clip" writes into ``out`` directly (the default
    # mode copies it first to check bounds); the indices are valid by construction.
    buffer = np.empty_like(centred)
    for _ in range(epochs):
        np.take(user_offset, user_idx, out=buffer, mode="clip")
        np.subtract(centred, buffer, out=buffer)
        if weighted:
            buffer *= weight
        item_effect = np.bincount(item_idx, buffer, minlength=n_items) / (reg_item + item_count)
        np.take(item_effect, item_idx, out=buffer, mode="clip")
        np.subtract(centred, buffer, out=buffer)
        if weighted:
            buffer *= weight
        previous = user_offset
        user_offset = np.bincount(user_idx, buffer, minlength=n_users) / (reg_user + user_count)
        if n_users and float(np.max(np.abs(user_offset - previous))) <= tolerance:
            break

    corrected = buffer  # the ratings with the raters' offsets taken out
    np.take(user_offset, user_idx, out=corrected, mode="clip")
    np.subtract(centred, corrected, out=corrected)
    # Residual variance with the fitted effects' degrees of freedom taken out, so a sub-agent
    # with three ratings is not believed to be known to the third decimal. The effects are
    # ridge estimates, so each counts as n/(n + λ) of a parameter (its effective degrees of
    # freedom), not as a whole one: with most people rating one or two sub-agents, counting
    # whole parameters would leave almost no degrees of freedom and inflate σ² several-fold.
    residual = centred  # no longer needed as itself
    np.take(item_effect, item_idx, out=residual, mode="clip")
    np.subtract(corrected, residual, out=residual)
    fitted = float(
        np.sum(user_count / (user_count + reg_user)) + np.sum(item_count / (item_count + reg_item))
    )
    dof = max(rating.size - fitted, 1.0)
    squared = residual @ (residual * weight) if weighted else residual @ residual
    noise_var = float(squared / total * rating.size / dof) if total > 0 else 1.0
    noise_var = max(noise_var, 1e-6)
    item_evidence, item_noise_var = _item_evidence(
        corrected, item_idx, weight if weighted else None, item_count, noise_var, noise_prior
    )
    return Baseline(
        global_mean=global_mean,
        user_offset=user_offset,
        item_effect=item_effect,
        item_count=item_count,
        item_evidence=item_evidence,
        noise_var=noise_var,
        item_noise_var=item_noise_var,
    )


def _item_evidence(
    corrected: np.ndarray,
    item_idx: np.ndarray,
    weight: np.ndarray | None,
    item_count: np.ndarray,
    noise_var: float,
    noise_prior: float,
) -> tuple[np.ndarray, np.ndarray]:
    """y_v and σ_v² from the ratings with the raters' offsets taken out (module docstring, 2).

    Each sub-agent's figures are sums over its own ratings only, so a sub-agent scored alone
    (``baseline_given``) gets the very numbers a whole-catalog fit gives it. The spread of its
    ratings around their mean is shrunk toward the pooled σ² with ``noise_prior``
    pseudo-ratings: ratings pressed against the top of the scale agree with each other, and
    treating them as noisy as the catalog average would keep the best sub-agents needlessly
    uncertain (and needlessly explored)."""
    n_items = item_count.size
    corrected_sum = np.bincount(
        item_idx, corrected * weight if weight is not None else corrected, minlength=n_items
    )
    item_evidence = np.divide(
        corrected_sum, item_count, out=np.zeros(n_items), where=item_count > 0
    )
    spread = np.take(item_evidence, item_idx, mode="clip")
    np.subtract(corrected, spread, out=spread)
    spread *= spread
    if weight is not None:
        spread *= weight
    squares = np.bincount(item_idx, spread, minlength=n_items)
    item_noise_var = (squares + noise_prior * noise_var) / (
        np.maximum(item_count - 1.0, 0.0) + noise_prior
    )
    return item_evidence, np.maximum(item_noise_var, 1e-6)


def baseline_given(
    user_idx: np.ndarray,
    item_idx: np.ndarray,
    rating: np.ndarray,
    n_items: int,
    *,
    global_mean: float,
    user_offset: np.ndarray,
    noise_var: float,
    weight: np.ndarray | None = None,
    reg_item: float = 10.0,
    noise_prior: float = 5.0,
) -> Baseline:
    """The per-sub-agent part of ``debias`` with its global part given (μ, every b_u, σ²), as
    an incremental run has it from the last full fit: each sub-agent's evidence then depends on
    its own ratings only, and equals what that fit gave it from the same ratings."""
    user_idx = np.asarray(user_idx, dtype=np.int64)
    item_idx = np.asarray(item_idx, dtype=np.int64)
    weight = None if weight is None else np.asarray(weight, dtype=np.float64)
    corrected = np.asarray(rating, dtype=np.float64) - global_mean
    corrected -= np.take(user_offset, user_idx, mode="clip")
    item_count = np.bincount(item_idx, weight, minlength=n_items).astype(np.float64)
    item_evidence, item_noise_var = _item_evidence(
        corrected, item_idx, weight, item_count, noise_var, noise_prior
    )
    return Baseline(
        global_mean=global_mean,
        user_offset=user_offset,
        item_effect=np.divide(
            item_evidence * item_count, reg_item + item_count, out=np.zeros(n_items)
        ),
        item_count=item_count,
        item_evidence=item_evidence,
        noise_var=noise_var,
        item_noise_var=item_noise_var,
    )


def censored_evidence(
    baseline: Baseline,
    user_idx: np.ndarray,
    item_idx: np.ndarray,
    bound: np.ndarray,
    direction: np.ndarray,
    at: np.ndarray,
    *,
    weight: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each sub-agent's evidence y_v and precision π_v when end-of-scale ratings are bounds
    (module docstring, 2b): the Laplace approximation of the censored (Tobit) likelihood at
    θ_v = ``at``, one Gaussian pseudo-rating per censored rating.

    A top-box rating means x ≥ c for the latent x = μ + b_u + θ_v + ε, ε ~ N(0, σ²). With
    α = (c − μ − b_u − θ_v)/σ and λ = φ(α)/(1 − Φ(α)) (the inverse Mills ratio) it counts as
        value θ_v + σ/(λ − α),  weight ρ = λ(λ − α) ∈ (0, 1),
    which has the censored log-likelihood's slope and curvature at θ_v: a 5-star rating of a
    sub-agent believed to be far above the boundary weighs almost nothing, one of a sub-agent
    believed to be below it counts nearly as a rating at the boundary. A bottom-box rating is the
    mirror image. Ratings inside the scale keep their value and weight 1. Returns
        y_v = Σ w ρ (value − μ − b_u) / Σ w ρ,   π_v = Σ w ρ / σ²."""
    return CensoredReading(baseline, user_idx, item_idx, bound, direction, weight).evidence(at)


class CensoredReading:
    """``censored_evidence`` for repeated use at moving points: the ratings inside the scale do
    not depend on θ, so their sums are taken once, and each reading touches only the censored
    ratings."""

    def __init__(
        self,
        baseline: Baseline,
        user_idx: np.ndarray,
        item_idx: np.ndarray,
        bound: np.ndarray,
        direction: np.ndarray,
        weight: np.ndarray | None = None,
    ) -> None:
        item_idx = np.asarray(item_idx, dtype=np.int64)
        direction = np.asarray(direction)
        offset = baseline.global_mean + baseline.user_offset[np.asarray(user_idx, np.int64)]
        # Relative to μ + b_u: an exact rating reads as bound − offset, a censored one is
        # bounded there.
        relative = np.asarray(bound, dtype=np.float64) - offset
        weight = np.ones(relative.shape) if weight is None else np.asarray(weight, np.float64)
        self.n_items = baseline.item_count.size
        self.noise_var = baseline.noise_var
        self.sigma = math.sqrt(baseline.noise_var)
        exact = direction == 0
        exact_item, exact_weight = item_idx[exact], weight[exact]
        self.exact_count = np.bincount(exact_item, exact_weight, minlength=self.n_items)
        exact_weight *= relative[exact]
        self.exact_total = np.bincount(exact_item, exact_weight, minlength=self.n_items)
        censored = ~exact
        self.item = item_idx[censored]
        sign = direction[censored].astype(np.float64)
        # α = sign·(bound − θ)/σ = sign·bound/σ − (sign/σ)·θ: two constants per rating, so a
        # reading (four per ranking run, over millions of ratings) makes fewer passes.
        self.sign_over_sigma = sign / self.sigma
        self.scaled_bound = self.sign_over_sigma * relative[censored]
        self.sign_sigma = sign * self.sigma
        self.weight = None if np.all(weight == 1.0) else weight[censored]

    def evidence(
        self, at: np.ndarray, beside: _Beside | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The reading at θ = ``at``. ``beside``: a second thread that reads the second half of
        the censored ratings (the special function and the arithmetic let go of the GIL; the
        sums over sub-agents do not, so they stay whole and in the same order: the result is
        bit for bit the same with one thread or two)."""
        theta = np.asarray(at, dtype=np.float64)
        rho = np.empty(self.item.size)
        value = np.empty(self.item.size)
        half = self.item.size // 2
        later = (beside or _ON_THE_CALLER).run(self._read, theta, slice(half, None), rho, value)
        self._read(theta, slice(0, half), rho, value)
        later.result()
        count = self.exact_count + np.bincount(self.item, rho, minlength=self.n_items)
        total = self.exact_total + np.bincount(self.item, value, minlength=self.n_items)
        evidence = np.divide(total, count, out=np.zeros(self.n_items), where=count > 0)
        return evidence, count / self.noise_var

    def _read(self, theta: np.ndarray, part: slice, rho: np.ndarray, value: np.ndarray) -> None:
        """Each censored rating's weight ρ and ρ·value, for the ratings in ``part``."""
        theta = theta[self.item[part]]
        # α: how far the boundary lies beyond the latent mean, in the censored direction.
        alpha = self.sign_over_sigma[part] * theta
        np.subtract(self.scaled_bound[part], alpha, out=alpha)
        # λ = φ(α)/(1 − Φ(α)) = √(2/π)/erfcx(α/√2); erfcx keeps it finite far into either tail.
        mills = np.multiply(alpha, math.sqrt(0.5), out=rho[part])
        erfcx(mills, out=mills)
        np.divide(math.sqrt(2.0 / math.pi), mills, out=mills)
        beyond = np.subtract(mills, alpha, out=alpha)  # λ − α > 0 always
        np.maximum(beyond, 1e-300, out=beyond)
        np.multiply(mills, beyond, out=mills)  # ρ = λ(λ − α) ∈ (0, 1)
        np.minimum(mills, 1.0, out=mills)
        if self.weight is not None:
            mills *= self.weight[part]
        # value = θ + sign·σ/(λ − α), summed as ρ·value
        np.divide(self.sign_sigma[part], beyond, out=value[part])
        value[part] += theta
        value[part] *= mills


# --------------------------------------------------------------------------- 3. lineage
@dataclass(frozen=True)
class LineagePrior:
    prior_mean: float  # μ0
    prior_var: float  # σ0²
    drift_mean: float  # δ̄
    drift_var: float  # τ²


@dataclass(frozen=True)
class LineagePosterior:
    mean: np.ndarray
    var: np.ndarray
    up_precision: np.ndarray  # J_v: evidence at and below v, seen from v
    up_info: np.ndarray  # h_v
    gain: np.ndarray  # 1 / (1 + τ² J_v): how much of a parent's draw a child's draw keeps
    drift_mean: np.ndarray  # δ̄ into each node (per node, so it can vary by category)
    drift_var: np.ndarray  # τ² into each node

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(self.var)


def _at(value: float | np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """A per-node quantity (a scalar, or an array over all nodes) read at ``nodes``: a scalar
    is filled in, not gathered from a million copies of itself."""
    value = np.asarray(value, dtype=np.float64)
    if value.ndim == 0:
        return np.full(nodes.size, float(value))
    return value[nodes]


def lineage_posterior(
    forest: Forest, obs_mean: np.ndarray, obs_precision: np.ndarray, **prior: float | np.ndarray
) -> LineagePosterior:
    """Exact Gaussian posterior of θ on the fork tree (module docstring, 3).

    Per-node arrays are index-aligned with ``forest``; ``obs_precision`` 0 means no evidence.
    ``prior``: ``prior_mean`` and ``prior_var``, read at roots, and ``drift_mean`` and
    ``drift_var``, read at forks (all four keywords); each may be a scalar or per node."""
    return _PosteriorInOrder.solve(forest, obs_mean, obs_precision, **prior).to_nodes()


@dataclass(frozen=True)
class _PosteriorInOrder:
    """``lineage_posterior``'s arrays in the forest's level order, as the solve leaves them.
    Putting an array back in node order is a scatter of a million values at 1M sub-agents; a
    Laplace round needs only the mean, so the other six wait for the last round."""

    order: np.ndarray
    mean: np.ndarray
    precision: np.ndarray
    up_precision: np.ndarray
    up_info: np.ndarray
    step_mean: np.ndarray
    step_var: np.ndarray

    @classmethod
    def solve(
        cls,
        forest: Forest,
        obs_mean: np.ndarray,
        obs_precision: np.ndarray,
        *,
        prior_mean: float | np.ndarray,
        prior_var: float | np.ndarray,
        drift_mean: float | np.ndarray,
        drift_var: float | np.ndarray,
    ) -> _PosteriorInOrder:
        n = forest.n
        order = forest.order
        precision = np.nan_to_num(np.asarray(obs_precision, dtype=np.float64)[order])
        observed = np.where(precision > 0, np.asarray(obs_mean, dtype=np.float64)[order], 0.0)
        step_mean = _at(drift_mean, order)
        step_var = _at(drift_var, order)
        if np.any(step_var[forest.level_ptr[1] :] <= 0):
            raise ValueError("drift_var must be positive")

        up_precision = precision.copy()
        up_info = precision * observed
        message_precision = np.zeros(n)
        message_info = np.zeros(n)
        for d in range(forest.n_levels - 1, 0, -1):
            level = forest.level_slice(d)
            parent_pos, starts = forest.sibling_runs(d)
            shrink = 1.0 / (1.0 + step_var[level] * up_precision[level])
            message_precision[level] = up_precision[level] * shrink
            message_info[level] = (up_info[level] - step_mean[level] * up_precision[level]) * shrink
            up_precision[parent_pos] += np.add.reduceat(message_precision[level], starts)
            up_info[parent_pos] += np.add.reduceat(message_info[level], starts)

        post_precision = np.empty(n)
        post_mean = np.empty(n)
        roots = forest.level_slice(0)
        root_prior_precision = 1.0 / _at(prior_var, order[roots])
        root_prior_mean = _at(prior_mean, order[roots])
        post_precision[roots] = root_prior_precision + up_precision[roots]
        post_mean[roots] = (
            root_prior_precision * root_prior_mean + up_info[roots]
        ) / post_precision[roots]
        for d in range(1, forest.n_levels):
            level = forest.level_slice(d)
            parent_pos = forest.order_parent_pos[level]
            # The parent's belief without this child's own subtree (the "cavity"), then one fork
            # step.
            cavity_precision = np.maximum(
                post_precision[parent_pos] - message_precision[level], 1e-300
            )
            cavity_info = post_precision[parent_pos] * post_mean[parent_pos] - message_info[level]
            outside_var = 1.0 / cavity_precision + step_var[level]
            outside_mean = cavity_info / cavity_precision + step_mean[level]
            post_precision[level] = 1.0 / outside_var + up_precision[level]
            post_mean[level] = (outside_mean / outside_var + up_info[level]) / post_precision[level]
        return cls(order, post_mean, post_precision, up_precision, up_info, step_mean, step_var)

    def _to_nodes(self, in_order: np.ndarray) -> np.ndarray:
        out = np.empty(in_order.size)
        out[self.order] = in_order
        return out

    def node_mean(self) -> np.ndarray:
        """E[θ] per node, in node order."""
        return self._to_nodes(self.mean)

    def to_nodes(self) -> LineagePosterior:
        return LineagePosterior(
            mean=self._to_nodes(self.mean),
            var=self._to_nodes(1.0 / self.precision),
            up_precision=self._to_nodes(self.up_precision),
            up_info=self._to_nodes(self.up_info),
            gain=self._to_nodes(1.0 / (1.0 + self.step_var * self.up_precision)),
            drift_mean=self._to_nodes(self.step_mean),
            drift_var=self._to_nodes(self.step_var),
        )


def _random_effects(values: np.ndarray, variances: np.ndarray) -> tuple[float, float] | None:
    """Paule–Mandel: the mean m and between-item variance t of values_i ~ N(m, t + variances_i),
    t chosen so the weighted chi-square equals its degrees of freedom. None under 3 values."""
    k = values.size
    if k < 3:
        return None

    def weighted(t: float) -> tuple[float, float]:
        # Elementwise sums, not `@`: a BLAS dot spawns threads that stall on a busy machine.
        w = 1.0 / (variances + t)
        mean = float((w * values).sum() / w.sum())
        return mean, float((w * (values - mean) ** 2).sum())

    if weighted(0.0)[1] <= k - 1:
        return weighted(0.0)[0], 0.0
    high = float(np.var(values)) + 1e-12
    while weighted(high)[1] > k - 1:
        high *= 2.0
    # The weighted chi-square falls as t grows: one root in (0, high], found by Brent's method
    # in about ten evaluations (each a pass over all values) instead of sixty bisections.
    t = brentq(lambda t: weighted(t)[1] - (k - 1), 0.0, high, xtol=1e-12, rtol=1e-10)
    return weighted(t)[0], t


def estimate_lineage_prior(
    forest: Forest,
    obs_mean: np.ndarray,
    obs_precision: np.ndarray,
    *,
    min_relative_drift_var: float = 0.05,
    beside: _Beside | None = None,
) -> LineagePrior:
    """μ0, σ0², δ̄, τ² from the evidence (module docstring, 3). With too little evidence the
    roots fall back to N(0, 1) in rating units and the fork step to N(0, σ0²/2). τ² is kept at
    least ``min_relative_drift_var``·σ0² so that a fork is never assumed identical to its parent
    (which would stop the exploration of new forks). ``beside``: where the roots are fitted
    while the caller fits the fork steps."""
    precision = np.nan_to_num(np.asarray(obs_precision, dtype=np.float64))
    obs_mean = np.asarray(obs_mean, dtype=np.float64)
    has = precision > 0
    noise = np.divide(1.0, precision, out=np.full(precision.shape, np.inf), where=has)

    roots = forest.roots[has[forest.roots]]
    later_roots = (beside or _ON_THE_CALLER).run(_random_effects, obs_mean[roots], noise[roots])
    child = np.flatnonzero((forest.parent >= 0) & has)
    child = child[has[forest.parent[child]]]
    parent = forest.parent[child]
    fitted_steps = _random_effects(obs_mean[child] - obs_mean[parent], noise[child] + noise[parent])
    fitted_roots = later_roots.result()
    prior_mean, prior_var = (0.0, 1.0) if fitted_roots is None else fitted_roots
    prior_var = max(prior_var, 1e-3)
    drift_mean, drift_var = (0.0, prior_var / 2) if fitted_steps is None else fitted_steps
    return LineagePrior(
        prior_mean=prior_mean,
        prior_var=prior_var,
        drift_mean=drift_mean,
        drift_var=max(drift_var, min_relative_drift_var * prior_var),
    )


class _Beside:
    """Work run on one thread beside the caller's (numpy lets go of the GIL in its loops, so
    two such threads use two cores), or, when not enabled, at once on the caller's: ``run``
    returns a future either way, so a pass reads the same with one thread or two."""

    def __init__(self, enabled: bool) -> None:
        self._pool = ThreadPoolExecutor(1) if enabled else None

    def run(self, fn, *args, **kwargs) -> Future:
        if self._pool is not None:
            return self._pool.submit(fn, *args, **kwargs)
        done: Future = Future()
        done.set_result(fn(*args, **kwargs))
        return done

    def __enter__(self) -> _Beside:
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


# What a pass given no second thread runs its "beside" work on: the caller's, at once.
_ON_THE_CALLER = _Beside(False)


@dataclass(frozen=True)
class BranchDrift:
    into: np.ndarray  # δ̄ of the fork step into each node (its own step left out; roots: δ̄)
    next_fork: np.ndarray  # δ̄ a new fork of each node would get


def branch_drift(
    forest: Forest,
    obs_mean: np.ndarray,
    obs_precision: np.ndarray,
    prior: LineagePrior,
    *,
    pseudo_steps: float = BRANCH_DRIFT_PSEUDO_STEPS,
    beside: _Beside | None = None,
) -> BranchDrift:
    """The typical fork step of each branch (module docstring, 3b).

    Every fork c with evidence at both ends gives a step d_c = y_c − y_parent, weighted by
    w_c = 1/(τ² + 1/π_c + 1/π_parent). A fork of v is expected to move by the weighted mean of
    the steps of all forks made from v and from its ancestors, shrunk toward the catalog-wide δ̄
    with ``pseudo_steps`` perfectly observed steps:
        δ̄_v = (Σ_{a on v's root path} Σ_{c child of a} w_c d_c + k δ̄/τ²)
               / (Σ_{a on v's root path} Σ_{c child of a} w_c + k/τ²).
    The step into a node leaves that node's own step out, so its evidence is not counted twice.
    ``beside``: where the weights' path sums are made while the caller makes the steps'."""
    precision = np.nan_to_num(np.asarray(obs_precision, dtype=np.float64))
    obs_mean = np.asarray(obs_mean, dtype=np.float64)
    parent = np.maximum(forest.parent, 0)
    has = precision > 0
    both = (forest.parent >= 0) & has & has[parent]
    inv = np.divide(1.0, precision, out=np.zeros_like(precision), where=has)
    w = np.where(both, 1.0 / (prior.drift_var + inv + inv[parent]), 0.0)
    wd = np.where(both, w * (obs_mean - obs_mean[parent]), 0.0)
    later_path_w = (beside or _ON_THE_CALLER).run(_path_sum_of_children, forest, w)
    path_wd = _path_sum_of_children(forest, wd)
    path_w = later_path_w.result()
    k = pseudo_steps / prior.drift_var
    next_fork = (path_wd + k * prior.drift_mean) / (path_w + k)
    into = (path_wd[parent] - wd + k * prior.drift_mean) / (path_w[parent] - w + k)
    into = np.where(forest.parent >= 0, into, prior.drift_mean)
    return BranchDrift(into=into, next_fork=next_fork)


def _path_sum_of_children(forest: Forest, values: np.ndarray) -> np.ndarray:
    """For each node, the sum of ``values`` over the children of every node on its root path."""
    return forest.path_sum(forest.reduce_children(values, "sum", 0.0))


class NodeNoise:
    """Standard normal draws keyed by sub-agent id and draw number, for ``sample_lineage``.

    Draw j of the node with id i is a function of (seed, i, j) alone, never of which other
    nodes are sampled with it: a tree sampled alone gets the very draws it gets inside the
    whole catalog, so a lineage run's branch values equal a full run's, and its draws cost in
    proportion to the nodes it samples. Each pair of draws is the Box–Muller transform of two
    24-bit uniforms cut from one splitmix64 hash of (seed, i, j // 2): a stateless generator
    (splitmix64 over a counter passes BigCrush), in a few vectorized passes."""

    GOLDEN = np.uint64(0x9E3779B97F4A7C15)
    MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
    MIX_2 = np.uint64(0x94D049BB133111EB)
    MAX_PAIRS = 1 << 20  # draw numbers per id; ids below 2^43
    BLOCK = 16_384  # ids per pass of ``_fill``

    def __init__(self, seed: int):
        self.seed = np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF)

    def draws(self, ids: np.ndarray, start: int, count: int) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= 1 << 43):
            raise ValueError("NodeNoise needs ids in [0, 2^43)")
        first_pair, n_pairs = start // 2, (start % 2 + count + 1) // 2
        if first_pair + n_pairs > self.MAX_PAIRS:
            raise ValueError("NodeNoise draws at most 2^21 numbers per id")
        out = np.empty((ids.size, 2 * n_pairs), dtype=np.float32)
        pair_numbers = np.arange(first_pair, first_pair + n_pairs, dtype=np.uint64)
        # A block of ids at a time: its counters and their temporaries stay in the CPU's cache
        # through the dozen passes below, instead of each pass streaming all of them through
        # memory (40% faster at a million ids).
        for begin in range(0, ids.size, self.BLOCK):
            block = slice(begin, begin + self.BLOCK)
            self._fill(ids[block], pair_numbers, out[block])
        offset = start % 2
        return out[:, offset : offset + count]

    def _fill(self, ids: np.ndarray, pair_numbers: np.ndarray, out: np.ndarray) -> None:
        """``out`` (rows = ``ids``): the draws of pairs ``pair_numbers``, two columns a pair."""
        with np.errstate(over="ignore"):
            counter = (ids.astype(np.uint64) * np.uint64(self.MAX_PAIRS))[:, None] + pair_numbers
            # splitmix64 of (counter + seed · golden), in place
            counter += self.seed * self.GOLDEN + self.GOLDEN
            shifted = np.empty_like(counter)
            counter ^= np.right_shift(counter, np.uint64(30), out=shifted)
            counter *= self.MIX_1
            counter ^= np.right_shift(counter, np.uint64(27), out=shifted)
            counter *= self.MIX_2
            counter ^= np.right_shift(counter, np.uint64(31), out=shifted)
        # Two 24-bit uniforms per hash; the first in (0, 1] so its logarithm is finite.
        radius = np.right_shift(counter, np.uint64(40), out=shifted).astype(np.float32)
        radius += np.float32(1.0)
        radius *= np.float32(2.0**-24)
        angle = np.bitwise_and(counter, np.uint64(0xFFFFFF), out=counter).astype(np.float32)
        angle *= np.float32(2 * math.pi * 2.0**-24)
        np.log(radius, out=radius)
        radius *= np.float32(-2.0)
        np.sqrt(radius, out=radius)
        np.multiply(radius, np.cos(angle), out=out[:, 0::2])
        np.sin(angle, out=angle)
        np.multiply(radius, angle, out=out[:, 1::2])


def sample_lineage(
    forest: Forest,
    posterior: LineagePosterior,
    n_samples: int,
    rng: np.random.Generator | NodeNoise,
    *,
    dtype: type = np.float32,
    first_draw: int = 0,
) -> np.ndarray:
    """Joint draws of θ for the whole forest, shape (n, n_samples): roots from their posterior,
    then each child given its parent's draw and its own subtree's evidence,
        θ_c | θ_p ~ N(a_c (θ_p + δ̄) + a_c τ² h_c,  a_c τ²),   a_c = 1 / (1 + τ² J_c),
    which is the exact joint posterior (forward filtering, backward sampling on a tree).
    Rows are node indices. With a ``NodeNoise`` for ``rng``, each node's draws are fixed by
    its id (``first_draw`` numbers the first one)."""
    steps = _DrawSteps.of(forest, posterior, dtype)
    draws = steps.draw_in_order(forest, n_samples, rng, first_draw)
    out = np.empty_like(draws)
    out[forest.order] = draws
    return out


@dataclass(frozen=True)
class _DrawSteps:
    """``sample_lineage``'s per-node coefficients, laid out in ``forest.order`` and in the
    draws' precision (the per-level arithmetic is memory-bound): θ_c = scale·θ_p + shift + sd·z
    with scale = a_c, shift = a_c (δ̄ + τ² h_c), sd = √(a_c τ²)."""

    scale: np.ndarray
    shift: np.ndarray
    sd: np.ndarray
    root_mean: np.ndarray
    root_sd: np.ndarray

    @classmethod
    def of(cls, forest: Forest, posterior: LineagePosterior, dtype: type) -> _DrawSteps:
        order = forest.order
        gain = posterior.gain[order]
        step_var = posterior.drift_var[order]
        shift = gain * (posterior.drift_mean[order] + step_var * posterior.up_info[order])
        root_nodes = order[forest.level_slice(0)]
        return cls(
            scale=gain.astype(dtype),
            shift=shift.astype(dtype),
            sd=np.sqrt(gain * step_var).astype(dtype),
            root_mean=posterior.mean[root_nodes, None],
            root_sd=posterior.sd[root_nodes, None],
        )

    def draw_in_order(
        self,
        forest: Forest,
        n_samples: int,
        rng: np.random.Generator | NodeNoise,
        first_draw: int,
    ) -> np.ndarray:
        keyed = None
        if isinstance(rng, NodeNoise):
            keyed = rng.draws(forest.ids[forest.order], first_draw, n_samples)

        def standard_normal(level: slice, rows: int) -> np.ndarray:
            if keyed is None:
                return rng.standard_normal((rows, n_samples), dtype=np.float32)
            return keyed[level]

        draws = np.empty((forest.n, n_samples), dtype=self.scale.dtype)
        roots = forest.level_slice(0)
        draws[roots] = self.root_mean + self.root_sd * standard_normal(roots, self.root_mean.size)
        for d in range(1, forest.n_levels):
            level = forest.level_slice(d)
            block = draws[level]  # a view: each step writes into the draws themselves
            np.multiply(draws[forest.order_parent_pos[level]], self.scale[level, None], out=block)
            block += self.shift[level, None]
            noise = standard_normal(level, block.shape[0])
            noise *= self.sd[level, None]
            block += noise
        return draws


def branch_value(
    forest: Forest,
    posterior: LineagePosterior,
    rng: np.random.Generator | NodeNoise,
    *,
    n_samples: int = BRANCH_SAMPLES,
    chunk: int = 8,
    threads: int = 1,
) -> np.ndarray:
    """E[max of θ over each node's subtree] (module docstring, 4), ``chunk`` draws at a time so
    a million nodes stay within tens of megabytes per chunk. With keyed draws (``NodeNoise``)
    the chunks do not depend on each other and ``threads`` of them run at once (numpy lets go
    of the GIL in its loops): the result is the same to the bit, each chunk's share added in
    chunk order. Eight draws a chunk share two threads more evenly than sixteen while other
    scores are made beside them (sixteen took 10% longer at a million). A ``Generator`` draws
    in sequence, one chunk after the other."""
    steps = _DrawSteps.of(forest, posterior, np.float32)

    def excess_of(first: int) -> np.ndarray:
        """Σ over this chunk's draws of (subtree max − θ), per node in ``order``."""
        draws = steps.draw_in_order(forest, min(chunk, n_samples - first), rng, first)
        # The subtree maxima overwrite the draws; each parent's excess is taken as its row
        # changes (a leaf's is 0, and most nodes are leaves).
        excess = np.zeros(forest.n)
        forest.combine_children_into_parents(draws, np.maximum, gain=excess)
        return excess

    firsts = range(0, n_samples, chunk)
    excess = np.zeros(forest.n)
    if threads > 1 and isinstance(rng, NodeNoise):
        with ThreadPoolExecutor(min(threads, len(firsts))) as pool:
            shares = list(pool.map(excess_of, firsts))
    else:
        shares = map(excess_of, firsts)  # lazily: one chunk's draws in memory at a time
    for share in shares:
        excess += share
    out = np.empty(forest.n)
    out[forest.order] = excess / n_samples
    return posterior.mean + out


def ancestor_covariance_gain(forest: Forest, posterior: LineagePosterior) -> np.ndarray:
    """log of the product of per-step gains from the root down to each node; the covariance of an
    ancestor v and a descendant d is exp(L[d] − L[v]) · Var(θ_v)."""
    step_gain = np.where(forest.parent >= 0, posterior.gain, 1.0)
    return forest.path_sum(np.log(step_gain))


def best_descendant(
    forest: Forest,
    posterior: LineagePosterior,
    *,
    confidence: float = BEST_DESCENDANT_CONFIDENCE,
    log_gain_path: np.ndarray | None = None,
    eligible: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """For each node, the descendant with the highest display score if P(θ_d > θ_v) ≥
    ``confidence`` (else -1), and that probability (0 where there is no descendant).

    Only ``eligible`` nodes (all by default) can be named: a private or withdrawn fork is never
    the branch a public page points to."""
    display = posterior.mean - LOWER_BOUND_Z * posterior.sd
    if eligible is not None:
        display = np.where(eligible, display, -np.inf)
    # Argmax by unique ranks, so ties (identical unrated siblings) resolve inside the subtree.
    by_display = np.argsort(display, kind="stable")
    rank_of = np.empty(forest.n)
    rank_of[by_display] = np.arange(forest.n)
    subtree_best = forest.reduce_up(rank_of, "max")
    below_best = forest.reduce_children(subtree_best, "max", -1.0)
    has = below_best >= 0
    candidate = np.where(has, by_display[np.maximum(below_best, 0).astype(np.int64)], -1)
    if eligible is not None:
        has &= eligible[np.maximum(candidate, 0)]
        candidate = np.where(has, candidate, -1)
    if log_gain_path is None:
        log_gain_path = ancestor_covariance_gain(forest, posterior)
    safe = np.maximum(candidate, 0)
    covariance = np.exp(log_gain_path[safe] - log_gain_path) * posterior.var
    diff_var = np.maximum(posterior.var[safe] + posterior.var - 2.0 * covariance, 1e-300)
    prob = ndtr((posterior.mean[safe] - posterior.mean) / np.sqrt(diff_var))
    prob = np.where(has, prob, 0.0)
    return np.where(has & (prob >= confidence), candidate, -1), prob


def fork_gain(
    forest: Forest,
    posterior_mean: np.ndarray,
    drift_mean: float | np.ndarray,
    *,
    pseudo_children: float = FORK_GAIN_PSEUDO_CHILDREN,
) -> np.ndarray:
    """(Σ_children E[θ_c − θ_v] + κ δ̄_v) / (children + κ) (module docstring, 4); ``drift_mean``
    is one δ̄ or the branch drift of each node (3b)."""
    is_fork = forest.parent >= 0
    step = np.where(is_fork, posterior_mean - posterior_mean[np.maximum(forest.parent, 0)], 0.0)
    total = forest.reduce_children(step, "sum", 0.0)
    return (total + pseudo_children * drift_mean) / (forest.n_children + pseudo_children)


def rising_score(forest: Forest, posterior: LineagePosterior, recent: np.ndarray) -> np.ndarray:
    """E[θ_v − θ_parent] / sd(θ_v − θ_parent) for recent forks, −inf elsewhere."""
    is_fork = forest.parent >= 0
    parent = np.maximum(forest.parent, 0)
    covariance = posterior.gain * posterior.var[parent]
    diff_var = np.maximum(posterior.var + posterior.var[parent] - 2.0 * covariance, 1e-300)
    z = (posterior.mean - posterior.mean[parent]) / np.sqrt(diff_var)
    return np.where(is_fork & recent, z, -np.inf)


# --------------------------------------------------------------------------- 5. usage
@dataclass(frozen=True)
class Usage:
    active_users: np.ndarray  # Σ distinct users 2^(−days since last use / half-life)
    retention: np.ndarray  # shrunk share of users back ≥ retention_days after first use
    score: np.ndarray  # ln(1 + active users × retention)
    recent_users: np.ndarray  # distinct users, last 7 days
    weekly_baseline: np.ndarray  # average weekly distinct users over the 28 days before
    trending: np.ndarray  # ln((recent + k) / (baseline + k))
    retention_rate: float = 0.0  # r̄, the catalog-wide rate the retentions are shrunk toward


def usage_stats(
    item_idx: np.ndarray,
    user_idx: np.ndarray,
    age_days: np.ndarray,
    n_items: int,
    *,
    half_life: float = HALF_LIFE_DAYS,
    retention_days: float = 7.0,
    retention_prior: float = 10.0,
    trend_prior: float = 5.0,
    retention_rate: float | None = None,
) -> Usage:
    """Usage and trending from raw usage events (one row per use; module docstring, 5). Repeated
    events of one user count once: everything is per distinct (sub-agent, user). The
    catalog-wide retention rate r̄ is measured from these events unless ``retention_rate``
    gives it (an incremental run reads only the changed trees' events)."""
    item_idx = np.asarray(item_idx, dtype=np.int64)
    user_idx = np.asarray(user_idx, dtype=np.int64)
    age_days = np.asarray(age_days, dtype=np.float64)
    if item_idx.size == 0:  # nobody has used anything yet
        zeros = np.zeros(n_items)
        trend = np.zeros(n_items)  # ln(k / k)
        rate = retention_rate or 0.0
        return Usage(
            zeros, np.full(n_items, rate), zeros.copy(), zeros.copy(), zeros.copy(), trend, rate
        )
    n_user_slots = int(user_idx.max()) + 1
    # One sort serves both questions: events ordered by (sub-agent, user, week bucket), buckets
    # 0..4 the last five weeks and 5 anything older. Runs of equal (sub-agent, user) give each
    # user's first and last use; runs of equal (sub-agent, user, bucket) give distinct weekly users.
    key_sorted, age_sorted = _sorted_usage_keys(item_idx, user_idx, age_days, n_user_slots)
    pair_sorted = key_sorted >> 3
    pair_start = np.flatnonzero(np.r_[True, pair_sorted[1:] != pair_sorted[:-1]])
    pair_item = pair_sorted[pair_start] // n_user_slots
    # Ages ascend within each pair: its first event is the youngest, its last the oldest.
    since_last = age_sorted[pair_start]
    since_first = age_sorted[np.r_[pair_start[1:], pair_sorted.size] - 1]

    active = np.bincount(pair_item, 0.5 ** (since_last / half_life), minlength=n_items)
    in_cohort = since_first >= retention_days
    came_back = since_last <= since_first - retention_days
    cohort_weight = np.where(in_cohort, 0.5 ** (since_first / half_life), 0.0)
    cohort = np.bincount(pair_item, cohort_weight, minlength=n_items)
    retained = np.bincount(pair_item, cohort_weight * came_back, minlength=n_items)
    if retention_rate is not None:
        overall = retention_rate
    else:
        overall = float(retained.sum() / cohort.sum()) if cohort.sum() > 0 else 0.0
    retention = (retained + retention_prior * overall) / (cohort + retention_prior)

    triple_start = np.flatnonzero(np.r_[True, key_sorted[1:] != key_sorted[:-1]])
    triple_week = key_sorted[triple_start] & 7
    triple_item = pair_sorted[triple_start] // n_user_slots
    recent = np.bincount(triple_item[triple_week == 0], minlength=n_items).astype(np.float64)
    earlier_weeks = (triple_week >= 1) & (triple_week <= 4)
    earlier = np.bincount(triple_item[earlier_weeks], minlength=n_items) / 4.0
    return Usage(
        active_users=active,
        retention=retention,
        score=np.log1p(active * retention),
        recent_users=recent,
        weekly_baseline=earlier,
        trending=np.log((recent + trend_prior) / (earlier + trend_prior)),
        retention_rate=overall,
    )


def _sorted_usage_keys(
    item_idx: np.ndarray, user_idx: np.ndarray, age_days: np.ndarray, n_user_slots: int
) -> tuple[np.ndarray, np.ndarray]:
    """The events' keys (sub-agent, user, week bucket) = (item · U + user) · 8 + bucket in
    sorted order, and their ages in the same order (ascending among equal keys).

    Ages in whole days under 256 (what a run reads: one row per day of use, 180 days back)
    ride in the low byte of the key itself, so one ``np.sort`` orders keys and ages together;
    an ``argsort`` and two gathers by it cost about three times as much on millions of rows."""
    n_items = int(item_idx.max()) + 1
    whole_days = (
        n_items * n_user_slots < 1 << 54
        and age_days.min() >= 0
        and age_days.max() < 256
        and np.array_equal(age_days, np.floor(age_days))
    )
    if whole_days:
        packed = (item_idx * n_user_slots + user_idx) << 8
        packed |= age_days.astype(np.int64)
        packed.sort()
        age_byte = packed & 255
        key_sorted = ((packed >> 8) << 3) | np.minimum(age_byte // 7, 5)
        return key_sorted, age_byte.astype(np.float64)
    bucket = np.minimum(np.floor(np.maximum(age_days, 0.0) / 7.0), 5).astype(np.int64)
    key = (item_idx * n_user_slots + user_idx) * 8 + bucket
    by_key = np.lexsort((age_days, key))
    return key[by_key], age_days[by_key]


# --------------------------------------------------------------------------- everything at once
@dataclass(frozen=True)
class Ratings:
    user_idx: np.ndarray
    item_idx: np.ndarray
    value: np.ndarray  # stars 1..5 or thumbs 0/1
    is_thumb: np.ndarray | None = None
    age_days: np.ndarray | None = None  # for the evidence half-life; None = all fresh


@dataclass(frozen=True)
class GlobalFit:
    """What a ranking run learns from the whole catalog at once (module docstring, 1, 2, 3):
    the rating scale of each kind, μ, every rater's b_u, σ², and the lineage prior of each
    reading of the evidence (the first, then one per censored round). Given these, every
    other figure of a sub-agent is computed from its own tree alone, so a run that recomputes
    only the trees that changed (``rank(..., fit=...)``) gives them exactly the numbers a whole
    run with this fit gives them."""

    scale_centre: tuple[float, float]  # stars, thumbs
    scale_spread: tuple[float, float]
    global_mean: float
    noise_var: float
    user_offset: np.ndarray  # b_u by rating user index
    priors: tuple[LineagePrior, ...]

    @property
    def scale(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.scale_centre), np.asarray(self.scale_spread)


@dataclass(frozen=True)
class Belief:
    """The belief in θ once the evidence is read (module docstring, 2, 2b, 3)."""

    posterior: LineagePosterior  # of the trees read (``part``)
    drift: BranchDrift
    prior: LineagePrior  # the last reading's
    priors: tuple[LineagePrior, ...]  # one per reading: the first, then each censored round


def lineage_belief(
    forest: Forest,
    baseline: Baseline,
    *,
    reading: CensoredReading | Future | None = None,
    prior: LineagePrior | None = None,
    pinned_priors: Sequence[LineagePrior] | None = None,
    part: Forest | None = None,
    nodes: np.ndarray | None = None,
    start_at: np.ndarray | None = None,
    drift_pseudo_steps: float | None = BRANCH_DRIFT_PSEUDO_STEPS,
    beside: _Beside | None = None,
) -> Belief:
    """θ's posterior on the fork forest from the debiased evidence: the ranking's model, which
    the reward export reads too (``feedback.rewards``), so a sub-agent's rank and a version's
    reward are one number made one way.

    ``reading``: the end-of-scale ratings as bounds (2b; a ``CensoredReading``, or a future of
    one being made beside), re-read at the current belief ``CENSORED_ROUNDS`` times; None reads
    every rating as its value. ``prior``: kept for every reading; None: estimated from each
    reading's evidence, or, with ``pinned_priors`` (a lineage update following an earlier
    run's fit), taken from those in order. ``part``/``nodes``: the trees whose belief is made
    (the whole forest by default); the others are read at ``start_at`` (their last belief).
    ``drift_pseudo_steps``: the branch drift's shrinkage (3b; None: one catalog-wide δ̄).
    ``beside``: a second thread for the independent halves of each reading's work."""
    if part is None or nodes is None:
        part, nodes = forest, np.arange(forest.n)
    pinned = list(pinned_priors) if pinned_priors is not None else None
    estimated = prior is None and pinned is None

    def next_prior(evidence, precision, current):
        if pinned:
            return pinned.pop(0)
        if estimated:
            return estimate_lineage_prior(forest, evidence, precision, beside=beside)
        return current

    def belief_given(evidence, precision, prior) -> tuple[BranchDrift, _PosteriorInOrder]:
        if drift_pseudo_steps is None:
            flat = np.full(forest.n, prior.drift_mean)
            drift = BranchDrift(into=flat, next_fork=flat)
        else:
            drift = branch_drift(
                forest,
                evidence,
                precision,
                prior,
                pseudo_steps=drift_pseudo_steps,
                beside=beside,
            )
        posterior = _PosteriorInOrder.solve(
            part,
            evidence[nodes],
            precision[nodes],
            prior_mean=prior.prior_mean,
            prior_var=prior.prior_var,
            drift_mean=drift.into[nodes],
            drift_var=prior.drift_var,
        )
        return drift, posterior

    evidence, precision = baseline.item_evidence, baseline.item_precision
    current = next_prior(evidence, precision, prior)
    priors = [current]
    drift, posterior = belief_given(evidence, precision, current)
    if reading is not None:
        if isinstance(reading, Future):
            reading = reading.result()
        # Laplace iterations (2b): re-read the end-of-scale ratings at the current belief, then
        # update the belief. Trees not recomputed keep their previous belief as the point.
        at = np.array(baseline.item_evidence)
        if start_at is not None:
            known = np.isfinite(start_at[: forest.n])
            at[: known.size][known] = start_at[: forest.n][known]
        for _ in range(CENSORED_ROUNDS):
            at[nodes] = posterior.node_mean()
            evidence, precision = reading.evidence(at, beside)
            # The prior follows the reading: values pressed against the top of the scale
            # understate both how far forks move and how much.
            current = next_prior(evidence, precision, current)
            priors.append(current)
            drift, posterior = belief_given(evidence, precision, current)
    return Belief(posterior=posterior.to_nodes(), drift=drift, prior=current, priors=tuple(priors))


@dataclass(frozen=True)
class Scores:
    mean: np.ndarray  # E[θ]
    sd: np.ndarray  # sd(θ)
    display: np.ndarray  # E[θ] − 1.64 sd(θ): the "top" order
    branch_value: np.ndarray  # E[max θ over the subtree]
    best_descendant: np.ndarray  # node index or -1
    p_descendant_better: np.ndarray  # P(θ_best_descendant > θ_v)
    fork_gain: np.ndarray
    rising: np.ndarray  # −inf for roots and forks that are not recent
    young: np.ndarray  # own evidence worth < 10 typical ratings: the exploration pool
    rating_count: np.ndarray  # ratings received (unweighted)
    usage: Usage | None
    baseline: Baseline  # kept for warm starts
    prior: LineagePrior
    posterior: LineagePosterior
    fit: GlobalFit | None = None  # the global part of the run (None after a ``roots`` update)


def rank(
    forest: Forest,
    ratings: Ratings,
    *,
    n_users: int,
    usage: Usage | None = None,
    item_age_days: np.ndarray | None = None,
    prior: LineagePrior | None = None,
    previous: Scores | None = None,
    roots: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
    n_samples: int = BRANCH_SAMPLES,
    epochs: int | None = None,
    half_life: float = HALF_LIFE_DAYS,
    warm_user_offset: np.ndarray | None = None,
    eligible: np.ndarray | None = None,
    censored: bool = True,
    drift_pseudo_steps: float | None = BRANCH_DRIFT_PSEUDO_STEPS,
    fit: GlobalFit | None = None,
    noise_seed: int | None = None,
    threads: int = 1,
) -> Scores:
    """All scores of the module docstring in one pass.

    Incremental use: pass the ``previous`` Scores to warm-start the rater offsets (3 epochs
    instead of 10) and, with ``roots``, recompute the lineage-based scores of those trees only
    (the ones that got new ratings or forks); other trees keep their previous values. The rater
    fit itself is always global: one user's leniency is learned across all trees.
    ``warm_user_offset`` (b_u stored by an earlier run, 0 for new raters) warm-starts the rater
    fit the same way when no ``previous`` Scores are in memory. ``eligible`` limits which nodes
    can be named a best descendant. ``censored`` reads end-of-scale ratings as bounds (2b);
    ``drift_pseudo_steps`` (None: one catalog-wide δ̄) sets the branch drift's shrinkage (3b).

    Lineage updates: with ``fit`` (a ``GlobalFit`` of an earlier run, ``user_idx`` indexing its
    ``user_offset``) nothing global is fitted, and the scores of ``forest`` (any set of whole
    trees) are those a run over the whole catalog with that fit gives them. ``noise_seed``
    keys the branch values' draws by sub-agent id (``NodeNoise``), which such updates need;
    with it, ``threads`` chunks of those draws run at once (``branch_value``). ``threads`` > 1
    also reads the censored ratings' constants beside the first belief, and makes the best
    descendants, fork gains and rising scores beside the branch values: the same results."""
    rng = np.random.default_rng(0) if rng is None else rng
    draw_source = rng if noise_seed is None else NodeNoise(noise_seed)
    weight = None if ratings.age_days is None else 0.5 ** (np.asarray(ratings.age_days) / half_life)
    if fit is None:
        levels = rating_levels(ratings.value, ratings.is_thumb)
        scale = scale_of_kind(levels)
        warm = previous.baseline.user_offset if previous is not None else warm_user_offset
        baseline = debias(
            ratings.user_idx,
            ratings.item_idx,
            levels.per_code(common_scale_table(levels, scale)),
            n_users,
            forest.n,
            weight=weight,
            epochs=epochs if epochs is not None else (3 if warm is not None else 10),
            init_user_offset=warm,
        )
    else:
        scale = fit.scale
        baseline = baseline_given(
            ratings.user_idx,
            ratings.item_idx,
            to_common_scale(ratings.value, ratings.is_thumb, scale),
            forest.n,
            global_mean=fit.global_mean,
            user_offset=fit.user_offset,
            noise_var=fit.noise_var,
            weight=weight,
        )
    rating_count = np.bincount(np.asarray(ratings.item_idx), minlength=forest.n).astype(float)
    young = baseline.item_precision < YOUNG_RATINGS / baseline.noise_var
    # A fork is "recent" while it is new or while its evidence is still young: a branch forked
    # months ago that only now finds its users is rising too.
    recent = young | (
        np.asarray(item_age_days) < RECENT_AGE_DAYS
        if item_age_days is not None
        else rating_count < YOUNG_RATINGS
    )

    if roots is None or previous is None:
        part, nodes = forest, np.arange(forest.n)
    else:
        part, nodes = forest.subforest(np.asarray(roots))

    # A lineage update reads the evidence as many times as the fit it follows did, even for
    # trees without ratings: their beliefs moved with each round's prior in that run too.
    rounds_to_follow = fit is not None and len(fit.priors) > 1
    read_censored = censored and (ratings.item_idx.size or rounds_to_follow)
    with _Beside(threads > 1) as beside:
        # Made beside the first belief, which does not need it.
        reading = (
            beside.run(
                CensoredReading,
                baseline,
                ratings.user_idx,
                ratings.item_idx,
                *censoring_bounds(ratings.value, ratings.is_thumb, scale),
                weight,
            )
            if read_censored
            else None
        )
        belief = lineage_belief(
            forest,
            baseline,
            reading=reading,
            prior=prior,
            pinned_priors=fit.priors if fit is not None else None,
            part=part,
            nodes=nodes,
            start_at=previous.mean if previous is not None else None,
            drift_pseudo_steps=drift_pseudo_steps,
            beside=beside,
        )
        posterior, drift = belief.posterior, belief.drift
        prior, priors = belief.prior, belief.priors
        sd = posterior.sd
        # The scores below need only the final belief: the cheap ones are made beside the
        # branch values' draws.
        later_best = beside.run(
            best_descendant,
            part,
            posterior,
            eligible=None if eligible is None else np.asarray(eligible)[nodes],
        )
        later_gain = beside.run(fork_gain, part, posterior.mean, drift.next_fork[nodes])
        later_rising = beside.run(rising_score, part, posterior, recent[nodes])
        value = branch_value(part, posterior, draw_source, n_samples=n_samples, threads=threads)
        best, prob = later_best.result()
        fresh = {
            "mean": posterior.mean,
            "sd": sd,
            "display": posterior.mean - LOWER_BOUND_Z * sd,
            "branch_value": value,
            "best_descendant": np.where(best >= 0, nodes[np.maximum(best, 0)], -1),
            "p_descendant_better": prob,
            "fork_gain": later_gain.result(),
            "rising": later_rising.result(),
        }
    if part is forest:
        return Scores(
            **fresh,
            young=young,
            rating_count=rating_count,
            usage=usage,
            baseline=baseline,
            prior=prior,
            posterior=posterior,
            fit=GlobalFit(
                scale_centre=tuple(float(c) for c in scale[0]),
                scale_spread=tuple(float(c) for c in scale[1]),
                global_mean=float(baseline.global_mean),
                noise_var=float(baseline.noise_var),
                user_offset=baseline.user_offset,
                priors=tuple(priors),
            ),
        )
    # Nodes added since ``previous`` must belong to the recomputed trees; until then they hold
    # NaN (or -1), which no ranking list picks up as a top entry.
    merged = {
        name: _overwrite(getattr(previous, name), nodes, values, forest.n)
        for name, values in fresh.items()
    }
    merged_posterior = LineagePosterior(
        **{
            name: _overwrite(getattr(previous.posterior, name), nodes, values, forest.n)
            for name, values in vars(posterior).items()
        }
    )
    return replace(
        previous,
        **merged,
        young=young,
        rating_count=rating_count,
        usage=usage if usage is not None else previous.usage,
        baseline=baseline,
        prior=prior,
        posterior=merged_posterior,
        fit=None,
    )


def _overwrite(old: np.ndarray, nodes: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    fill = -1 if old.dtype.kind in "iu" else np.nan
    out = np.full(n, fill, dtype=old.dtype)
    out[: min(n, old.size)] = old[:n]
    out[nodes] = values
    return out


def top(scores: Scores, k: int) -> np.ndarray:
    """The k best by display score."""
    return _best_k(scores.display, k)


def rising(scores: Scores, k: int) -> np.ndarray:
    """The k recent forks most surely better than their parents."""
    candidates = _best_k(scores.rising, k)
    return candidates[np.isfinite(scores.rising[candidates])]


def trending(scores: Scores, k: int) -> np.ndarray:
    """The k sub-agents whose recent distinct users most exceed their own past rate."""
    if scores.usage is None:
        return np.zeros(0, dtype=np.int64)
    return _best_k(scores.usage.trending, k)


def _best_k(values: np.ndarray, k: int) -> np.ndarray:
    k = min(k, values.size)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    head = np.argpartition(-values, k - 1)[:k]
    return head[np.argsort(-values[head], kind="stable")]
