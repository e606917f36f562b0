"""The simulated community of bench/evolution_sim.py: its parameters, the random draws a seed
fixes (so every policy meets the same users, roots, session order, noise and fork mutations),
the log of what happened, and the world that plays sessions and grows forks.

Roots in categories have a latent quality q ~ N(0, 1) and an evolvability e; each fork gives
q_child = q_parent + e_parent + δ with δ a tweak, an improvement or a break. Users have a
leniency b, a discrimination a and a taste per category w. A user's utility for a sub-agent
shown is s = a·(q + w_category) + b + ε; ratings are stars (s cut at ±0.5, ±1.5) or thumbs
(s > 0).

Fields after ``flat_rate_probability`` make worlds that break that model (named presets in
bench/evolution_sim.py WORLDS): leniency that scales instead of shifts, or with a long harsh
tail; Student-t noise; raters who only give top marks; quality bounded by q_max·tanh(q/q_max);
leniency that drifts over the run; fork steps taken from other mixtures; and popularity
feedback. Their defaults are the original world, and they draw from a separate random stream,
so the original draws of a seed are unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

STAR_CUTS = np.array([-1.5, -0.5, 0.5, 1.5])
YOUNG_RATINGS = 10  # a fork with fewer ratings is young


@dataclass(frozen=True)
class WorldParams:
    users: int = 2000
    roots: int = 20
    categories: int = 5
    forks: int = 500
    sessions: int = 50_000
    days: float = 60.0
    slate: int = 2
    leniency_sd: float = 0.8
    discrimination_sd: float = 0.3
    taste_sd: float = 0.5
    root_quality_sd: float = 1.0
    evolvability_sd: float = 0.2
    evolvability_inherit_sd: float = 0.05
    improve_share: float = 0.3
    broken_share: float = 0.1
    zipf: float = 1.1
    thumb_share: float = 0.5
    mnar: bool = True
    flat_rate_probability: float = 0.5  # rating probability when not missing-not-at-random
    # "additive": s = a·(q + w) + b + ε; "multiplicative": s = e^b·a·(q + w) + ε (raters differ
    # in how far they spread their marks, not where they centre them); "skewed": additive, with
    # b = the same normal draw mapped onto a lognormal shape (same sd, mean 0): most raters
    # mildly lenient, a long tail of harsh ones.
    leniency_form: str = "additive"
    noise_df: float = math.inf  # ε ~ Student t with these degrees of freedom (inf: normal)
    top_marks_share: float = 0.0  # share of users who give the top mark whenever they rate
    quality_bound: float = math.inf  # q_max: quality is q_max·tanh(latent / q_max)
    leniency_drift: float = 0.0  # mean change of every user's b from the first session to the last
    leniency_drift_sd: float = 0.0  # sd over users of that change
    # δ of a tweak, an improvement, a break: mean and sd.
    fork_step_mean: tuple[float, float, float] = (-0.1, 0.3, -1.5)
    fork_step_sd: tuple[float, float, float] = (0.3, 0.3, 0.5)
    popularity: float = 0.0  # utility += popularity·log(1 + users who used it so far)
    # Policy settings, here so that they are printed and stored with every result.
    young_share: float = 0.15  # Sprig's share of slots reserved for young forks
    baseline_young_share: float = 0.0  # the same for the baselines (0: as deployed elsewhere)
    forking: str = "policy"  # "policy": the policy under test picks parents; "community": a
    # fixed rule (uniform over existing sub-agents) that is the same for every policy


@dataclass
class Draws:
    """Everything random about one seed's world, drawn once and shared by every policy."""

    leniency: np.ndarray
    discrimination: np.ndarray
    taste: np.ndarray  # users × categories
    thumbs_user: np.ndarray
    root_quality: np.ndarray
    root_evolvability: np.ndarray
    root_category: np.ndarray
    fork_step: np.ndarray  # δ of the k-th fork
    fork_kind: np.ndarray  # 0 tweak, 1 improvement, 2 broken
    fork_evolvability_noise: np.ndarray
    fork_at: np.ndarray  # session index at which the k-th fork appears
    fork_parent_u: np.ndarray  # uniform draw picking the parent under community forking
    session_user: np.ndarray
    noise: np.ndarray  # sessions × slate
    rate_u: np.ndarray
    use_u: np.ndarray
    retain_u: np.ndarray
    top_marks_user: np.ndarray
    leniency_drift: np.ndarray  # per user: change of b from the first session to the last


def draw_world(p: WorldParams, seed: int) -> Draws:
    rng = np.random.default_rng([seed, 2024])
    activity = np.arange(1, p.users + 1, dtype=np.float64) ** -p.zipf
    activity = rng.permutation(activity / activity.sum())
    kind = rng.choice(
        3, size=p.forks, p=[1 - p.improve_share - p.broken_share, p.improve_share, p.broken_share]
    )
    step_mean = np.array(p.fork_step_mean)[kind]
    step_sd = np.array(p.fork_step_sd)[kind]
    shape = (p.sessions, p.slate)
    leniency = rng.normal(0, p.leniency_sd, p.users)
    # The broken-model draws come from their own stream, so that the original world of a seed
    # is drawn exactly as before.
    extra = np.random.default_rng([seed, 2024, 1])
    draws = Draws(
        leniency=leniency,
        discrimination=rng.lognormal(0, p.discrimination_sd, p.users),
        taste=rng.normal(0, p.taste_sd, (p.users, p.categories)),
        thumbs_user=rng.random(p.users) < p.thumb_share,
        root_quality=rng.normal(0, p.root_quality_sd, p.roots),
        root_evolvability=rng.normal(0, p.evolvability_sd, p.roots),
        root_category=np.arange(p.roots) % p.categories,
        fork_step=rng.normal(step_mean, step_sd),
        fork_kind=kind,
        fork_evolvability_noise=rng.normal(0, p.evolvability_inherit_sd, p.forks),
        fork_at=np.floor((np.arange(p.forks) + 1) * p.sessions / (p.forks + 1)).astype(np.int64),
        fork_parent_u=rng.random(p.forks),
        session_user=rng.choice(p.users, size=p.sessions, p=activity),
        noise=rng.standard_normal(shape),
        rate_u=rng.random(shape),
        use_u=rng.random(shape),
        retain_u=rng.random(shape),
        top_marks_user=extra.random(p.users) < p.top_marks_share,
        leniency_drift=p.leniency_drift + p.leniency_drift_sd * extra.standard_normal(p.users),
    )
    if p.leniency_form == "skewed" and p.leniency_sd > 0:
        shape_draw = np.exp(leniency / p.leniency_sd)
        lognormal_mean, lognormal_sd = math.exp(0.5), math.sqrt((math.e - 1) * math.e)
        draws.leniency = -p.leniency_sd * (shape_draw - lognormal_mean) / lognormal_sd
    if math.isfinite(p.noise_df):
        draws.noise = draws.noise * np.sqrt(p.noise_df / extra.chisquare(p.noise_df, shape))
    return draws


def mean_utility(
    p: WorldParams,
    d: Draws,
    user: np.ndarray | int,
    quality: np.ndarray,
    category: np.ndarray | int,
    at: np.ndarray | int,
    herding: np.ndarray | None = None,
) -> np.ndarray:
    """A user's utility s before its noise ε, at session ``at``: a·(q + w_category) + b, or
    e^b·a·(q + w) with multiplicative leniency; ``herding`` (popularity) adds to the appeal.
    The world plays with it, and bench/sim_oracle.py reads ratings by it."""
    appeal = d.discrimination[user] * (quality + d.taste[user, category])
    leniency = d.leniency[user]
    if p.leniency_drift or p.leniency_drift_sd:
        leniency = leniency + d.leniency_drift[user] * (at / p.sessions)
    if herding is not None:
        appeal = appeal + herding
    if p.leniency_form == "multiplicative":
        return np.exp(leniency) * appeal
    return appeal + leniency


def rating_probability(p: WorldParams, utility: np.ndarray) -> np.ndarray:
    """The chance a user rates what they used: σ(−1 + 0.8|s|) when ratings are missing not at
    random (people rate what they love or hate), else flat."""
    if p.mnar:
        return 1.0 / (1.0 + np.exp(1.0 - 0.8 * np.abs(utility)))
    return np.full(np.shape(utility), p.flat_rate_probability)


def marks(utility: np.ndarray, thumb: np.ndarray | bool) -> np.ndarray:
    """The mark each utility gives: stars 1-5 (s cut at STAR_CUTS, star k for cut k-1 < s ≤
    cut k) or, for a thumbs rater, 1 (s > 0) or 0."""
    return np.where(thumb, (utility > 0).astype(float), 1.0 + np.searchsorted(STAR_CUTS, utility))


def bounded(p: WorldParams, latent: np.ndarray | float) -> np.ndarray | float:
    """Quality from the latent: q_max·tanh(latent / q_max), gains shrink near the bound."""
    if math.isinf(p.quality_bound):
        return latent
    return p.quality_bound * np.tanh(latent / p.quality_bound)


@dataclass
class Log:
    """What Sprig can see. Arrays are preallocated; ``n_*`` say how much is filled."""

    capacity: int
    n_items: int = 0
    parent: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    born_at: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_ratings: int = 0
    rating_user: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rating_item: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rating_value: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rating_thumb: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    rating_at: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_uses: int = 0
    use_user: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    use_item: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    use_at: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    use_retained: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    now: int = 0

    def __post_init__(self) -> None:
        c = self.capacity
        self.rating_user = np.zeros(c, np.int64)
        self.rating_item = np.zeros(c, np.int64)
        self.rating_value = np.zeros(c)
        self.rating_thumb = np.zeros(c, bool)
        self.rating_at = np.zeros(c, np.int64)
        self.use_user = np.zeros(c, np.int64)
        self.use_item = np.zeros(c, np.int64)
        self.use_at = np.zeros(c, np.int64)
        self.use_retained = np.zeros(c, bool)

    def ratings(self) -> slice:
        return slice(0, self.n_ratings)

    def uses(self) -> slice:
        return slice(0, self.n_uses)


class World:
    def __init__(self, p: WorldParams, d: Draws) -> None:
        self.p, self.d = p, d
        n_max = p.roots + p.forks
        self.latent = np.zeros(n_max)  # quality before the bound; forks step from it
        self.quality = np.zeros(n_max)
        self.evolvability = np.zeros(n_max)
        self.category = np.zeros(n_max, np.int64)
        self.latent[: p.roots] = d.root_quality
        self.quality[: p.roots] = bounded(p, d.root_quality)
        self.evolvability[: p.roots] = d.root_evolvability
        self.category[: p.roots] = d.root_category
        self.rated = np.zeros((p.users, n_max), bool)
        self.used = np.zeros((p.users, n_max), bool)
        self.user_count = np.zeros(n_max)  # users who have used each sub-agent
        self.log = Log(capacity=p.sessions * p.slate)
        self.log.n_items = p.roots
        self.log.parent = np.full(n_max, -1, np.int64)
        self.log.born_at = np.zeros(n_max, np.int64)
        self.n_forks = 0

    @property
    def n(self) -> int:
        return self.log.n_items

    def fork(self, parent: int, at: int) -> int:
        k, child = self.n_forks, self.n
        self.latent[child] = self.latent[parent] + self.evolvability[parent] + self.d.fork_step[k]
        self.quality[child] = bounded(self.p, self.latent[child])
        self.evolvability[child] = self.evolvability[parent] + self.d.fork_evolvability_noise[k]
        self.category[child] = self.category[parent]
        self.log.parent[child] = parent
        self.log.born_at[child] = at
        self.log.n_items += 1
        self.n_forks += 1
        return child

    def utility(self, sessions: np.ndarray, user: np.ndarray, item: np.ndarray) -> np.ndarray:
        """s of ``user`` (sessions × slots) for ``item`` in each of ``sessions``."""
        p, d = self.p, self.d
        herding = p.popularity * np.log1p(self.user_count[item]) if p.popularity else None
        noise = d.noise[sessions][:, : item.shape[1]]
        return (
            mean_utility(
                p, d, user, self.quality[item], self.category[item], sessions[:, None], herding
            )
            + noise
        )

    def play(self, start: int, slates: np.ndarray) -> None:
        """Sessions start .. start + len(slates) - 1, each showing one slate."""
        p, d, log = self.p, self.d, self.log
        sessions = np.arange(start, start + len(slates))
        user = d.session_user[sessions][:, None].repeat(slates.shape[1], axis=1)
        valid = slates >= 0
        item = np.where(valid, slates, 0)
        utility = self.utility(sessions, user, item)
        rate_p = rating_probability(p, utility)
        rates = valid & (d.rate_u[sessions][:, : slates.shape[1]] < rate_p)
        uses = valid & (d.use_u[sessions][:, : slates.shape[1]] < 1.0 / (1.0 + np.exp(-utility)))
        at = np.broadcast_to(sessions[:, None], slates.shape)

        # One rating and one use per (user, sub-agent): the first counts.
        ru, ri, rs, ra = _first_per_pair(user[rates], item[rates], utility[rates], at[rates])
        fresh = ~self.rated[ru, ri]
        ru, ri, rs, ra = ru[fresh], ri[fresh], rs[fresh], ra[fresh]
        self.rated[ru, ri] = True
        thumb = d.thumbs_user[ru]
        value = marks(rs, thumb)
        value = np.where(d.top_marks_user[ru], np.where(thumb, 1.0, 5.0), value)
        _append(log, "rating", ru, ri, ra, value=value, thumb=thumb)

        retain_p = 1.0 / (1.0 + np.exp(-(self.quality[item] + 0.3 * d.leniency[user] - 1.0)))
        retained = d.retain_u[sessions][:, : slates.shape[1]] < retain_p
        uu, ui, ur, ua = _first_per_pair(user[uses], item[uses], retained[uses], at[uses])
        fresh = ~self.used[uu, ui]
        uu, ui, ur, ua = uu[fresh], ui[fresh], ur[fresh], ua[fresh]
        self.used[uu, ui] = True
        self.user_count += np.bincount(ui, minlength=self.user_count.size)
        _append(log, "use", uu, ui, ua, retained=ur.astype(bool))
        log.now = start + len(slates)


def _first_per_pair(user, item, value, at):
    key = user * 1_000_003 + item
    _, first = np.unique(key, return_index=True)
    first.sort()
    return user[first], item[first], value[first], at[first]


def _append(log: Log, kind: str, user, item, at, **extra) -> None:
    n = getattr(log, f"n_{kind}s")
    m = len(user)
    getattr(log, f"{kind}_user")[n : n + m] = user
    getattr(log, f"{kind}_item")[n : n + m] = item
    getattr(log, f"{kind}_at")[n : n + m] = at
    for name, values in extra.items():
        getattr(log, f"{kind}_{name}")[n : n + m] = values
    setattr(log, f"n_{kind}s", n + m)
