"""The textbook ranking schemes the simulator compares Sprig's ranking with: the Wilson lower
bound of the share of positive ratings, and the Bayesian (IMDb) average
v/(v+m)·R + m/(v+m)·C. Neither is used by the ranking itself (evolution.ranking)."""

from __future__ import annotations

import numpy as np


def wilson_lower_bound(positives: np.ndarray, n: np.ndarray, z: float = 1.2816) -> np.ndarray:
    """(p + z²/2n − z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n); 0 with no votes."""
    positives = np.asarray(positives, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    safe_n = np.maximum(n, 1.0)
    p = positives / safe_n
    centre = p + z * z / (2 * safe_n)
    spread = z * np.sqrt(p * (1 - p) / safe_n + z * z / (4 * safe_n * safe_n))
    return np.where(n > 0, (centre - spread) / (1 + z * z / safe_n), 0.0)


def bayesian_average(
    rating_sum: np.ndarray, count: np.ndarray, prior_mean: float, prior_count: float
) -> np.ndarray:
    """v/(v+m)·R + m/(v+m)·C, R = the item's mean rating, v its count, C and m the prior."""
    rating_sum = np.asarray(rating_sum, dtype=np.float64)
    count = np.asarray(count, dtype=np.float64)
    return (rating_sum + prior_count * prior_mean) / (count + prior_count)
