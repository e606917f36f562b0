"""What one pytest-xdist worker owns on the shared test servers.

``make test`` runs the suite in several processes (``pytest -n``) against one PostgreSQL and
one Redis. Each worker gets databases of its own on both, so a worker's per-test wipe, its
demo template and its queues never touch another's: PostgreSQL database names get the
worker's id as a suffix, and Redis database numbers are offset by ``REDIS_DBS_PER_WORKER``
per worker (scripts/test-services.sh starts Redis with enough databases for that).
Without xdist (a plain ``pytest``) every name and number is unchanged.
"""

from __future__ import annotations

import os

from sqlalchemy import make_url

# Redis numbers its databases 0..N-1; a worker owns a block of this many.
REDIS_DBS_PER_WORKER = 16

WORKER_ID = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", … or "" alone


def worker_index() -> int:
    return int(WORKER_ID.removeprefix("gw")) if WORKER_ID else 0


def own_database(name: str) -> str:
    """This worker's PostgreSQL database called ``name``."""
    return f"{name}_{WORKER_ID}" if WORKER_ID else name


def own_redis_db(number: int) -> int:
    """This worker's Redis database ``number`` (0 ≤ number < REDIS_DBS_PER_WORKER)."""
    if not 0 <= number < REDIS_DBS_PER_WORKER:
        raise ValueError(f"Redis database {number} is outside a worker's block")
    return worker_index() * REDIS_DBS_PER_WORKER + number


def own_redis_url(url: str, number: int = 0) -> str:
    """``url`` (any Redis URL on the test server) pointed at this worker's database ``number``."""
    return (
        make_url(url).set(database=str(own_redis_db(number))).render_as_string(hide_password=False)
    )
