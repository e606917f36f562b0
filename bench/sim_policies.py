"""The policies bench/evolution_sim.py compares: each decides which sub-agents a session shows
and which sub-agent is forked next, seeing only what Sprig would see (ratings, uses,
retention, the fork tree), never the latent quality. Sprig's own (rater debiasing, lineage
posterior, Thompson slates with a young-fork share), the textbook baselines (show and fork their
top item; young-fork slots only with ``baseline_young_share``) and the fair baselines
(FAIR_BASELINES): bandits on the raw mean rating that spend Sprig's exploration budget, the
same ``young_share`` of slots, and fork by the same rule as their slates."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from bench.baselines import bayesian_average, wilson_lower_bound
from bench.sim_world import YOUNG_RATINGS, Log, WorldParams
from evolution.explore import thompson_slates
from evolution.ranking import Ratings, Scores, rank, sample_lineage, to_common_scale
from evolution.tree import Forest


class Policy(Protocol):
    name: str

    def refit(self, log: Log) -> None: ...

    def choose(self, n_sessions: int, k: int) -> np.ndarray: ...

    def pick_parent(self) -> int: ...

    def estimate(self) -> np.ndarray: ...

    def top_pick(self) -> int: ...


def rating_counts(log: Log) -> np.ndarray:
    return np.bincount(log.rating_item[log.ratings()], minlength=log.n_items)


class ScorePolicy:
    """Show the top items by a score, fork the top item; young forks get the same share of slots
    as Sprig's, filled uniformly at random among them."""

    name = "score"

    def __init__(self, seed: int, young_share: float) -> None:
        self.rng = np.random.default_rng([seed, 7, *map(ord, self.name)])
        self.young_share = young_share
        self.score_ = np.zeros(0)
        self.young = np.zeros(0, bool)

    def scores(self, log: Log) -> np.ndarray:
        raise NotImplementedError

    def refit(self, log: Log) -> None:
        # A tiny jitter breaks ties at random instead of by index.
        self.score_ = self.scores(log) + 1e-9 * self.rng.random(log.n_items)
        self.young = rating_counts(log) < YOUNG_RATINGS

    def choose(self, n_sessions: int, k: int) -> np.ndarray:
        ranked = np.argsort(-self.score_)
        slates = np.tile(ranked[:k], (n_sessions, 1))
        expected = k * self.young_share
        whole = int(expected)
        n_young = whole + (self.rng.random(n_sessions) < expected - whole)
        young = np.flatnonzero(self.young)
        for s in np.flatnonzero(n_young):
            regular = ranked[: k - n_young[s]]
            pool = np.setdiff1d(young, regular)
            if pool.size:
                fill = self.rng.choice(pool, size=min(n_young[s], pool.size), replace=False)
                slates[s, k - fill.size :] = fill
        return slates

    def pick_parent(self) -> int:
        return int(np.argmax(self.score_))

    def estimate(self) -> np.ndarray:
        return self.score_

    def top_pick(self) -> int:
        return int(np.argmax(self.score_))


class RandomPolicy(ScorePolicy):
    name = "random"

    def scores(self, log: Log) -> np.ndarray:
        return self.rng.random(log.n_items)

    def choose(self, n_sessions: int, k: int) -> np.ndarray:
        n = self.score_.size
        return np.argsort(self.rng.random((n_sessions, n)), axis=1)[:, :k]

    def pick_parent(self) -> int:
        return int(self.rng.integers(self.score_.size))


class MostUsedPolicy(ScorePolicy):
    name = "most-used"

    def scores(self, log: Log) -> np.ndarray:
        return np.bincount(log.use_item[log.uses()], minlength=log.n_items).astype(float)


def rating_sums(log: Log) -> tuple[np.ndarray, np.ndarray, float]:
    r = log.ratings()
    z = to_common_scale(log.rating_value[r], log.rating_thumb[r])
    total = np.bincount(log.rating_item[r], z, minlength=log.n_items)
    count = np.bincount(log.rating_item[r], minlength=log.n_items).astype(float)
    return total, count, float(z.mean()) if z.size else 0.0


class MeanRatingPolicy(ScorePolicy):
    name = "mean-rating"

    def scores(self, log: Log) -> np.ndarray:
        total, count, overall = rating_sums(log)
        return np.where(count > 0, total / np.maximum(count, 1), overall)


class WilsonPolicy(ScorePolicy):
    name = "wilson"

    def scores(self, log: Log) -> np.ndarray:
        r = log.ratings()
        value, thumb = log.rating_value[r], log.rating_thumb[r]
        positive = np.where(thumb, value > 0.5, value >= 4)
        item = log.rating_item[r]
        return wilson_lower_bound(
            np.bincount(item, positive, minlength=log.n_items),
            np.bincount(item, minlength=log.n_items),
        )


class BayesianAveragePolicy(ScorePolicy):
    name = "bayes-avg"
    prior_count = 5.0

    def scores(self, log: Log) -> np.ndarray:
        total, count, overall = rating_sums(log)
        return bayesian_average(total, count, overall, self.prior_count)


class SprigPolicy:
    """Rater debiasing, end-of-scale ratings read as bounds, lineage posterior with a per-branch
    fork drift (evolution.ranking.rank), Thompson slates with a young-fork share at the exposure
    policy's spread (evolution.explore, SD_SCALE; young = own evidence worth under 10 typical
    ratings), and forking by a Thompson draw of what a fork of each sub-agent is expected to be:
    a joint posterior draw of θ plus its fork gain."""

    name = "sprig"

    def __init__(self, seed: int, young_share: float, params: WorldParams) -> None:
        self.rng = np.random.default_rng([seed, 11])
        self.young_share = young_share
        self.sessions_per_day = params.sessions / params.days
        self.scores: Scores | None = None
        self.forest: Forest | None = None
        self.young = np.zeros(0, bool)

    def refit(self, log: Log) -> None:
        n = log.n_items
        self.forest = Forest.from_parents(np.arange(n), log.parent[:n])
        r = log.ratings()
        ratings = Ratings(
            user_idx=log.rating_user[r],
            item_idx=log.rating_item[r],
            value=log.rating_value[r],
            is_thumb=log.rating_thumb[r],
            age_days=(log.now - log.rating_at[r]) / self.sessions_per_day,
        )
        self.scores = rank(
            self.forest,
            ratings,
            n_users=int(log.rating_user[r].max()) + 1 if log.n_ratings else 1,
            previous=self.scores,
            rng=self.rng,
            n_samples=16,
        )
        self.young = self.scores.young

    def choose(self, n_sessions: int, k: int) -> np.ndarray:
        assert self.scores is not None
        slates, _ = thompson_slates(
            self.scores.mean,
            self.scores.sd,
            n_slates=n_sessions,
            k=k,
            rng=self.rng,
            young_mask=self.young,
            young_share=self.young_share,
        )
        return slates

    def pick_parent(self) -> int:
        assert self.scores is not None and self.forest is not None
        draw = sample_lineage(self.forest, self.scores.posterior, 1, self.rng)[:, 0]
        return int(np.argmax(draw + self.scores.fork_gain))

    def estimate(self) -> np.ndarray:
        assert self.scores is not None
        return self.scores.mean

    def top_pick(self) -> int:
        assert self.scores is not None
        return int(np.argmax(self.scores.display))


class RawMeanPolicy:
    """The raw mean rating per item on the common scale (items without ratings: the overall
    mean) with a Normal posterior: prior the overall mean worth ``prior_count`` ratings, rating
    sd the sd of all ratings. No rater debiasing and no lineage: what each fair baseline knows."""

    name = "raw-mean"
    prior_count = 1.0

    def __init__(self, seed: int, young_share: float) -> None:
        self.rng = np.random.default_rng([seed, 13, *map(ord, self.name)])
        self.young_share = young_share
        self.mean = np.zeros(0)
        self.count = np.zeros(0)
        self.rating_sd = 1.0
        self.young = np.zeros(0, bool)

    def refit(self, log: Log) -> None:
        total, count, overall = rating_sums(log)
        r = log.ratings()
        z = to_common_scale(log.rating_value[r], log.rating_thumb[r])
        spread = float(z.std()) if z.size > 1 else 0.0
        self.rating_sd = spread if spread > 0 else 1.0  # no spread yet: unit sd, keep exploring
        self.count = count
        # A tiny jitter breaks ties at random instead of by index.
        self.mean = (total + self.prior_count * overall) / (count + self.prior_count)
        self.mean = self.mean + 1e-9 * self.rng.random(log.n_items)
        self.young = count < YOUNG_RATINGS

    @property
    def sd(self) -> np.ndarray:
        return self.rating_sd / np.sqrt(self.count + self.prior_count)

    def estimate(self) -> np.ndarray:
        return self.mean

    def top_pick(self) -> int:
        return int(np.argmax(self.mean))


class ThompsonMeanPolicy(RawMeanPolicy):
    """Thompson slates on the raw-mean posterior through evolution.explore.thompson_slates with
    Sprig's young-fork share and spread (SD_SCALE); forks the argmax of one posterior draw."""

    name = "thompson-mean"

    def choose(self, n_sessions: int, k: int) -> np.ndarray:
        slates, _ = thompson_slates(
            self.mean,
            self.sd,
            n_slates=n_sessions,
            k=k,
            rng=self.rng,
            young_mask=self.young,
            young_share=self.young_share,
        )
        return slates

    def pick_parent(self) -> int:
        return int(np.argmax(self.mean + self.sd * self.rng.standard_normal(self.mean.size)))


class EpsGreedyPolicy(RawMeanPolicy):
    """Each slot shows, with probability ε = Sprig's young share, a uniformly drawn item outside
    the greedy slate, otherwise the greedy slate's item (top raw means); forks a uniformly drawn
    item with probability ε, otherwise the top one. Its share of exploratory slots is Sprig's
    share of young-fork slots."""

    name = "eps-greedy"

    def choose(self, n_sessions: int, k: int) -> np.ndarray:
        ranked = np.argsort(-self.mean)
        slates = np.tile(ranked[:k], (n_sessions, 1))
        others = ranked[k:]
        explore = self.rng.random((n_sessions, k)) < self.young_share
        rows = np.flatnonzero(explore.any(axis=1))
        if others.size and rows.size:
            order = np.argsort(self.rng.random((rows.size, others.size)), axis=1)
            drawn = others[order[:, :k]]
            width = drawn.shape[1]
            for slot in range(min(k, width)):
                take = explore[rows, slot]
                slates[rows[take], slot] = drawn[take, slot]
        return slates

    def pick_parent(self) -> int:
        if self.rng.random() < self.young_share:
            return int(self.rng.integers(self.mean.size))
        return self.top_pick()


class UCBPolicy(RawMeanPolicy):
    """UCB1 on raw means: score = mean + sd·√(2 ln N / n), N all ratings, n the item's (an item
    without ratings first). Slates are the top scores, with Sprig's share of slots given to the
    young forks of top score; forks the top score among rated items (an unrated item's infinite
    bound says "show it once", not "build on it": forking those would chain blind forks)."""

    name = "ucb"

    def refit(self, log: Log) -> None:
        super().refit(log)
        n_total = max(float(self.count.sum()), 2.0)
        bonus = self.rating_sd * np.sqrt(2 * np.log(n_total) / np.maximum(self.count, 1))
        self.score = np.where(self.count > 0, self.mean + bonus, np.inf)
        # Unrated items all score inf; the jitter orders them at random.
        self.order = np.lexsort((self.rng.random(self.mean.size), -self.score))

    def choose(self, n_sessions: int, k: int) -> np.ndarray:
        expected = k * self.young_share
        whole = int(expected)
        n_young = whole + (self.rng.random(n_sessions) < expected - whole)
        slates = np.full((n_sessions, k), -1, np.int64)
        for young_slots in np.unique(n_young):
            regular = self.order[: k - young_slots]
            young = self.order[self.young[self.order] & ~np.isin(self.order, regular)]
            slate = np.r_[regular, young[:young_slots]]
            slate = np.r_[slate, self.order[~np.isin(self.order, slate)][: k - slate.size]]
            slates[n_young == young_slots, : slate.size] = slate[:k]
        return slates

    def pick_parent(self) -> int:
        rated = self.order[self.count[self.order] > 0]
        return int(rated[0]) if rated.size else int(self.order[0])


FAIR_BASELINES = ["thompson-mean", "eps-greedy", "ucb"]
POLICIES = ["sprig", *FAIR_BASELINES, "random", "most-used", "mean-rating", "wilson", "bayes-avg"]


def make_policy(name: str, seed: int, params: WorldParams) -> Policy:
    if name == "sprig":
        return SprigPolicy(seed, params.young_share, params)
    classes = {
        "random": RandomPolicy,
        "most-used": MostUsedPolicy,
        "mean-rating": MeanRatingPolicy,
        "wilson": WilsonPolicy,
        "bayes-avg": BayesianAveragePolicy,
    }
    fair = {"thompson-mean": ThompsonMeanPolicy, "eps-greedy": EpsGreedyPolicy, "ucb": UCBPolicy}
    if name in fair:
        return fair[name](seed, params.young_share)
    return classes[name](seed, params.baseline_young_share)
