"""A Bayes oracle for the simulator's young forks: how well could anything order them?

bench/evolution_sim.py asks Sprig's estimate of young forks (< 10 ratings) to beat the best
baseline's Spearman by 0.1. Whether that is possible depends on the world, not only on the
model: a fork with three ratings is mostly known through its parent. The oracle knows
everything the log does not say and no estimator could learn exactly: the world's parameters
(the fork-step mixture, every rater's leniency, discrimination, taste, drift and thumbs or
stars, who gives only top marks, the noise's law and the missing-not-at-random rating
probability) and the parent's true latent quality and evolvability. From the fork's own ratings
it computes the exact posterior mean of the fork's quality on a grid. What it leads the best
baseline by is the most an estimator can be expected to lead by in that world: a posterior mean
is the best guess of each quality, not a bound proven for rank correlation, and the oracle leaves
aside what a rating's absence says and the popularity world's herding term (both small
against what it knows that no estimator does).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm, t

from bench.sim_world import World, bounded, marks, mean_utility, rating_probability

# The fork's latent on a grid around its prior centre (parent latent + parent evolvability): the
# step mixture's components lie within [-1.5 - 3·0.5, 0.3 + 3·0.3] of it in every world preset.
GRID_BELOW, GRID_ABOVE, GRID_POINTS = 5.0, 3.0, 321
# A user's utility s, integrated over each rating's interval (stars or thumbs).
UTILITY_GRID = np.linspace(-12.0, 12.0, 961)
UTILITY_STEP = float(UTILITY_GRID[1] - UTILITY_GRID[0])


def oracle_quality(world: World, items: np.ndarray) -> np.ndarray:
    """The posterior mean quality of each fork in ``items`` (indices of ``world``; each must
    have a parent), given the truth named in the module's docstring and the fork's ratings."""
    p, d, log = world.p, world.d, world.log
    ratings = log.ratings()
    rater, rated_item = log.rating_user[ratings], log.rating_item[ratings]
    value, thumb, at = log.rating_value[ratings], log.rating_thumb[ratings], log.rating_at[ratings]
    shares = np.array([1 - p.improve_share - p.broken_share, p.improve_share, p.broken_share])
    step_means, step_sds = np.array(p.fork_step_mean), np.array(p.fork_step_sd)
    s = UTILITY_GRID
    rate_probability = rating_probability(p, s)
    noise_pdf = norm.pdf if math.isinf(p.noise_df) else (lambda x: t.pdf(x, p.noise_df))
    estimate = np.empty(len(items))
    for n, item in enumerate(items):
        parent = world.log.parent[item]
        centre = world.latent[parent] + world.evolvability[parent]
        latent = centre + np.linspace(-GRID_BELOW, GRID_ABOVE, GRID_POINTS)
        prior = sum(
            share * norm.pdf(latent - centre, mean, sd)
            for share, mean, sd in zip(shares, step_means, step_sds, strict=True)
            if share > 0
        )
        log_posterior = np.log(prior + 1e-300)
        quality = bounded(p, latent)
        for k in np.flatnonzero(rated_item == item):
            user = rater[k]
            if d.top_marks_user[user]:
                continue  # the top mark whatever the fork: it says nothing
            mean = mean_utility(p, d, user, quality, world.category[item], at[k])
            within = _rating_interval(value[k], bool(thumb[k]))
            # P(the user rates, and with this mark | quality): the rating probability times
            # the noise's density, over the utilities that give this mark.
            likelihood = (noise_pdf(s[None, :] - mean[:, None]) * (rate_probability * within)).sum(
                axis=1
            ) * UTILITY_STEP
            log_posterior += np.log(likelihood + 1e-300)
        posterior = np.exp(log_posterior - log_posterior.max())
        estimate[n] = float((posterior * quality).sum() / posterior.sum())
    return estimate


def _rating_interval(value: float, thumb: bool) -> np.ndarray:
    """Which utilities on UTILITY_GRID give this mark (``sim_world.marks``)."""
    return marks(UTILITY_GRID, thumb) == value
