"""A change drops the entries of the lineages it names and the lists (or, when it only added
to its lineages, has the lists expire within seconds), and a response built while a change to
what it shows committed is never stored as if it were fresh."""

from __future__ import annotations

import pytest

from market.platform import read_cache
from market.platform.db import CATALOG_CHANGED
from market.platform.read_cache import (
    CHANGES_KEPT,
    EVERY_LINEAGE,
    EVERYTHING,
    MAX_LINEAGES_NAMED,
    Change,
    ReadCache,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(read_cache.time, "monotonic", clock)
    return clock


@pytest.fixture
def cache(clock) -> ReadCache:
    cache = ReadCache(ttl=60, added_within=5)
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
    cache.invalidate(Change.of({1, 3}))
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


def test_an_addition_drops_its_lineage_and_lists_expire_within_seconds(cache, clock):
    """A fork shows at once on its lineage's pages and within ``added_within`` in lists, which
    are not re-read at every publish of a busy community."""
    _put(cache, "water", 1)
    _put(cache, "meals", 2)
    _put(cache, "browse", None)
    clock.now += 1
    cache.invalidate(Change.of({1}, lists=False))
    assert _held(cache, "water", "meals", "browse") == [False, True, True]
    clock.now += 4.9
    assert _held(cache, "browse", "meals") == [True, True]
    cache.invalidate(Change.of({2}, lists=False))  # a later addition does not extend it
    clock.now += 0.2
    assert _held(cache, "browse") == [False]
    assert _held(cache, "meals") == [False]
    _put(cache, "browse", None)  # stored after both: its whole time
    clock.now += 59
    assert _held(cache, "browse") == [True]


def test_a_response_built_across_a_change_to_what_it_shows_is_not_stored(cache, clock):
    built_at = cache.generation
    cache.invalidate(Change.of({1}))
    _put(cache, "water", 1, built_at)  # may show lineage 1 before the change
    _put(cache, "browse", None, built_at)  # a list may show any lineage
    _put(cache, "meals", 2, built_at)  # lineage 2 did not change meanwhile
    assert _held(cache, "water", "browse", "meals") == [False, False, True]
    cache.invalidate()
    _put(cache, "meals again", 2, built_at)  # since then everything changed
    assert _held(cache, "meals again") == [False]


def test_a_list_built_across_an_addition_expires_as_a_kept_one_would(cache, clock):
    built_at = cache.generation
    cache.invalidate(Change.of({1}, lists=False))  # heard at 1000.0
    clock.now += 3
    _put(cache, "browse", None, built_at)  # may lack the addition: stored until 1005.0
    _put(cache, "water", 1, built_at)  # may lack it on its own lineage's page: refused
    assert _held(cache, "browse", "water") == [True, False]
    clock.now += 2.1
    assert _held(cache, "browse") == [False]


def test_a_response_older_than_the_changes_remembered_is_not_stored(cache):
    built_at = cache.generation
    for lineage in range(10, 10 + CHANGES_KEPT):
        cache.invalidate(Change.of({lineage}))
    _put(cache, "meals", 2, built_at)
    assert _held(cache, "meals") == [True]  # every change since is remembered: none was 2
    cache.invalidate(Change.of({99_999}))
    _put(cache, "sleep", 3, built_at)  # the first change since is forgotten: it might be 3
    assert _held(cache, "sleep") == [False]


def test_the_writing_process_drops_what_its_commit_changed(cache):
    _put(cache, "water", 1)
    _put(cache, "meals", 2)
    _put(cache, "browse", None)
    cache.after_commit(None, {CATALOG_CHANGED: {"+2"}})  # an addition: lists kept
    assert _held(cache, "water", "meals", "browse") == [True, False, True]
    cache.after_commit(None, {"something else": {"1"}})
    assert _held(cache, "water") == [True]
    cache.after_commit(None, {CATALOG_CHANGED: {"+3", "1"}})
    assert _held(cache, "water", "browse") == [False, False]
    _put(cache, "meals", 2)
    cache.after_commit(None, {CATALOG_CHANGED: {EVERY_LINEAGE, "5"}})
    assert _held(cache, "meals") == [False]


@pytest.mark.parametrize(
    ("change", "payload"),
    [
        (Change.of([3, 1, 3]), "1,3"),
        (Change.of([7], lists=False), "+7"),
        (Change.of(None), EVERY_LINEAGE),
        (Change.of([], lists=False), EVERY_LINEAGE),  # nothing named: everything
        (Change.of(range(1, MAX_LINEAGES_NAMED + 2)), EVERY_LINEAGE),  # past the payload's size
    ],
)
def test_a_notification_names_its_lineages_or_all(change, payload):
    assert change.payload() == payload


@pytest.mark.parametrize(
    ("payload", "change"),
    [
        ("1,3", Change(frozenset({1, 3}))),
        ("+42", Change(frozenset({42}), lists=False)),
        (EVERY_LINEAGE, EVERYTHING),
        ("", EVERYTHING),  # an older process's notification: everything
        ("+", EVERYTHING),
        ("1,x", EVERYTHING),  # unreadable: everything, never less
        ("1,,2", EVERYTHING),
        ("++1", EVERYTHING),
    ],
)
def test_a_notification_read_back_drops_at_least_what_it_named(payload, change):
    assert Change.of_payload(payload) == change
