"""evolution.explore: Thompson slates with a young-fork share, and their logged propensities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evolution.explore import (
    POLICY_VERSION,
    SD_SCALE,
    choose_slate,
    thompson_slates,
    young_slot_probability,
)


def catalog(seed: int = 0, n: int = 30):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.uniform(0.05, 1.0, n), rng.random(n) < 0.3


def test_same_seed_same_slate_and_propensities():
    mean, sd, young = catalog()
    candidates = np.arange(3, 27)
    first = choose_slate(candidates, mean, sd, k=3, rng=np.random.default_rng(42), young_mask=young)
    again = choose_slate(candidates, mean, sd, k=3, rng=np.random.default_rng(42), young_mask=young)
    assert np.array_equal(first.items, again.items)
    assert np.array_equal(first.propensity, again.propensity)
    assert np.array_equal(first.slot_distribution, again.slot_distribution)
    assert first.policy_version == POLICY_VERSION
    assert set(first.items.tolist()) <= set(candidates.tolist())
    assert len(set(first.items.tolist())) == 3


def test_each_slot_distribution_sums_to_one_and_covers_the_pick():
    mean, sd, young = catalog(1)
    candidates = np.arange(30)
    for seed in range(20):
        slate = choose_slate(
            candidates,
            mean,
            sd,
            k=4,
            rng=np.random.default_rng(seed),
            young_mask=young,
            young_share=0.3,
            n_draws=500,
        )
        assert slate.slot_distribution.sum(axis=1) == pytest.approx(np.ones(4), abs=1e-12)
        assert np.all(slate.propensity > 0)
        positions = np.searchsorted(candidates, slate.items)
        assert slate.propensity == pytest.approx(slate.slot_distribution[np.arange(4), positions])
        # Items already placed cannot be chosen again.
        for slot in range(1, 4):
            assert np.all(slate.slot_distribution[slot, positions[:slot]] == 0)


@pytest.mark.parametrize("sd_scale", [SD_SCALE, 1.0])
def test_first_slot_propensity_matches_the_closed_form_for_two_candidates(sd_scale):
    # Two candidates, no young share, draws at τ·sd: P(A wins) = Φ((m_A − m_B) / τ√(s_A² + s_B²)).
    mean, sd = np.array([0.3, 0.0]), np.array([0.5, 0.4])
    slate = choose_slate(
        np.arange(2),
        mean,
        sd,
        k=1,
        rng=np.random.default_rng(0),
        young_mask=np.zeros(2, bool),
        young_share=0.0,
        n_draws=200_000,
        sd_scale=sd_scale,
    )
    z = 0.3 / (sd_scale * math.sqrt(0.25 + 0.16))
    expected = 0.5 * math.erfc(-z / math.sqrt(2))
    assert slate.slot_distribution[0, 0] == pytest.approx(expected, abs=0.005)


def test_logged_propensity_matches_how_often_the_policy_shows_an_item():
    mean, sd = np.array([0.5, 0.4, 0.0, -0.5]), np.array([0.3, 0.5, 0.6, 0.2])
    young = np.array([False, False, True, True])
    shown_first = np.zeros(4)
    shown_second_after_0 = np.zeros(4)
    n = 4000
    for seed in range(n):
        items = choose_slate(
            np.arange(4),
            mean,
            sd,
            k=2,
            rng=np.random.default_rng(seed),
            young_mask=young,
            young_share=0.25,
            n_draws=10,
        ).items
        shown_first[items[0]] += 1
        if items[0] == 0:
            shown_second_after_0[items[1]] += 1
    # A reference slate, with many draws, that also put item 0 first: its second-slot
    # distribution is the one conditional on item 0 being placed.
    reference = next(
        slate
        for seed in range(10**6, 10**6 + 50)
        if (
            slate := choose_slate(
                np.arange(4),
                mean,
                sd,
                k=2,
                rng=np.random.default_rng(seed),
                young_mask=young,
                young_share=0.25,
                n_draws=100_000,
            )
        ).items[0]
        == 0
    )
    assert shown_first / n == pytest.approx(reference.slot_distribution[0], abs=0.03)
    conditional = shown_second_after_0 / shown_second_after_0.sum()
    assert conditional == pytest.approx(reference.slot_distribution[1], abs=0.04)


def test_young_slot_probabilities():
    assert young_slot_probability(2, 0.15).tolist() == pytest.approx([0.0, 0.3])
    assert young_slot_probability(10, 0.15).tolist() == pytest.approx([0] * 8 + [0.5, 1.0])
    for k, share in ((1, 0.15), (3, 0.5), (7, 0.2)):
        assert young_slot_probability(k, share).sum() == pytest.approx(k * share)


def test_young_share_is_respected_on_average():
    mean, sd, young = catalog(2, n=60)
    mean = mean + 3.0 * ~young  # established items would win every open draw
    slates, young_slot = thompson_slates(
        mean,
        sd,
        n_slates=20_000,
        k=2,
        rng=np.random.default_rng(3),
        young_mask=young,
        young_share=0.15,
    )
    assert young_slot.mean() * 2 == pytest.approx(0.3, abs=0.02)
    assert young[slates].mean() == pytest.approx(0.15, abs=0.01)
    assert np.all(young[slates[young_slot]])  # reserved slots hold young forks
    assert not young_slot[:, 0].any()  # reserved slots are the last ones
    assert np.all(slates[:, 0] != slates[:, 1])


def test_without_young_candidates_reserved_slots_fall_back_to_everyone():
    mean, sd, _ = catalog(3, n=10)
    slates, young_slot = thompson_slates(
        mean,
        sd,
        n_slates=500,
        k=2,
        rng=np.random.default_rng(0),
        young_mask=np.zeros(10, bool),
        young_share=0.5,
    )
    assert young_slot[:, 1].all()
    assert np.all(slates >= 0)
    slate = choose_slate(
        np.arange(10),
        mean,
        sd,
        k=2,
        rng=np.random.default_rng(0),
        young_mask=np.zeros(10, bool),
        young_share=0.5,
    )
    assert slate.slot_distribution.sum(axis=1) == pytest.approx([1.0, 1.0])


def test_fewer_candidates_than_slots():
    mean, sd, young = catalog(4, n=5)
    slate = choose_slate(
        np.array([1, 3]), mean, sd, k=4, rng=np.random.default_rng(0), young_mask=young
    )
    assert sorted(slate.items.tolist()) == [1, 3]
    assert slate.slot_distribution.shape == (2, 2)
    slates, _ = thompson_slates(
        mean[:2],
        sd[:2],
        n_slates=3,
        k=4,
        rng=np.random.default_rng(0),
        young_mask=young[:2],
    )
    assert np.all(slates[:, 2:] == -1)


def test_thompson_prefers_the_better_item_in_proportion_to_certainty():
    mean, sd = np.array([1.0, 0.0, -3.0]), np.array([0.1, 1.0, 0.1])
    slates, _ = thompson_slates(
        mean,
        sd,
        n_slates=20_000,
        k=1,
        rng=np.random.default_rng(1),
        young_mask=np.zeros(3, bool),
        young_share=0.0,
    )
    share = np.bincount(slates[:, 0], minlength=3) / 20_000
    p_uncertain_wins = 0.5 * math.erfc((1.0 / (SD_SCALE * math.sqrt(1.01))) / math.sqrt(2))
    assert share[1] == pytest.approx(p_uncertain_wins, abs=0.01)
    assert share[2] == 0.0
