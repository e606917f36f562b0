"""Per-client rate limits: fixed one-minute windows, in Redis when configured, else in-process.

Redis is shared by every worker, so a client's limit holds across the fleet. When Redis is away
(or not configured) each worker falls back to its own counter: the limit loosens by the number
of workers for that minute, but ingestion never stalls on a rate limiter.
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger(__name__)


class RateLimiter:
    def __init__(self, redis_url: str = "", *, window_s: int = 60):
        self.window_s = window_s
        self._local: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()
        self._redis = None
        if redis_url:
            import redis

            self._redis = redis.Redis.from_url(
                redis_url, socket_timeout=0.25, socket_connect_timeout=0.25
            )

    def spend(self, key: str, amount: int, limit: int) -> int | None:
        """Spend ``amount`` of ``key``'s budget. None if allowed, else seconds to wait."""
        window = int(time.time()) // self.window_s
        used = None
        if self._redis is not None:
            try:
                redis_key = f"sprig:rate:{key}:{window}"
                pipe = self._redis.pipeline()
                pipe.incrby(redis_key, amount)
                pipe.expire(redis_key, self.window_s * 2)
                used = pipe.execute()[0]
            except Exception as error:
                log.warning("rate limiter: Redis unavailable (%s), counting locally", error)
        if used is None:
            with self._lock:
                for stale in [k for k in self._local if k[1] != window]:
                    del self._local[stale]
                used = self._local.get((key, window), 0) + amount
                self._local[(key, window)] = used
        if used > limit:
            return self.window_s - int(time.time()) % self.window_s
        return None
