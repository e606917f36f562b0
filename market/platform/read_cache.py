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
  quarantine) and every ranking run that changes a score sends ``NOTIFY sprig_catalog`` inside
  its transaction; every worker LISTENs on its own connection
  and drops its whole cache when one arrives (within milliseconds of the commit). The worker
  that made the write drops its own cache synchronously, before it answers.
- While the listener is not connected, the cache is bypassed: it fails open to the database,
  never to stale data. Install counts, ratings and comments change without a notification;
  ``ttl`` bounds how late an anonymous reader sees them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from market.platform.db import CATALOG_CHANGED

CHANNEL = "sprig_catalog"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Entry:
    body: bytes
    content_type: str
    # What the answer varies by (a detail names the best branch in the reader's language): a
    # hit repeats it, so that a browser's or a CDN's cache keys it the same way.
    vary: str | None
    stored_at: float
    generation: int


class ReadCache:
    """Bodies by key, least recently used dropped first once they pass ``max_bytes``: a page
    is ten times a JSON detail, so a count of entries would not bound a worker's memory."""

    def __init__(self, ttl: float, max_bytes: int = 64 * 2**20, max_entry_bytes: int = 256_000):
        self.ttl = ttl
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._bytes = 0  # of the bodies held
        self._lock = threading.Lock()
        self._generation = 0
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
            if (
                entry.generation != self._generation
                or time.monotonic() - entry.stored_at > self.ttl
            ):
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry

    def put(
        self, key: str, body: bytes, content_type: str, vary: str | None, generation: int
    ) -> None:
        if not self.listening or len(body) > self.max_entry_bytes:
            return
        with self._lock:
            if generation != self._generation:
                return  # a write happened while this response was being built
            if key in self._entries:
                self._drop(key)
            self._entries[key] = Entry(body, content_type, vary, time.monotonic(), generation)
            self._bytes += len(body)
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        self._bytes -= len(self._entries.pop(key).body)

    @property
    def generation(self) -> int:
        return self._generation

    def invalidate(self) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()
            self._bytes = 0

    def after_commit(self, _session, changes) -> None:
        """A unit of work's hook: a catalog change empties this process's cache at once (other
        processes hear the NOTIFY sent in the transaction)."""
        if CATALOG_CHANGED in changes:
            self.invalidate()


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
                        for _notify in connection.notifies(timeout=1.0):
                            self.cache.invalidate()
                        connection.execute("SELECT 1")  # notice a dead connection promptly
            except Exception as error:
                log.warning("catalog cache listener down (%s); bypassing the cache", error)
            finally:
                self.cache.listening = False
                self.cache.invalidate()
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 5.0)
