"""A change drops the entries of the lineages it names and every list, and a response built
while a change to what it shows committed is never stored."""

from __future__ import annotations

import pytest

from market.platform.db import CATALOG_CHANGED
from market.platform.read_cache import (
    CHANGES_KEPT,
    EVERY_LINEAGE,
    MAX_LINEAGES_NAMED,
    ReadCache,
    lineages_of_payload,
    notification_payload,
)


@pytest.fixture
def cache() -> ReadCache:
    cache = ReadCache(ttl=60)
    cache.listening = True  # as when its listener is connected
    return cache


def _put(cache: ReadCache, key: str, lineage: int | None, generation: int | None = None) -> None:
    built_at = cache.generation if generation is None else generation
    cache.put(key, key.encode(), "application/json", None, built_at, lineage=lineage)


def _held(cache: ReadCache, *keys: str) -> list[bool]:
    return [cache.get(key) is not None for key in keys]


def test_a_change_drops_its_lineages_and_the_lists_and_nothing_else(cache):
    for key, lineage in (("water", 1), ("water tree", 1), ("meals", 2), ("sleep", 3)):
        _put(cache, key, lineage)
    _put(cache, "browse", None)
    cache.invalidate({1, 3})
    assert _held(cache, "water", "water tree", "meals", "sleep", "browse") == [
        False,
        False,
        True,
        False,
        False,
    ]
    assert cache.size_bytes == len(b"meals")
    cache.invalidate()  # every lineage
    assert _held(cache, "meals") == [False] and cache.size_bytes == 0


def test_a_response_built_across_a_change_to_what_it_shows_is_not_stored(cache):
    built_at = cache.generation
    cache.invalidate({1})
    _put(cache, "water", 1, built_at)  # may show lineage 1 before the change
    _put(cache, "browse", None, built_at)  # a list may show any lineage
    _put(cache, "meals", 2, built_at)  # lineage 2 did not change meanwhile
    assert _held(cache, "water", "browse", "meals") == [False, False, True]
    cache.invalidate()
    _put(cache, "meals again", 2, built_at)  # since then everything changed
    assert _held(cache, "meals again") == [False]


def test_a_response_older_than_the_changes_remembered_is_not_stored(cache):
    built_at = cache.generation
    for lineage in range(10, 10 + CHANGES_KEPT):
        cache.invalidate({lineage})
    _put(cache, "meals", 2, built_at)
    assert _held(cache, "meals") == [True]  # every change since is remembered: none was 2
    cache.invalidate({99_999})
    _put(cache, "sleep", 3, built_at)  # the first change since is forgotten: it might be 3
    assert _held(cache, "sleep") == [False]


def test_the_writing_process_drops_what_its_commit_changed(cache):
    _put(cache, "water", 1)
    _put(cache, "meals", 2)
    cache.after_commit(None, {CATALOG_CHANGED: {2}})
    assert _held(cache, "water", "meals") == [True, False]
    cache.after_commit(None, {"something else": {1}})
    assert _held(cache, "water") == [True]
    cache.after_commit(None, {CATALOG_CHANGED: {EVERY_LINEAGE, 5}})
    assert _held(cache, "water") == [False]


@pytest.mark.parametrize(
    ("lineages", "payload"),
    [
        ([3, 1, 3], "1,3"),
        (None, EVERY_LINEAGE),
        ([], EVERY_LINEAGE),
        (range(1, MAX_LINEAGES_NAMED + 2), EVERY_LINEAGE),  # past the payload's size
    ],
)
def test_a_notification_names_its_lineages_or_all(lineages, payload):
    assert notification_payload(lineages) == payload


@pytest.mark.parametrize(
    ("payload", "lineages"),
    [
        ("1,3", frozenset({1, 3})),
        ("42", frozenset({42})),
        (EVERY_LINEAGE, None),
        ("", None),  # an older process's notification: everything
        ("1,x", None),  # unreadable: everything, never less
        ("1,,2", None),
    ],
)
def test_a_notification_read_back_drops_at_least_what_it_named(payload, lineages):
    assert lineages_of_payload(payload) == lineages
