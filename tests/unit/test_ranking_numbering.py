"""A run's sub-agents numbered level by level (``numbered_by_level``), and what that numbering
must not change: the stored rows (in id order, each with its own figures) and the lineages a
run names as changed."""

from __future__ import annotations

import numpy as np

from evolution.ranking import Ratings
from evolution.tree import Forest
from market.ranking.services import (
    RankingInputs,
    compute,
    lineages_of_rows,
    numbered_by_level,
    score_rows,
)


def catalog() -> RankingInputs:
    """Families whose ids interleave, so level order is not id order: root 10, its fork 11,
    root 12, a fork 13 of 11, a fork 14 of 12, root 15; rated and used a little each."""
    ids = np.array([10, 11, 12, 13, 14, 15])
    parents = np.array([-1, 10, -1, 11, 12, -1])
    rng = np.random.default_rng(4)
    items = np.repeat(np.arange(6), 6)
    return RankingInputs(
        forest=Forest.from_parents(ids, parents),
        eligible=np.array([True, True, True, False, True, True]),
        item_age_days=np.array([90.0, 40, 80, 3, 10, 1]),
        ratings=Ratings(
            user_idx=np.tile(np.arange(6), 6),
            item_idx=items,
            value=rng.integers(1, 6, items.size).astype(np.float64),
            is_thumb=np.zeros(items.size, bool),
            age_days=rng.uniform(0, 60, items.size),
        ),
        user_ids=np.arange(100, 106),
        usage_item=np.array([0, 1, 1, 2, 4, 5, 3]),
        usage_user=np.array([100, 101, 102, 100, 103, 104, 105]),
        usage_age=np.array([1.0, 2, 9, 30, 3, 4, 5]),
        watermark={},
    )


def test_numbering_by_level_moves_every_per_node_input_with_its_node():
    by_id = catalog()
    by_level = numbered_by_level(by_id)
    assert by_level.forest.ids.tolist() == [10, 12, 15, 11, 14, 13]
    assert np.array_equal(by_level.forest.order, np.arange(6))
    new_of_old = by_level.forest.index_of(by_id.forest.ids)
    assert np.array_equal(by_level.eligible[new_of_old], by_id.eligible)
    assert np.array_equal(by_level.item_age_days[new_of_old], by_id.item_age_days)
    assert np.array_equal(by_level.ratings.item_idx, new_of_old[by_id.ratings.item_idx])
    assert np.array_equal(by_level.usage_item, new_of_old[by_id.usage_item])
    assert by_level.ratings.value is by_id.ratings.value  # the rows keep their order


def test_the_stored_rows_do_not_depend_on_the_numbering():
    by_id = catalog()
    by_level = numbered_by_level(by_id)
    rows = score_rows(by_level, compute(by_level, {}, seed=3))
    assert [row[0] for row in rows] == [10, 11, 12, 13, 14, 15]  # id order, as the key is
    assert rows == score_rows(by_id, compute(by_id, {}, seed=3))


def test_changed_rows_name_their_own_lineages():
    """Row k of ``score_rows`` is the k-th id, wherever the numbering put it."""
    inputs = numbered_by_level(catalog())
    assert lineages_of_rows(inputs, [2]) == [12]  # id 12, a root stored third
    assert lineages_of_rows(inputs, [3]) == [10]  # id 13, grandchild of root 10
    assert lineages_of_rows(inputs, [4, 5]) == [12, 15]
    assert lineages_of_rows(inputs, []) == []
