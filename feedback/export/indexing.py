"""Index arithmetic over numpy id arrays that the export's model and writer share."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np


def dense_index(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique ids, index of each id among them). A direct table when ids are dense (the
    usual case for database keys), a sort otherwise."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size == 0:
        return ids, ids
    low, high = int(ids.min()), int(ids.max())
    if low >= 0 and high < 4 * ids.size + 1_000_000:
        present = np.bincount(ids, minlength=high + 1) > 0
        unique = np.flatnonzero(present)
        position = np.cumsum(present) - 1
        return unique, position[ids]
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, inverse


def group_runs(groups: np.ndarray) -> Iterator[tuple[int, int, int]]:
    """(group code, start, stop) of the runs of equal codes in a sorted array."""
    if groups.size == 0:
        return
    edges = np.r_[0, np.flatnonzero(groups[1:] != groups[:-1]) + 1, groups.size]
    for start, stop in itertools.pairwise(edges):
        yield int(groups[start]), int(start), int(stop)
