"""Per-client counters in fixed windows, in Redis when configured, else in-process.

Redis is shared by every worker, so a client's limit holds across the fleet. When Redis is away
(or not configured) each worker falls back to its own counter: the limit loosens by the number
of workers for that window, but requests never stall or fail on a rate limiter (fail open).
Each spend is one atomic INCRBY, so clients racing for the last units of a budget get exactly
the budget between them.

After a failed call a worker counts locally for ``REDIS_RETRY_AFTER_S`` before it asks Redis
again: Redis unreachable (packets dropped, not refused) costs each call its whole timeout, and
every request of the outage would wait for it and log it.
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger(__name__)

REDIS_RETRY_AFTER_S = 5.0


class RateLimiter:
    def __init__(self, redis_url: str = "", *, window_s: int = 60):
        self.window_s = window_s
        self._local: dict[tuple[str, int, int], int] = {}
        self._lock = threading.Lock()
        self._next_sweep = 0.0
        self._redis = None
        self._redis_retry_at = 0.0  # time.monotonic() after which Redis is asked again
        if redis_url:
            import redis

            self._redis = redis.Redis.from_url(
                redis_url, socket_timeout=0.25, socket_connect_timeout=0.25
            )

    def spend(self, key: str, amount: int, limit: int, window_s: int | None = None) -> int | None:
        """Spend ``amount`` of ``key``'s budget of ``limit`` per ``window_s`` seconds (the
        limiter's own window by default). None if allowed, else seconds to wait."""
        window_s = window_s or self.window_s
        used = self._add(key, amount, window_s)
        if used > limit:
            return window_s - int(time.time()) % window_s
        return None

    def used(self, key: str, window_s: int) -> int:
        """What ``key`` has spent in the current window of ``window_s`` seconds."""
        return self._add(key, 0, window_s)

    def _add(self, key: str, amount: int, window_s: int) -> int:
        window = int(time.time()) // window_s
        if self._redis is not None and time.monotonic() >= self._redis_retry_at:
            try:
                redis_key = f"sprig:rate:{key}:{window_s}:{window}"
                pipe = self._redis.pipeline()
                pipe.incrby(redis_key, amount)
                pipe.expire(redis_key, window_s * 2)
                return pipe.execute()[0]
            except Exception as error:
                self._redis_retry_at = time.monotonic() + REDIS_RETRY_AFTER_S
                log.warning(
                    "rate limiter: Redis unavailable (%s), counting locally for %.0f s",
                    error,
                    REDIS_RETRY_AFTER_S,
                )
        with self._lock:
            now = time.time()
            # Past windows are dropped at most once a second: a scan per request would cost
            # as much as there are clients.
            if now >= self._next_sweep:
                self._local = {k: v for k, v in self._local.items() if k[2] == int(now) // k[1]}
                self._next_sweep = now + 1
            used = self._local.get((key, window_s, window), 0) + amount
            self._local[(key, window_s, window)] = used
            return used
