"""bench.baselines: the reference ranking schemes the simulator compares with, on textbook
values."""

from __future__ import annotations

import math

import pytest

from bench.baselines import bayesian_average, wilson_lower_bound


def test_wilson_lower_bound_textbook_values():
    # 95% Wilson interval for 5 of 10 is [0.2366, 0.7634]; 0 of 10 starts at 0.
    assert wilson_lower_bound(5, 10, z=1.96) == pytest.approx(0.2366, abs=1e-4)
    assert wilson_lower_bound(0, 10, z=1.96) == pytest.approx(0.0, abs=1e-12)
    assert wilson_lower_bound(0, 0) == 0.0
    # The default z = 1.2816 (Reddit's "best"): the same share with more votes scores higher.
    assert wilson_lower_bound(90, 100) > wilson_lower_bound(9, 10)
    p, n, z = 0.9, 10, 1.2816
    by_hand = (p + z * z / (2 * n) - z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n
    )
    assert wilson_lower_bound(9, 10) == pytest.approx(by_hand)


def test_bayesian_average_textbook_values():
    # 10 votes averaging 4 with prior mean 3 weighted as 5 votes: (40 + 15) / 15.
    assert bayesian_average(40.0, 10.0, 3.0, 5.0) == pytest.approx(55 / 15)
    assert bayesian_average(0.0, 0.0, 3.0, 5.0) == pytest.approx(3.0)
