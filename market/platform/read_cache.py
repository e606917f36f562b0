"""A per-process cache of anonymous catalog reads, invalidated by PostgreSQL notifications.

Browse pages, details, lineages and trees are read far more than written and are the same for
every anonymous visitor, so each gunicorn worker keeps the rendered bodies for a few seconds.

Freshness rules:
- Only anonymous GETs (no Authorization, no cookie but the chosen language's) of
  ``/api/v1/subagents…`` and of the web pages shown alike to every anonymous reader
  (``market.web.blueprint.SHARED_PAGES``) that answered 200 without setting a cookie are
  stored, so a response that depends on who asks is never shared (the shell decides which:
  ``market.app.install_read_cache``).
- Every catalog write (publish, fork, version, listing edit, visibility change, yank,
  quarantine, adoption of a parent) and every ranking run that changes a score sends
  ``NOTIFY sprig_catalog`` inside its transaction, naming the lineages (root ids) it changed,
  or ``*`` for all of them (``Change``). Every worker LISTENs on its own connection and, when
  one arrives (within milliseconds of the commit), drops the entries of those lineages. The
  worker that made the write does the same synchronously, before it answers.
- An entry is a lineage's when its route names a sub-agent (``/subagents/<id>…``, ``/s/<id>…``)
  and so shows that sub-agent's lineage only; the shell tells ``put`` which. Scoping is what
  lets pages live their ``ttl`` while the community publishes: with every change dropping
  everything, at two publishes a second an entry lived half a second.
- Lists (browse, search, the ranking page: entries of no one lineage) are dropped too, unless
  the change only added to its lineages (a publish, a fork, a new version): then they expire
  within ``added_within`` seconds (``ADDED_WITHIN_SECONDS``) instead. What is hidden, renamed
  or re-ranked leaves every list at once; what is new reaches anonymous lists within seconds.
- A response built while a change to what it shows committed is not stored: ``put`` takes
  the generation read before the response was built and refuses when a change since then
  touched its lineage (or everything; or, for a list, dropped lists), and a list built across
  an addition expires within ``added_within`` of it. The last ``CHANGES_KEPT`` changes are
  kept to judge that; older than those, it refuses.
- While the listener is not connected, the cache is bypassed: it fails open to the database,
  never to stale data. Install counts, ratings and comments change without a notification;
  ``ttl`` bounds how late an anonymous reader sees them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, replace

from market.platform.db import CATALOG_CHANGED

CHANNEL = "sprig_catalog"
# The payload naming every lineage; otherwise root ids separated by commas, after ``+`` for a
# change that only added to them (lists are kept).
EVERY_LINEAGE = "*"
ADDED = "+"
# A notification's payload is at most 8,000 bytes: past this many lineages a change names all.
MAX_LINEAGES_NAMED = 200
# Changes remembered to judge a response built across them: minutes of them at the capacity
# plan's peak of two writes a second, where a response takes milliseconds.
CHANGES_KEPT = 1024
# How late a list may show an addition (a publish, a fork, a new version) to anonymous readers.
ADDED_WITHIN_SECONDS = 5.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    """What one committed catalog change makes stale: the entries of ``lineages`` (root ids;
    None: of every lineage) and, unless it only added to them, the lists."""

    lineages: frozenset[int] | None
    lists: bool = True

    @classmethod
    def of(cls, lineages: Iterable[int] | None, *, lists: bool = True) -> Change:
        named = frozenset(lineages) if lineages is not None else None
        if not named:
            return EVERYTHING
        return cls(named, lists)

    def stales(self, lineage: int | None) -> bool:
        """Whether an entry of ``lineage`` (None: a list) may show what this change altered."""
        if self.lineages is None:
            return True
        return self.lists if lineage is None else lineage in self.lineages

    def payload(self) -> str:
        """What the NOTIFY says: ``*`` when the lineages are all, or too many to name."""
        if self.lineages is None or len(self.lineages) > MAX_LINEAGES_NAMED:
            return EVERY_LINEAGE
        named = ",".join(str(root) for root in sorted(self.lineages))
        return named if self.lists else ADDED + named

    @classmethod
    def of_payload(cls, payload: str) -> Change:
        """The change a notification describes; everything for a payload this version cannot
        read (an older sender's empty one): the safe side is dropping more."""
        added = payload.startswith(ADDED)
        parts = payload.removeprefix(ADDED).split(",")
        if not all(part.isascii() and part.isdigit() for part in parts):
            return EVERYTHING
        return cls.of((int(part) for part in parts), lists=not added)


EVERYTHING = Change(None)


@dataclass(frozen=True)
class Entry:
    body: bytes
    content_type: str
    # What the answer varies by (a detail names the best branch in the reader's language): a
    # hit repeats it, so that a browser's or a CDN's cache keys it the same way.
    vary: str | None
    expires_at: float  # time.monotonic()
    lineage: int | None  # the root id of the lineage it shows; None: a list, of any lineage


class ReadCache:
    """Bodies by key, least recently used dropped first once they pass ``max_bytes``: a page
    is ten times a JSON detail, so a count of entries would not bound a worker's memory.

    A list outlives a change that only added to some lineages by up to ``added_within``
    seconds (it is not dropped but expires by then): a new sub-agent reaches anonymous lists
    within that time, while at the community's write rate a list dropped at every publish
    would seldom be read twice."""

    def __init__(
        self,
        ttl: float,
        max_bytes: int = 64 * 2**20,
        max_entry_bytes: int = 256_000,
        added_within: float = ADDED_WITHIN_SECONDS,
    ):
        self.ttl = ttl
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self.added_within = min(added_within, ttl)
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._keys_by_lineage: dict[int | None, set[str]] = {}
        self._bytes = 0  # of the bodies held
        self._lock = threading.Lock()
        # Counts changes heard; the last ones, numbered, with when they were heard.
        self._generation = 0
        self._changes: deque[tuple[int, Change, float]] = deque(maxlen=CHANGES_KEPT)
        self.listening = False

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, key: str) -> Entry | None:
        if not self.listening:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if time.monotonic() > entry.expires_at:
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry

    def put(
        self,
        key: str,
        body: bytes,
        content_type: str,
        vary: str | None,
        generation: int,
        *,
        lineage: int | None = None,
    ) -> None:
        """Store ``body``, built from what the database held at ``generation``, as an entry of
        ``lineage`` (None: a list, which may show any lineage)."""
        if not self.listening or len(body) > self.max_entry_bytes:
            return
        with self._lock:
            expires_at = self._expiry(generation, lineage, time.monotonic())
            if expires_at is None:
                return  # a write it may show the old side of committed while it was built
            if key in self._entries:
                self._drop(key)
            self._entries[key] = Entry(body, content_type, vary, expires_at, lineage)
            self._keys_by_lineage.setdefault(lineage, set()).add(key)
            self._bytes += len(body)
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _expiry(self, generation: int, lineage: int | None, now: float) -> float | None:
        """When an entry built at ``generation`` expires, given the changes heard since; None
        when one of them may have made it wrong already (or was forgotten)."""
        expires_at = now + self.ttl
        if generation == self._generation:
            return expires_at
        if not self._changes or self._changes[0][0] > generation + 1:
            return None
        for number, change, heard_at in reversed(self._changes):
            if number <= generation:
                break
            if change.stales(lineage):
                return None
            if lineage is None:  # a list that may lack what was added: as a kept one
                expires_at = min(expires_at, heard_at + self.added_within)
        return expires_at

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key)
        self._bytes -= len(entry.body)
        keys = self._keys_by_lineage[entry.lineage]
        keys.discard(key)
        if not keys:
            del self._keys_by_lineage[entry.lineage]

    @property
    def generation(self) -> int:
        return self._generation

    def invalidate(self, change: Change = EVERYTHING) -> None:
        """``change`` was committed: drop the entries it may have made wrong, and have the
        lists it only added to expire within ``added_within``."""
        now = time.monotonic()
        with self._lock:
            self._generation += 1
            self._changes.append((self._generation, change, now))
            if change.lineages is None:
                self._entries.clear()
                self._keys_by_lineage.clear()
                self._bytes = 0
                return
            for lineage in (*change.lineages, None) if change.lists else change.lineages:
                for key in list(self._keys_by_lineage.get(lineage, ())):
                    self._drop(key)
            if not change.lists:
                soon = now + self.added_within
                for key in self._keys_by_lineage.get(None, ()):
                    entry = self._entries[key]
                    if entry.expires_at > soon:
                        self._entries[key] = replace(entry, expires_at=soon)  # keeps its place

    def after_commit(self, _session, changes) -> None:
        """A unit of work's hook: a catalog change drops this process's entries it touched at
        once (other processes hear the NOTIFY sent in the transaction)."""
        for payload in changes.get(CATALOG_CHANGED, ()):
            self.invalidate(Change.of_payload(payload))


class NotificationListener:
    """A daemon thread that LISTENs for catalog changes and invalidates ``cache``."""

    def __init__(self, dsn: str, cache: ReadCache):
        self.dsn = dsn
        self.cache = cache
        self._stop = threading.Event()
        self._start_lock = threading.Lock()
        self._started = False
        self._thread = threading.Thread(target=self._run, name="sprig-cache-listener", daemon=True)

    def ensure_started(self) -> None:
        """Start on first use, inside the serving process (gunicorn forks after import)."""
        if self._thread.is_alive() or self._stop.is_set():
            return
        with self._start_lock:
            if not self._thread.is_alive() and not self._started:
                self._started = True
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        import psycopg

        backoff = 0.1
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=3) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    # Anything may have changed while we were not listening.
                    self.cache.invalidate()
                    self.cache.listening = True
                    backoff = 0.1
                    while not self._stop.is_set():
                        for notice in connection.notifies(timeout=1.0):
                            self.cache.invalidate(Change.of_payload(notice.payload))
                        connection.execute("SELECT 1")  # notice a dead connection promptly
            except Exception as error:
                log.warning("catalog cache listener down (%s); bypassing the cache", error)
            finally:
                self.cache.listening = False
                self.cache.invalidate()
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 5.0)
