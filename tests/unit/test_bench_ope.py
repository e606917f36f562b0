"""bench/ope.py on a tiny simulated world: the slot distributions it evaluates with, and the
logging policy estimated at exactly its own observed mean."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from bench.ope import CANDIDATES, LOGGING, run_seed, slot_distribution, slot_wins, warm_up
from bench.sim_world import WorldParams

TINY = WorldParams(users=80, roots=8, forks=8, sessions=900, young_share=0.15)


@pytest.fixture(scope="module")
def frozen():
    return warm_up(TINY, seed=1, eval_sessions=300)


def test_every_candidate_slot_distribution_sums_to_one_and_skips_placed_items(frozen):
    wins = slot_wins(frozen, 2000, np.random.default_rng(0))
    for name in CANDIDATES:
        for placed in ((), (0,), (3,)):
            p = slot_distribution(name, frozen, wins, placed, TINY.slate)
            assert p.sum() == pytest.approx(1.0), name
            assert np.all(p[list(placed)] == 0), name


def test_tempered_one_is_the_logging_policy(frozen):
    wins = slot_wins(frozen, 2000, np.random.default_rng(0))
    logging = slot_distribution(LOGGING, frozen, wins, (2,), TINY.slate)
    tempered = slot_distribution("tempered-1", frozen, wins, (2,), TINY.slate)
    assert tempered == pytest.approx(logging)


def test_a_narrower_spread_shows_the_posterior_best_more_often(frozen):
    wins = slot_wins(frozen, 20_000, np.random.default_rng(0))
    best = int(np.argmax(frozen.mean))
    chances = [
        slot_distribution(name, frozen, wins, (), TINY.slate)[best]
        for name in ("sd-0.25", LOGGING, "sd-1")
    ]
    assert chances[0] > chances[1] > chances[2]


def test_the_logging_policy_is_estimated_at_its_observed_mean():
    args = argparse.Namespace(mc_draws=2000, weight_cap=100.0, truth_runs=2)
    run = run_seed(TINY, 1, 300, args)
    logged = run["candidates"][LOGGING]
    assert logged["ips"]["value"] == pytest.approx(run["observed_mean"], abs=1e-12)
    assert logged["snips"]["value"] == pytest.approx(run["observed_mean"], abs=1e-12)
    assert logged["ips"]["effective_sample_size"] == pytest.approx(300 * TINY.slate)
    assert logged["unsupported"] == 0.0
    # Uniform slates reach sub-agents Thompson never shows: the log cannot see all of them.
    assert run["candidates"]["uniform"]["unsupported"] > 0.0
    for name in CANDIDATES:
        assert 0.0 < run["candidates"][name]["true"] < 1.0
