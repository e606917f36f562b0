r"""Personal scores: one user's predicted rating of a sub-agent.

The ranking (evolution.ranking) predicts a rating as μ + b_u + θ_v: the catalog's mean, the
rater's leniency and the sub-agent's quality, the same order for everyone up to the rater's
offset. People also differ in taste: one likes terse reviewers, another thorough ones. That is
a low-rank user × sub-agent term on what the ranking leaves over,

    r̂_uv = μ + b_u + θ_v + p_u · q_v,        p_u, q_v ∈ R^k (k ~ 4–8),

fitted to the residuals e_uv = z_uv − μ − b_u − θ_v (z on the common scale) by minimizing

    Σ_(u,v) (e_uv − p_u · q_v)² + λ_u Σ_u |p_u|²
                                + λ_r Σ_roots |q_v|² + λ_f Σ_forks |q_v − q_parent|²

by alternating least squares. μ, b_u and θ are the ranking's and stay as they are, so the
personal score is the non-personal one plus a taste correction.

* Users: p_u = (Σ_v q_v q_vᵀ + λ_u I)⁻¹ Σ_v e_uv q_v, one k×k solve per user, all users in one
  batched call. A user with few ratings is shrunk toward p = 0, and one with none gets exactly
  the non-personal score.
* Sub-agents, the lineage prior: a fork tastes like what it was forked from, so its factor is
  shrunk toward its parent's rather than toward 0 (roots toward 0). Given the users' factors
  this is a Gaussian model on the fork tree with a k-vector per node, solved exactly by the
  two passes of the ranking's lineage posterior with k×k matrices in place of numbers:
  upward, each node's precision J_v = A_v + Σ_c M_c and information h_v = b_v + Σ_c g_c
  (A_v = Σ_u p_u p_uᵀ, b_v = Σ_u e_uv p_u over its own ratings), sending its parent
  M_v = λ_f I − λ_f² (J_v + λ_f I)⁻¹ and g_v = λ_f (J_v + λ_f I)⁻¹ h_v; downward,
  q_root = (J_root + λ_r I)⁻¹ h_root and q_v = (J_v + λ_f I)⁻¹ (h_v + λ_f q_parent). A fork
  without ratings below it gets its parent's factor exactly; a well-rated fork its own.

λ_u = λ_r = λ and λ_f = 2λ, with λ chosen on a tenth of the ratings set aside, or no taste at
all when none beats no taste there (``fit_taste``).

Cost per sweep: two sparse products of the rating matrix with k(k+1)/2 columns (the Gram
matrices) and two with k columns, one batched k×k solve per user and two per sub-agent, and
one numpy call per fork-tree level and pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from evolution.tree import Forest

TASTE_RANK = 6
REG_PATH = (2.0, 5.0, 10.0, 20.0, 50.0, 100.0)  # λ tried when none is given, weakest first
FORK_RATIO = 2.0  # λ_f / λ: a fork is held closer to its parent than a root to 0
VALIDATION_SHARE = 0.1
MIN_VALIDATION = 20  # with fewer ratings to check a taste on, none is fitted
PATH_SWEEPS = 5
SIGNIFICANT_Z = 2.0
MIN_RELATIVE_GAIN = 0.002  # of the residuals' validation RMSE
SWEEPS = 15
TOLERANCE = 1e-4


@dataclass(frozen=True)
class NonPersonal:
    """The ranking's prediction μ + b_u + θ_v, on the common scale."""

    global_mean: float  # μ
    user_offset: np.ndarray  # b_u per user index
    item_mean: np.ndarray  # θ_v per sub-agent index (Scores.mean, or posterior.mean)

    def predict(self, user_idx: np.ndarray, item_idx: np.ndarray) -> np.ndarray:
        return self.global_mean + self.user_offset[user_idx] + self.item_mean[item_idx]


@dataclass(frozen=True)
class Taste:
    user_factors: np.ndarray  # (n_users, k) p_u; 0 for a user without ratings
    item_factors: np.ndarray  # (n_items, k) q_v
    reg: float  # λ_u = λ_r; inf when no taste beat none on the validation ratings
    reg_fork: float  # λ_f
    sweeps: int  # of the final fit (fewer than asked when the factors stopped moving)
    # When λ was chosen: (λ, validation RMSE of the residuals) along the path, λ = inf for
    # no taste at all.
    validation: tuple[tuple[float, float], ...] = ()

    @property
    def rank(self) -> int:
        return int(self.item_factors.shape[1])


def fit_taste(
    user_idx: np.ndarray,
    item_idx: np.ndarray,
    value: np.ndarray,
    forest: Forest,
    base: NonPersonal,
    *,
    rank: int = TASTE_RANK,
    reg: float | None = None,
    fork_ratio: float = FORK_RATIO,
    sweeps: int = SWEEPS,
    tolerance: float = TOLERANCE,
    seed: int = 0,
    start: np.ndarray | None = None,
) -> Taste:
    """The taste factors of the module docstring from ratings ``value`` (common scale) of
    sub-agent ``item_idx`` (indices of ``forest``) by user ``user_idx`` (indices of
    ``base.user_offset``), with λ_u = λ_r = ``reg`` and λ_f = ``fork_ratio`` · ``reg``.

    ``reg`` None chooses λ: how much taste there is to find differs from one catalog to the
    next (none at all in some), and a λ that suits one overfits noise or misses the taste in
    another. A random tenth of the ratings is set aside, factors are fitted on the rest along
    ``REG_PATH`` (each λ warm-started from the weaker one before it, ``PATH_SWEEPS`` sweeps:
    weakest first, because factors that a strong λ shrank to nearly 0 regrow slowly, p = q = 0
    being a fixed point of the alternation: a path from the strong end would miss taste),
    and the λ whose factors predict the set-aside residuals best is refitted on every rating,
    from those factors and with as many sweeps, so the model kept is the one that was checked;
    when none beats predicting no taste at all, every factor is 0 and personal scores are the
    non-personal ones. With ``reg`` given, the fit starts from small random factors and stops
    after ``sweeps`` sweeps, or once no rating's prediction moved by more than ``tolerance``
    (common-scale units) in a sweep.

    ``start``: sub-agent factors (n_items, rank) to begin from instead, e.g. the last fit's on
    a catalog that has changed a little since: a few sweeps from there reach what many from
    random factors do. Its rows of zeros (sub-agents the last fit did not know, or said
    nothing about) begin from small random factors like the rest."""
    n_users, n_items = len(base.user_offset), forest.n
    user_idx, item_idx, value = _checked(user_idx, item_idx, value, n_users, n_items)
    if len(base.item_mean) != n_items:
        raise ValueError("base.item_mean must have one entry per forest node")
    if not np.all(np.isfinite(base.user_offset)) or not np.all(np.isfinite(base.item_mean)):
        raise ValueError("the non-personal model holds a non-finite value")
    if rank < 1 or fork_ratio <= 0 or (reg is not None and not reg > 0):
        raise ValueError("rank must be at least 1 and every regularization positive")
    residual = value - base.predict(user_idx, item_idx)
    rng = np.random.default_rng(seed)
    item_factors = rng.normal(0.0, 0.1, (n_items, rank))
    if start is not None:
        start = np.asarray(start, dtype=np.float64)
        if start.shape != item_factors.shape or not np.all(np.isfinite(start)):
            raise ValueError("start must hold finite factors, one row of rank per sub-agent")
        known = np.any(start != 0.0, axis=1)
        item_factors[known] = start[known]
    validation: tuple[tuple[float, float], ...] = ()
    if reg is None:
        reg, item_factors, validation = _choose_reg(
            user_idx, item_idx, residual, forest, n_users, item_factors, fork_ratio, rng
        )
    if not math.isfinite(reg):
        return Taste(
            user_factors=np.zeros((n_users, rank)),
            item_factors=np.zeros((n_items, rank)),
            reg=reg,
            reg_fork=reg,
            sweeps=0,
            validation=validation,
        )
    fit = _Alternation(user_idx, item_idx, residual, forest, n_users)
    user_factors, item_factors, ran = fit.run(
        item_factors, reg, fork_ratio * reg, PATH_SWEEPS if validation else sweeps, tolerance
    )
    return Taste(
        user_factors=user_factors,
        item_factors=item_factors,
        reg=float(reg),
        reg_fork=float(fork_ratio * reg),
        sweeps=ran,
        validation=validation,
    )


class _Alternation:
    """Alternating least squares on one set of residuals: the rating matrices are built once
    and every run (each λ of the path, the final fit) reuses them."""

    def __init__(self, user_idx, item_idx, residual, forest: Forest, n_users: int) -> None:
        self.user_idx, self.item_idx, self.forest = user_idx, item_idx, forest
        self.by_user = _rows(user_idx, item_idx, residual, n_users, forest.n)
        self.by_item = _rows(item_idx, user_idx, residual, forest.n, n_users)
        self.rated_by, self.rated = _ones_like(self.by_user), _ones_like(self.by_item)

    def run(self, item_factors, reg: float, reg_fork: float, sweeps: int, tolerance: float):
        user_factors = np.zeros((self.by_user.shape[0], item_factors.shape[1]))
        previous = np.zeros(self.user_idx.size)
        ran = 0
        while ran < sweeps:
            ran += 1
            user_factors = _ridge(self.rated_by, self.by_user, item_factors, reg)
            item_factors = _tree_ridge(
                self.forest, self.rated, self.by_item, user_factors, reg, reg_fork
            )
            if tolerance <= 0:  # a fixed number of sweeps: nothing to check (a tenth of one)
                continue
            fitted = _taste_term(user_factors, item_factors, self.user_idx, self.item_idx)
            moved = float(np.max(np.abs(fitted - previous))) if fitted.size else 0.0
            previous = fitted
            if moved <= tolerance:
                break
        return user_factors, item_factors, ran


def _choose_reg(user_idx, item_idx, residual, forest, n_users, item_factors, fork_ratio, rng):
    """λ by validation on a random tenth of the ratings (``fit_taste``); inf for no taste.
    The best λ must beat no taste by more than chance: its mean gain in squared error per
    set-aside rating at least ``SIGNIFICANT_Z`` standard errors (paired, rating by rating),
    and by more than a trifle: its RMSE ``MIN_RELATIVE_GAIN`` below no taste's (factors near
    collapse gain on a handful of ratings, with a tiny spread, and the refit on every rating
    can leave that knife edge either way). Otherwise noise that happens to favour a weak taste
    would personalize every score."""
    checked = rng.random(residual.size) < VALIDATION_SHARE
    no_taste_error = residual[checked]
    path = [(math.inf, float(np.sqrt(np.mean(no_taste_error**2))) if checked.any() else 0.0)]
    if checked.sum() < MIN_VALIDATION:
        return math.inf, item_factors, tuple(path)
    kept = ~checked
    fit = _Alternation(user_idx[kept], item_idx[kept], residual[kept], forest, n_users)
    best_reg, best_gain, best_factors = math.inf, -math.inf, item_factors
    significant = False
    for reg in REG_PATH:
        user_factors, item_factors, _ = fit.run(
            item_factors, reg, fork_ratio * reg, PATH_SWEEPS, 0.0
        )
        error = no_taste_error - _taste_term(
            user_factors, item_factors, user_idx[checked], item_idx[checked]
        )
        path.append((reg, float(np.sqrt(np.mean(error**2)))))
        gain = no_taste_error**2 - error**2
        if gain.mean() > best_gain:
            best_reg, best_gain, best_factors = reg, float(gain.mean()), item_factors
            spread = float(gain.std(ddof=1)) / math.sqrt(gain.size)
            significant = best_gain > SIGNIFICANT_Z * spread
    no_taste_rmse = path[0][1]
    worth_it = math.sqrt(max(no_taste_rmse**2 - best_gain, 0.0)) < no_taste_rmse * (
        1.0 - MIN_RELATIVE_GAIN
    )
    if not (significant and worth_it):
        return math.inf, item_factors, tuple(path)
    return best_reg, best_factors, tuple(path)


def _taste_term(user_factors, item_factors, user_idx, item_idx) -> np.ndarray:
    return np.einsum("ij,ij->i", user_factors[user_idx], item_factors[item_idx])


def personal_scores(taste: Taste, base: NonPersonal, user: int, items: np.ndarray) -> np.ndarray:
    """User ``user``'s predicted rating (common scale) of each of ``items``: the non-personal
    score plus the taste term. A user index past the fitted ones (a user who had not rated
    when the taste was fitted) has no offset and no taste: the sub-agents' θ order."""
    items = np.asarray(items, dtype=np.int64)
    if items.size and (items.min() < 0 or items.max() >= len(base.item_mean)):
        raise ValueError("item index out of range")
    if user < 0:
        raise ValueError("user index out of range")
    offset = base.user_offset[user] if user < len(base.user_offset) else 0.0
    score = base.global_mean + offset + base.item_mean[items]
    if user < len(taste.user_factors):
        score = score + taste.item_factors[items] @ taste.user_factors[user]
    return score


def predict_ratings(
    taste: Taste, base: NonPersonal, user_idx: np.ndarray, item_idx: np.ndarray
) -> np.ndarray:
    """Personal predictions of many (user, sub-agent) pairs at once, e.g. held-out ratings."""
    user_idx = np.asarray(user_idx, dtype=np.int64)
    item_idx = np.asarray(item_idx, dtype=np.int64)
    taste_term = _taste_term(taste.user_factors, taste.item_factors, user_idx, item_idx)
    return base.predict(user_idx, item_idx) + taste_term


def _checked(user_idx, item_idx, value, n_users: int, n_items: int):
    user_idx = np.asarray(user_idx)
    item_idx = np.asarray(item_idx)
    value = np.asarray(value, dtype=np.float64)
    if not (user_idx.ndim == item_idx.ndim == value.ndim == 1):
        raise ValueError("user_idx, item_idx and value must be 1-D")
    if not (user_idx.size == item_idx.size == value.size):
        raise ValueError("user_idx, item_idx and value must have the same length")
    if user_idx.size and (user_idx.dtype.kind not in "iu" or item_idx.dtype.kind not in "iu"):
        raise ValueError("user_idx and item_idx must be integer indices")
    if not np.all(np.isfinite(value)):
        raise ValueError("value holds NaN or infinity")
    if user_idx.size and (user_idx.min() < 0 or user_idx.max() >= n_users):
        raise ValueError("user index out of range of base.user_offset")
    if item_idx.size and (item_idx.min() < 0 or item_idx.max() >= n_items):
        raise ValueError("item index out of range of the forest")
    return user_idx.astype(np.int64), item_idx.astype(np.int64), value


def _rows(row: np.ndarray, column: np.ndarray, data: np.ndarray, n_rows: int, n_columns: int):
    """A CSR matrix with one entry per rating, repeated (user, sub-agent) pairs kept apart (the
    (data, (row, col)) constructor would add them up, and a pair rated twice is two ratings)."""
    by_row = np.argsort(row, kind="stable")
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n_rows), out=indptr[1:])
    return sparse.csr_matrix((data[by_row], column[by_row], indptr), shape=(n_rows, n_columns))


def _ones_like(matrix: sparse.csr_matrix) -> sparse.csr_matrix:
    return sparse.csr_matrix(
        (np.ones_like(matrix.data), matrix.indices, matrix.indptr), shape=matrix.shape
    )


def _grams(counts: sparse.csr_matrix, factors: np.ndarray) -> np.ndarray:
    """Σ over each row's ratings of f fᵀ, shape (n_rows, k, k). Only the upper triangle goes
    through the sparse product (k(k+1)/2 columns instead of k²: the product is most of a
    sweep's time); the lower one is its mirror."""
    k = factors.shape[1]
    upper_row, upper_col = np.triu_indices(k)
    summed = np.asarray(counts @ (factors[:, upper_row] * factors[:, upper_col]))
    grams = np.empty((summed.shape[0], k, k))
    grams[:, upper_row, upper_col] = summed
    grams[:, upper_col, upper_row] = summed
    return grams


def _ridge(
    counts: sparse.csr_matrix, residuals: sparse.csr_matrix, factors: np.ndarray, reg: float
) -> np.ndarray:
    k = factors.shape[1]
    precision = _grams(counts, factors) + reg * np.eye(k)
    info = np.asarray(residuals @ factors)
    return np.linalg.solve(precision, info[:, :, None])[:, :, 0]


def _tree_ridge(
    forest: Forest,
    counts: sparse.csr_matrix,
    residuals: sparse.csr_matrix,
    user_factors: np.ndarray,
    reg_root: float,
    reg_fork: float,
) -> np.ndarray:
    """The sub-agents' factors given the users', exactly, on the fork tree (module docstring).
    Arrays below are laid out in ``forest.order``, so each level is one slice."""
    k = user_factors.shape[1]
    eye = np.eye(k)
    order = forest.order
    precision = _grams(counts, user_factors)[order]  # J, children's messages added below
    info = np.asarray(residuals @ user_factors)[order]  # h
    # (J_v + λ_f I)⁻¹ of each fork, kept from the upward pass for the downward one.
    fork_inverse = np.empty((forest.n, k, k))
    for d in range(forest.n_levels - 1, 0, -1):
        level = forest.level_slice(d)
        parent_pos, starts = forest.sibling_runs(d)
        inverse = np.linalg.inv(precision[level] + reg_fork * eye)
        fork_inverse[level] = inverse
        message_precision = reg_fork * eye - reg_fork * reg_fork * inverse
        message_info = reg_fork * np.einsum("nij,nj->ni", inverse, info[level])
        precision[parent_pos] += np.add.reduceat(message_precision, starts, axis=0)
        info[parent_pos] += np.add.reduceat(message_info, starts, axis=0)

    factors = np.empty((forest.n, k))
    roots = forest.level_slice(0)
    factors[roots] = np.linalg.solve(precision[roots] + reg_root * eye, info[roots][:, :, None])[
        :, :, 0
    ]
    for d in range(1, forest.n_levels):
        level = forest.level_slice(d)
        pulled = info[level] + reg_fork * factors[forest.order_parent_pos[level]]
        factors[level] = np.einsum("nij,nj->ni", fork_inverse[level], pulled)
    out = np.empty_like(factors)
    out[order] = factors
    return out
