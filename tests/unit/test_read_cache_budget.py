"""The read cache holds at most its byte budget, dropping the least recently read first."""

from __future__ import annotations

from market.platform.read_cache import ReadCache


def _cache(max_bytes: int) -> ReadCache:
    cache = ReadCache(ttl=60, max_bytes=max_bytes, max_entry_bytes=max_bytes)
    cache.listening = True  # as when its listener is connected
    return cache


def _put(cache: ReadCache, key: str, size: int) -> None:
    cache.put(key, b"x" * size, "text/html", None, cache.generation)


def test_the_least_recently_read_go_first_once_the_bodies_pass_the_budget():
    cache = _cache(100)
    for key in ("a", "b", "c"):
        _put(cache, key, 30)
    assert cache.get("a") is not None  # read: now the most recent
    _put(cache, "d", 30)
    assert cache.size_bytes == 90
    assert cache.get("b") is None
    assert [cache.get(k) is not None for k in ("a", "c", "d")] == [True, True, True]
    _put(cache, "big", 95)  # everything else goes to make room
    assert cache.size_bytes == 95 and cache.get("a") is None and cache.get("big") is not None


def test_storing_a_key_again_counts_its_body_once():
    cache = _cache(100)
    for size in (40, 60, 20):
        _put(cache, "a", size)
    assert cache.size_bytes == 20
    _put(cache, "b", 80)
    assert cache.get("a") is not None and cache.size_bytes == 100


def test_what_is_dropped_or_refused_leaves_the_count_right():
    cache = _cache(100)
    _put(cache, "a", 50)
    _put(cache, "too big", 101)  # over the largest entry: not stored
    assert cache.size_bytes == 50 and cache.get("too big") is None
    cache.invalidate()
    assert cache.size_bytes == 0 and cache.get("a") is None
    _put(cache, "b", 10)
    stale = cache.generation
    cache.invalidate()
    cache.put("c", b"x" * 10, "text/html", None, stale)  # built before a write: not stored
    assert cache.size_bytes == 0
