"""The rate limiter while Redis does not answer: it counts locally, and after one failed call it
stops asking Redis for a while, so that a request of the outage neither waits for a timeout
nor writes a log line."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from market.platform import ratelimit
from market.platform.ratelimit import RateLimiter


class SilentServer:
    """A TCP port that accepts connections and never answers: Redis hung, or its packets
    dropped on the way. Counts the connections made to it."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            self.held.append(connection)

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()


@pytest.fixture
def silent_redis():
    server = SilentServer()
    yield server
    server.close()


def test_an_unanswering_redis_is_asked_once_then_counted_locally(silent_redis, caplog):
    limiter = RateLimiter(f"redis://127.0.0.1:{silent_redis.port}/0")
    with caplog.at_level(logging.WARNING, logger=ratelimit.__name__):
        verdicts = [limiter.spend("client-a", 1, limit=5) for _ in range(8)]
    # The local count still limits: five allowed, then a wait.
    assert verdicts[:5] == [None] * 5
    assert all(wait is not None and wait > 0 for wait in verdicts[5:])
    assert silent_redis.connections == 1
    assert len([r for r in caplog.records if "Redis unavailable" in r.getMessage()]) == 1


def test_redis_is_asked_again_once_the_pause_is_over(silent_redis, monkeypatch):
    monkeypatch.setattr(ratelimit, "REDIS_RETRY_AFTER_S", 0.3)
    limiter = RateLimiter(f"redis://127.0.0.1:{silent_redis.port}/0")
    limiter.spend("client-a", 1, limit=100)
    limiter.spend("client-a", 1, limit=100)
    assert silent_redis.connections == 1
    time.sleep(0.4)
    limiter.spend("client-a", 1, limit=100)
    assert silent_redis.connections == 2
