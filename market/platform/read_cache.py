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
  or ``*`` for all of them. Every worker LISTENs on its own connection and, when one arrives
  (within milliseconds of the commit), drops the entries of those lineages and every entry
  that is not a lineage's (browse, search: any change may reorder a list). The worker that
  made the write does the same synchronously, before it answers.
- An entry is a lineage's when its route names a sub-agent (``/subagents/<id>…``, ``/s/<id>…``)
  and so shows that sub-agent's lineage only; the shell tells ``put`` which. Scoping is what
  lets a popular sub-agent's pages live their ``ttl`` while the community publishes elsewhere:
  with every change dropping everything, at two publishes a second an entry lived half a
  second.
- A response built while a change to its lineage committed is not stored: ``put`` takes the
  generation read before the response was built and refuses when a change since then touched
  that lineage (or everything). The last ``CHANGES_KEPT`` changes are kept to answer that;
  older than those, it refuses.
- While the listener is not connected, the cache is bypassed: it fails open to the database,
  never to stale data. Install counts, ratings and comments change without a notification;
  ``ttl`` bounds how late an anonymous reader sees them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from market.platform.db import CATALOG_CHANGED

CHANNEL = "sprig_catalog"
# The payload naming every lineage; otherwise the payload is root ids separated by commas.
EVERY_LINEAGE = "*"
# A notification's payload is at most 8,000 bytes: past this many lineages a change names all.
MAX_LINEAGES_NAMED = 200
# Changes remembered to judge a response built across them (a few seconds' worth at the
# capacity plan's peak of two writes a second, far more than a response takes).
CHANGES_KEPT = 1024
log = logging.getLogger(__name__)


def notification_payload(lineages: Iterable[int] | None) -> str:
    """What a change sends: the root ids it changed, or ``*`` (None, or too many to name)."""
    named = sorted(set(lineages)) if lineages is not None else None
    if not named or len(named) > MAX_LINEAGES_NAMED:
        return EVERY_LINEAGE
    return ",".join(str(root) for root in named)


def lineages_of_payload(payload: str) -> frozenset[int] | None:
    """The lineages a notification names; None for all of them, including for a payload this
    version cannot read (an older sender's empty one): the safe side is dropping more."""
    try:
        named = frozenset(int(part) for part in payload.split(","))
    except ValueError:
        return None
    return named or None


@dataclass(frozen=True)
class Entry:
    body: bytes
    content_type: str
    # What the answer varies by (a detail names the best branch in the reader's language): a
    # hit repeats it, so that a browser's or a CDN's cache keys it the same way.
    vary: str | None
    stored_at: float
    lineage: int | None  # the root id of the lineage it shows; None: every change drops it


class ReadCache:
    """Bodies by key, least recently used dropped first once they pass ``max_bytes``: a page
    is ten times a JSON detail, so a count of entries would not bound a worker's memory."""

    def __init__(self, ttl: float, max_bytes: int = 64 * 2**20, max_entry_bytes: int = 256_000):
        self.ttl = ttl
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._keys_by_lineage: dict[int | None, set[str]] = {}
        self._bytes = 0  # of the bodies held
        self._lock = threading.Lock()
        # Counts changes heard; the last ones, with the lineages each named (None: all).
        self._generation = 0
        self._changes: deque[tuple[int, frozenset[int] | None]] = deque(maxlen=CHANGES_KEPT)
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
            if time.monotonic() - entry.stored_at > self.ttl:
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
        ``lineage`` (None: of no one lineage, dropped by every change)."""
        if not self.listening or len(body) > self.max_entry_bytes:
            return
        with self._lock:
            if not self._unchanged_since(generation, lineage):
                return  # a write it may show the old side of committed while it was built
            if key in self._entries:
                self._drop(key)
            self._entries[key] = Entry(body, content_type, vary, time.monotonic(), lineage)
            self._keys_by_lineage.setdefault(lineage, set()).add(key)
            self._bytes += len(body)
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _unchanged_since(self, generation: int, lineage: int | None) -> bool:
        if generation == self._generation:
            return True
        if not self._changes or self._changes[0][0] > generation + 1:
            return False  # some of the changes since are forgotten
        for number, named in reversed(self._changes):
            if number <= generation:
                return True
            if named is None or lineage is None or lineage in named:
                return False
        return True

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

    def invalidate(self, lineages: Collection[int] | None = None) -> None:
        """A change to ``lineages`` (root ids; None: to all of them) was committed: drop their
        entries and every entry of no one lineage."""
        named = frozenset(lineages) if lineages is not None else None
        with self._lock:
            self._generation += 1
            self._changes.append((self._generation, named))
            if named is None:
                self._entries.clear()
                self._keys_by_lineage.clear()
                self._bytes = 0
                return
            for lineage in (None, *named):
                for key in list(self._keys_by_lineage.get(lineage, ())):
                    self._drop(key)

    def after_commit(self, _session, changes) -> None:
        """A unit of work's hook: a catalog change drops this process's entries it touched at
        once (other processes hear the NOTIFY sent in the transaction)."""
        lineages = changes.get(CATALOG_CHANGED)
        if lineages is not None:
            self.invalidate(None if EVERY_LINEAGE in lineages else lineages)


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
                            self.cache.invalidate(lineages_of_payload(notice.payload))
                        connection.execute("SELECT 1")  # notice a dead connection promptly
            except Exception as error:
                log.warning("catalog cache listener down (%s); bypassing the cache", error)
            finally:
                self.cache.listening = False
                self.cache.invalidate()
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 5.0)
