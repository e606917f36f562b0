"""The evolution simulator (bench/sim_world.py, bench/sim_policies.py, bench/evolution_sim.py):
the default world is drawn exactly as before the broken-model flags existed, each flag changes
what it says it changes, the fair baselines explore at Sprig's young share, and a seed whose
figure is NaN is counted, not dropped; the Bayes oracle (bench/sim_oracle.py) reads ratings as
the world makes them."""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import spearmanr

from bench.evolution_sim import (
    ORACLE,
    WORLDS,
    cell,
    figure,
    offline_estimates,
    regret_target,
    spearman_target,
)
from bench.sim_oracle import UTILITY_GRID, _rating_interval, oracle_quality
from bench.sim_policies import FAIR_BASELINES, POLICIES, make_policy
from bench.sim_world import STAR_CUTS, Log, World, WorldParams, draw_world

SMALL = WorldParams(users=60, roots=6, categories=3, forks=8, sessions=400)
ORIGINAL_DRAW_FIELDS = [
    "leniency",
    "discrimination",
    "taste",
    "thumbs_user",
    "root_quality",
    "root_evolvability",
    "root_category",
    "fork_step",
    "fork_kind",
    "fork_evolvability_noise",
    "fork_at",
    "fork_parent_u",
    "session_user",
    "noise",
    "rate_u",
    "use_u",
    "retain_u",
]


def play_uniformly(world: World, seed: int) -> World:
    """Community forking, every session shows sub-agents drawn at random."""
    rng = np.random.default_rng(seed)
    d, p = world.d, world.p
    boundaries = np.r_[0, d.fork_at, p.sessions]
    for b in range(boundaries.size - 1):
        start, stop = int(boundaries[b]), int(boundaries[b + 1])
        if b > 0:
            world.fork(int(d.fork_parent_u[b - 1] * world.n), start)
        if stop > start:
            slates = np.argsort(rng.random((stop - start, world.n)), axis=1)[:, : p.slate]
            world.play(start, slates)
    return world


def test_the_default_world_is_drawn_and_played_as_before():
    """Digests taken with the simulator before the broken-model flags were added."""
    draws = draw_world(SMALL, 5)
    digest = hashlib.sha256()
    for name in ORIGINAL_DRAW_FIELDS:
        digest.update(np.ascontiguousarray(getattr(draws, name)).tobytes())
    assert digest.hexdigest() == "15625e580c43aa2408bc1586ac7cfa97649f78554e47e0024a6bda4721ec3ed6"

    # Played with bench.sim_policies.RandomPolicy(5, 0.0) at the time; its draws are replayed
    # here through the same generator.
    world = World(SMALL, draws)
    show = make_policy("random", 5, SMALL)
    boundaries = np.r_[0, draws.fork_at, SMALL.sessions]
    for b in range(boundaries.size - 1):
        start, stop = int(boundaries[b]), int(boundaries[b + 1])
        if b > 0:
            world.fork(int(draws.fork_parent_u[b - 1] * world.n), start)
        show.refit(world.log)
        if stop > start:
            world.play(start, show.choose(stop - start, SMALL.slate))
    log = world.log
    digest = hashlib.sha256()
    for array in (
        log.rating_user,
        log.rating_item,
        log.rating_value,
        log.rating_thumb,
        log.rating_at,
        log.use_user,
        log.use_item,
        log.use_at,
        log.use_retained,
        world.quality,
    ):
        digest.update(np.ascontiguousarray(array).tobytes())
    assert (log.n_ratings, log.n_uses) == (227, 211)
    assert digest.hexdigest() == "ef0078471715e27cb886e8d177aa9670bcc2773cfde61291ffe0d77cb3f76c12"


def test_every_world_preset_names_real_fields_and_changes_the_world():
    for name, fields in WORLDS.items():
        params = replace(SMALL, **fields)
        if name != "default":
            assert params != SMALL, name


def test_bounded_quality_stays_within_its_bound_while_the_latent_climbs_past_it():
    params = replace(SMALL, quality_bound=2.0, forks=60, improve_share=0.9, broken_share=0.0)
    world = World(params, draw_world(params, 1))
    for k in range(params.forks):
        world.fork(int(np.argmax(world.quality[: world.n])), k)
    assert world.latent[: world.n].max() > 3.0
    assert np.abs(world.quality[: world.n]).max() < 2.0
    unbounded = World(replace(params, quality_bound=math.inf), draw_world(params, 1))
    assert unbounded.quality[: params.roots] == pytest.approx(world.latent[: params.roots])


def test_top_marks_raters_only_give_the_top_mark():
    params = replace(SMALL, top_marks_share=0.3, users=400, sessions=3000)
    world = play_uniformly(World(params, draw_world(params, 2)), 2)
    log, d = world.log, world.d
    r = log.ratings()
    top_marker = d.top_marks_user[log.rating_user[r]]
    value, thumb = log.rating_value[r], log.rating_thumb[r]
    assert 0.2 < d.top_marks_user.mean() < 0.4
    assert top_marker.sum() > 50
    assert np.all(value[top_marker] == np.where(thumb[top_marker], 1.0, 5.0))
    assert np.unique(value[~top_marker & ~thumb]).size == 5


def test_popularity_raises_the_share_of_users_who_take_the_popular_item():
    slates = np.tile([0, 1], (SMALL.sessions, 1))
    uses = {}
    for popularity in (0.0, 0.5):
        params = replace(SMALL, popularity=popularity)
        world = World(params, draw_world(params, 3))
        world.user_count[0] = 200  # item 0 is already popular; item 1 is not
        world.play(0, slates)
        used = world.log.use_item[world.log.uses()]
        uses[popularity] = np.bincount(used, minlength=2)
    assert uses[0.5][0] > uses[0.0][0]
    assert uses[0.5][1] == uses[0.0][1]  # no users yet: no popularity term


def utility_without_noise(
    params: WorldParams, seed: int, sessions: np.ndarray
) -> tuple[np.ndarray, object]:
    """Every user's utility for item 0 at each of ``sessions`` (users as the slots), ε = 0."""
    draws = draw_world(params, seed)
    draws.noise = np.zeros((params.sessions, params.users))
    world = World(params, draws)
    user = np.arange(params.users)[None, :].repeat(sessions.size, axis=0)
    return world.utility(sessions, user, np.zeros_like(user)), draws


def test_multiplicative_leniency_scales_instead_of_shifting():
    params = replace(SMALL, leniency_form="multiplicative")
    additive, draws = utility_without_noise(SMALL, 4, np.array([0]))
    scaled, _ = utility_without_noise(params, 4, np.array([0]))
    appeal = additive[0] - draws.leniency
    assert scaled[0] == pytest.approx(np.exp(draws.leniency) * appeal)


def test_skewed_leniency_keeps_its_sd_and_rater_order_but_has_a_long_harsh_tail():
    params = replace(SMALL, users=20_000, leniency_form="skewed")
    normal, skewed = draw_world(replace(params, leniency_form="additive"), 6), draw_world(params, 6)
    b = skewed.leniency
    assert abs(b.mean()) < 0.03 and b.std() == pytest.approx(params.leniency_sd, rel=0.1)
    assert np.mean((b - b.mean()) ** 3) / b.std() ** 3 < -2  # skewness of the mirrored lognormal
    assert np.array_equal(np.argsort(b), np.argsort(-normal.leniency))


def test_drift_moves_each_users_leniency_over_the_run():
    params = replace(SMALL, leniency_drift=-1.0, leniency_drift_sd=0.5)
    last = np.array([0, params.sessions - 1])
    utility, draws = utility_without_noise(params, 7, last)
    moved = utility[1] - utility[0]
    assert moved == pytest.approx(draws.leniency_drift * (params.sessions - 1) / params.sessions)
    assert draws.leniency_drift.mean() == pytest.approx(-1.0, abs=0.2)
    steady, _ = utility_without_noise(SMALL, 7, last)
    assert np.all(steady[1] == steady[0])


def test_heavy_tails_give_far_more_extreme_noise_than_the_normal():
    params = replace(SMALL, noise_df=2.0)
    normal, heavy = draw_world(SMALL, 8).noise, draw_world(params, 8).noise
    assert np.mean(np.abs(heavy) > 4) > 20 * max(np.mean(np.abs(normal) > 4), 1e-4)
    assert np.array_equal(np.sign(heavy), np.sign(normal))  # a scale mixture of the same draws


def test_rare_jumps_make_most_forks_neutral_and_a_few_large():
    params = replace(SMALL, forks=400, **WORLDS["rare-jumps"])
    world = World(params, draw_world(params, 9))
    for k in range(params.forks):
        world.fork(k % world.n, k)
    step = world.latent[params.roots : world.n] - world.latent[world.log.parent[params.roots :]]
    assert np.mean(np.abs(step) < 0.2) > 0.85
    assert 0.01 < np.mean(step > 1.0) < 0.06


def test_a_nan_seed_is_counted_and_shown_not_dropped():
    f = figure([1.0, float("nan"), 3.0])
    assert (f["mean"], f["n"], f["nan"]) == (2.0, 2, 1)
    assert math.isnan(f["per_seed"][1])
    assert cell(f, 1) == "2.0±1.4 (1 nan)"
    assert cell(figure([0.5]), 2) == "0.50±—"  # one seed has no spread to show
    assert cell(figure([float("nan")] * 3), 2) == "nan (3 nan)"


def star_log(good_items: int, young_items: int) -> Log:
    """Old items with 50 five-star ratings, young ones (under 10 ratings) with 9 one-star."""
    counts = [50] * good_items + [9] * young_items
    item = np.repeat(np.arange(len(counts)), counts)
    log = Log(capacity=item.size)
    log.n_items = len(counts)
    log.parent = np.full(log.n_items, -1, np.int64)
    log.born_at = np.zeros(log.n_items, np.int64)
    log.n_ratings = item.size
    log.rating_item[:] = item
    log.rating_user[:] = np.arange(item.size)
    log.rating_value[:] = np.where(item < good_items, 5.0, 1.0)
    return log


@pytest.mark.parametrize("name", ["thompson-mean", "ucb"])
def test_fair_baselines_give_young_forks_sprigs_share_of_slots(name):
    """Young items are clearly worse here, so only the reserved slots show them."""
    params = replace(SMALL, young_share=0.15)
    policy = make_policy(name, 0, params)
    policy.refit(star_log(6, 4))
    slates = policy.choose(20_000, 2)
    assert np.mean(slates >= 6) == pytest.approx(0.15, abs=0.01)


def test_eps_greedy_explores_at_sprigs_young_share():
    params = replace(SMALL, young_share=0.15)
    policy = make_policy("eps-greedy", 0, params)
    policy.refit(star_log(6, 4))
    greedy = np.argsort(-policy.estimate())[:2]
    slates = policy.choose(20_000, 2)
    assert np.mean(slates != greedy[None, :]) == pytest.approx(0.15, abs=0.01)
    assert np.all(slates[:, 0] != slates[:, 1])


def test_every_estimator_is_scored_on_the_same_held_out_pairs():
    params = replace(SMALL, sessions=2000, forks=20)
    out = offline_estimates(params, 1, POLICIES)
    counts = {figures["held_out_pair_count"] for name, figures in out.items() if name != ORACLE}
    assert len(counts) == 1 and counts.pop() > 0
    assert set(FAIR_BASELINES) <= set(out)


def _forks(world: World) -> np.ndarray:
    return np.flatnonzero(world.log.parent[: world.n] >= 0)


def _prior_means(world: World, forks: np.ndarray) -> np.ndarray:
    p = world.p
    shares = [1 - p.improve_share - p.broken_share, p.improve_share, p.broken_share]
    step = float(np.dot(shares, p.fork_step_mean))
    parents = world.log.parent[forks]
    return world.latent[parents] + world.evolvability[parents] + step


def test_the_oracle_reads_each_mark_from_the_utilities_that_give_it():
    """At every utility on its grid, the mark World.play would give is the one whose interval
    holds it (star k: cut k-1 < s ≤ cut k; thumbs up: s > 0), and no other star's."""
    stars = 1.0 + np.searchsorted(STAR_CUTS, UTILITY_GRID)
    for star in range(1, 6):
        assert np.array_equal(_rating_interval(float(star), thumb=False), stars == star)
    assert np.array_equal(_rating_interval(1.0, thumb=True), UTILITY_GRID > 0)
    assert np.array_equal(_rating_interval(0.0, thumb=True), UTILITY_GRID <= 0)


def test_without_informative_ratings_the_oracle_says_the_prior_mean():
    """Raters who give only top marks say nothing: every fork is its parent's truth plus the
    step mixture's mean."""
    world = play_uniformly(World(p := replace(SMALL, top_marks_share=1.0), draw_world(p, 3)), 3)
    forks = _forks(world)
    assert world.log.n_ratings > 0
    assert oracle_quality(world, forks) == pytest.approx(_prior_means(world, forks), abs=1e-3)


def test_the_oracle_learns_from_ratings_what_the_parent_does_not_say():
    params = replace(SMALL, users=300, sessions=6000, forks=40)
    world = play_uniformly(World(params, draw_world(params, 4)), 4)
    forks = _forks(world)
    truth = world.quality[forks]
    prior = spearmanr(truth, _prior_means(world, forks)).statistic
    oracle = spearmanr(truth, oracle_quality(world, forks)).statistic
    assert oracle > prior + 0.02


def test_the_spearman_target_names_the_oracles_lead_and_leaves_it_out_of_the_baselines():
    def young(rho):
        return {"offline_spearman_young": figure([rho])}

    target = spearman_target(
        {"sprig": young(0.90), "thompson-mean": young(0.82), ORACLE: young(0.915)}
    )
    assert target["best_baseline"] == "thompson-mean"
    assert target["gap"] == pytest.approx(0.08) and not target["met"]
    assert target["ceiling_gap"] == pytest.approx(0.095) and not target["reachable"]


def test_the_spearman_lead_is_judged_by_its_paired_standard_error():
    """Both estimators order the same young forks of a seed: a seed hard for one is hard for
    the other, so the lead is read seed by seed. Spread of ρ across seeds that the two share
    leaves the lead's error small; a lead whose 95% interval holds 0.1 is undecided."""

    def young(values):
        return {"offline_spearman_young": figure(values)}

    shared = [0.55, 0.95, 0.70, 0.85, 0.60, 0.90]  # seeds differ a lot, for both alike
    steady = spearman_target(
        {
            "sprig": young([v + 0.15 for v in shared]),
            "mean-rating": young(shared),
            ORACLE: young([v + 0.16 for v in shared]),
        }
    )
    assert steady["gap"] == pytest.approx(0.15) and steady["gap_se"] < 1e-9
    assert steady["verdict"] == "met" and steady["ceiling_verdict"] == "met"

    short = spearman_target(
        {"sprig": young([v + 0.08 for v in shared]), "mean-rating": young(shared)}
    )
    assert short["verdict"] == "missed"

    # The same +0.08 on average, but the lead itself varies from seed to seed: undecided.
    noisy_lead = [0.0, 0.2, -0.05, 0.2, 0.05, 0.08]
    noisy = spearman_target(
        {
            "sprig": young([v + d for v, d in zip(shared, noisy_lead, strict=True)]),
            "mean-rating": young(shared),
        }
    )
    assert noisy["gap"] == pytest.approx(0.08) and noisy["gap_se"] > 0.03
    assert noisy["verdict"] == "undecided"

    # A seed where either is NaN is left out of the pairs.
    gappy = spearman_target(
        {"sprig": young([0.9, float("nan"), 0.8]), "mean-rating": young([0.7, 0.6, float("nan")])}
    )
    assert gappy["gap_seeds"] == 1


def test_the_regret_ratio_is_judged_by_resampling_whole_seeds():
    def regrets(values):
        return {"regret": figure(values)}

    # Seeds differ tenfold in how hard they are, for every policy alike: the ratio is steady.
    hard = [1000.0, 9000.0, 3000.0, 6000.0, 2000.0, 8000.0]
    steady = regret_target(
        {
            "sprig": regrets([0.6 * v for v in hard]),
            "eps-greedy": regrets(hard),
            "ucb": regrets([2 * v for v in hard]),
        }
    )
    assert steady["best_fair_baseline"] == "eps-greedy"
    assert steady["ratio"] == pytest.approx(0.6)
    assert steady["ratio_interval"] == pytest.approx([0.6, 0.6])
    assert steady["verdict"] == "met"

    # The same 0.6 overall, from seeds where Sprig is far better and seeds where it is worse.
    mixed = regret_target(
        {
            "sprig": regrets([200.0, 9000.0, 600.0, 6000.0, 400.0, 1200.0]),
            "eps-greedy": regrets(hard),
        }
    )
    assert mixed["ratio"] == pytest.approx(0.6)
    low, high = mixed["ratio_interval"]
    assert low < 0.6 < 0.7 < high and mixed["verdict"] == "undecided"

    worse = regret_target({"sprig": regrets(hard), "thompson-mean": regrets(hard)})
    assert worse["verdict"] == "missed"
