"""Stored rater leniencies looked up for a run's raters, as arrays."""

from __future__ import annotations

import numpy as np

from market.ranking.services import offsets_by_index


def test_each_rater_gets_its_stored_offset_and_a_new_rater_zero():
    stored = {5: 1.5, 2: -0.5, 9: 0.25}
    raters = np.array([2, 3, 9, 5, 100, 0])
    assert offsets_by_index(stored, raters).tolist() == [-0.5, 0.0, 0.25, 1.5, 0.0, 0.0]


def test_the_lookup_equals_a_dict_lookup_per_rater():
    rng = np.random.default_rng(3)
    stored = {
        int(k): float(v)
        for k, v in zip(rng.choice(10**6, 5000), rng.normal(size=5000), strict=True)
    }
    raters = rng.choice(10**6, 20_000)
    expected = [stored.get(int(u), 0.0) for u in raters]
    assert offsets_by_index(stored, raters).tolist() == expected
