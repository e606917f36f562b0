"""Every preference pair carries a prompt both of its sides answer, never the bare category,
and co-rated candidates come from each user's ratings within one category (feedback.rewards,
module docstring 2 and 5)."""

from __future__ import annotations

import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from bench.export import SyntheticTexts, inputs_from_world, simulated_world
from evolution.tree import Forest
from feedback import rewards
from feedback.export import ExportParameters, RewardExport
from feedback.rewards import RatingArrays
from feedback.scrub import Scrubber

GENERIC = re.compile(r"^Write an? \w+ mini-app\.$")

# Node ids equal indices. Two lineages:
#   0 ─┬─ 1 ─┬─ 3 ── 6          7 ── 8
#      │     └─ 4
#      └─ 2 ── 5
PARENTS = np.array([-1, 0, 0, 1, 1, 2, 3, -1, 7])


@pytest.fixture(scope="module")
def forest() -> Forest:
    ids = np.arange(PARENTS.size, dtype=np.int64)
    return Forest.from_parents(ids, np.where(PARENTS >= 0, PARENTS, -1).astype(np.int64))


@pytest.mark.parametrize(
    ("chosen", "rejected", "context", "why"),
    [
        (3, 1, 3, "a child against its parent: the child's request"),
        (1, 3, 3, "the same, the parent chosen"),
        (3, 4, 1, "siblings: their parent"),
        (6, 4, 1, "a grandchild and its parent's sibling: their common ancestor"),
        (6, 5, 0, "cousins in two branches: the root"),
        (0, 6, 6, "an ancestor against its descendant: the descendant"),
        (6, 8, 6, "two lineages: the chosen side's own request"),
        (8, 6, 8, "two lineages, the other way round"),
    ],
)
def test_the_prompt_comes_from_a_version_both_sides_answer(forest, chosen, rejected, context, why):
    found = rewards.prompt_versions(forest, np.array([chosen]), np.array([rejected]))
    assert found.tolist() == [context], why


def test_prompt_versions_of_many_pairs_at_once_match_one_at_a_time(forest):
    rng = np.random.default_rng(3)
    chosen = rng.integers(0, forest.n, 200)
    rejected = rng.integers(0, forest.n, 200)
    together = rewards.prompt_versions(forest, chosen, rejected)
    one_by_one = [
        int(rewards.prompt_versions(forest, chosen[i : i + 1], rejected[i : i + 1])[0])
        for i in range(200)
    ]
    assert together.tolist() == one_by_one
    assert rewards.prompt_versions(forest, np.zeros(0, int), np.zeros(0, int)).size == 0


def test_a_users_ratings_propose_pairs_within_each_category():
    # One user rated four versions of category 0 and four of category 1, in every order the
    # shuffle could give: the candidates are 3 + 3 pairs, each inside one category.
    item = np.arange(8, dtype=np.int64)
    category = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    ratings = RatingArrays(np.zeros(8, np.int64), item, np.full(8, 4), unique_pairs=True)
    pairs, proposers = rewards.co_rated_candidates(
        ratings, np.ones(8, bool), category, np.zeros(8, bool)
    )
    assert len(pairs) == 6 and proposers.tolist() == [1] * 6
    assert (category[pairs[:, 0]] == category[pairs[:, 1]]).all()
    # Each category's four versions are chained: every one of them is in a pair.
    for code in (0, 1):
        chained = pairs[category[pairs[:, 0]] == code]
        assert set(chained.ravel().tolist()) == set(item[category == code].tolist())


def test_pairs_never_cross_a_split():
    category = np.zeros(6, np.int64)
    test = np.array([True, False, True, False, True, False])
    ratings = RatingArrays(np.zeros(6, np.int64), np.arange(6), np.full(6, 3), unique_pairs=True)
    pairs, _ = rewards.co_rated_candidates(ratings, np.ones(6, bool), category, test)
    assert len(pairs) == 4 and (test[pairs[:, 0]] == test[pairs[:, 1]]).all()


def test_every_exported_pair_carries_its_context_versions_own_prompt(tmp_path):
    catalog, feedback, _quality = inputs_from_world(simulated_world(2, sessions=8_000, forks=80))
    export = RewardExport(catalog, feedback, ExportParameters(), pseudonym_key=b"k" * 32)
    texts = SyntheticTexts(catalog)
    export.write(tmp_path, texts)
    counts = export.model_summary()["pairs"]
    assert counts["co_rated"] > 0 and counts["sibling"] > 0 and counts["parent_child"] > 0

    index = {int(v): i for i, v in enumerate(catalog.version_id)}
    scrubber = Scrubber()
    rows = 0
    for path in sorted(tmp_path.rglob("*.parquet")):
        if path.relative_to(tmp_path).parts[0] != "pairwise":
            continue  # another kind, or the pairs' compact or conversational copy
        table = pq.read_table(path)
        for row in table.select(["prompt", "chosen_version_id", "rejected_version_id"]).to_pylist():
            chosen, rejected = index[row["chosen_version_id"]], index[row["rejected_version_id"]]
            (context,) = rewards.prompt_versions(export.forest, [chosen], [rejected])
            vid = int(catalog.version_id[context])
            expected = scrubber.scrub(rewards.version_prompt(texts.versions([vid])[vid]))
            assert row["prompt"] == expected
            assert not GENERIC.match(row["prompt"])
            rows += 1
    assert rows == len(export.pairs)
