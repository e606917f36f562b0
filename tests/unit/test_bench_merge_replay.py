"""bench/merge_replay.py: its oracle catches wrong merges, and every upstream edit edits."""

from __future__ import annotations

import copy
from random import Random

import pytest

from bench.merge_replay import EDITS, _clean_text_is_wrong, _needless, new_version, replay
from market.demo import generate_community

BASE = "".join(f"{c}\n" for c in "abcdefg")
UPSTREAM = BASE.replace("b\n", "B\n")
FORK = BASE.replace("f\n", "F\n")


def test_oracle_accepts_both_edits_and_rejects_a_merge_missing_or_duplicating_one() -> None:
    assert not _clean_text_is_wrong(BASE, UPSTREAM, FORK, BASE.replace("b", "B").replace("f", "F"))
    assert _clean_text_is_wrong(BASE, UPSTREAM, FORK, UPSTREAM)  # the fork's edit lost
    assert _clean_text_is_wrong(BASE, UPSTREAM, FORK, FORK)  # the parent's edit lost
    kept_removed = BASE.replace("b\n", "B\n").replace("f\n", "F\nf\n")
    assert _clean_text_is_wrong(BASE, UPSTREAM, FORK, kept_removed)


def test_needless_means_the_edits_are_far_apart() -> None:
    assert _needless(BASE, UPSTREAM, FORK)
    assert not _needless(BASE, BASE.replace("c\n", "C\n"), BASE.replace("d\n", "D\n"))


@pytest.fixture(scope="module")
def root_snapshot():
    community = generate_community(7)
    root = next(s for s in community.subagents if s.parent is None)
    last = root.versions[-1]
    return last.manifest, last.files


@pytest.mark.parametrize("kind", sorted(EDITS))
def test_every_edit_changes_the_version(kind, root_snapshot) -> None:
    manifest, files = copy.deepcopy(root_snapshot)
    EDITS[kind](Random(1), manifest, files)
    assert (manifest, files) != root_snapshot


def test_new_version_leaves_the_base_untouched(root_snapshot) -> None:
    before = copy.deepcopy(root_snapshot)
    for seed in range(20):
        upstream, kinds = new_version(Random(seed), root_snapshot)
        assert 1 <= len(kinds) <= 2
        assert upstream != before
    assert root_snapshot == before


def test_replay_on_a_few_roots_merges_every_direct_fork_without_a_wrong_merge() -> None:
    run = replay(7, roots_limit=4)
    assert run["merges"] > 0
    assert run["invalid_upstream"] == run["invalid_merged"] == 0
    assert all(row["wrong"] == 0 for row in run["by_type"].values())
    assert run["by_type"]["manifest"]["files"] == run["merges"]
