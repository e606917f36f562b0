"""The demo community is pinned: a seed always yields the same community, byte for byte.

``sprig demo`` loads ``generate_community(7)`` and then plans ninety days of activity for
it with the same seed. Both are hashed here over a canonical serialization (sorted keys,
the generator's own ordering, every bundle file's bytes), so any change to the generator
code or its data files that alters what the demo contains fails these tests. A deliberate
change to the demo updates the pinned digests in the same commit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from market.demo import DemoCommunity, generate_community
from market.demo.activity import (
    SERVICE_HANDLE,
    CInstall,
    Community,
    CSubAgent,
    CUser,
    CVersion,
    plan_activity,
)

SEED = 7  # the default of ``sprig demo --seed``
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

COMMUNITY_SHA256 = "cc3597dccd3e6a2313cc161eb76275a3335582dbdf1eacfedeed4a573154c796"
SMALL_COMMUNITY_SHA256 = "6ffc4984f13b338d8c9c339cb258841f5555d960ff9763f29bc0f92633356afb"
ACTIVITY_SHA256 = "b1d441764117def0966ad9e39304305aa1e0978ca15bde04924a06a00fc4bd52"


def _canonical(value: Any) -> Any:
    """JSON-ready and order-stable: dataclasses as sorted dicts, tuples as lists,
    datetimes and UUIDs as text; sequences keep the generator's order, which the
    loader relies on (ids follow it)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)  # datetime, date, UUID


def _digest(value: Any) -> str:
    text = json.dumps(_canonical(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _snapshot(community: DemoCommunity, now: datetime) -> Community:
    """The snapshot ``read_community`` would read after ``load_demo`` at ``now``: ids in
    load order, later versions spread between a sub-agent's birth and ``now``, one
    install per (user, sub-agent)."""
    user_ids = {u.handle: i for i, u in enumerate(community.users, start=1)}
    users = tuple(CUser(user_ids[u.handle], u.handle, u.kind, u.locale) for u in community.users)
    sub_ids: dict[str, int] = {}
    depths: dict[str, int] = {}
    subagents, versions = [], []
    for s in community.subagents:
        sid = sub_ids[s.key] = len(sub_ids) + 1
        depths[s.key] = 0 if s.parent is None else depths[s.parent] + 1
        subagents.append(
            CSubAgent(
                sid,
                user_ids[s.author],
                sub_ids[s.parent] if s.parent else None,
                depths[s.key],
                s.category,
                s.visibility,
                s.tags,
            )
        )
        created = now - timedelta(days=s.created_days_ago)
        for step in range(len(s.versions)):
            at = created + (now - created) * step / len(s.versions)
            versions.append(CVersion(len(versions) + 1, sid, at))
    installs, seen = [], set()
    for i in community.installs:
        pair = (user_ids[i.user], sub_ids[i.subagent])
        if pair not in seen:
            seen.add(pair)
            installs.append(CInstall(len(installs) + 1, *pair, now - timedelta(days=i.days_ago)))
    return Community(
        users, tuple(subagents), tuple(versions), tuple(installs), user_ids[SERVICE_HANDLE]
    )


@pytest.fixture(scope="module")
def community() -> DemoCommunity:
    return generate_community(SEED)


def test_the_demo_community_is_pinned(community: DemoCommunity) -> None:
    assert _digest(community) == COMMUNITY_SHA256


def test_a_small_community_of_another_seed_is_pinned() -> None:
    assert _digest(generate_community(3, n_users=120, n_subagents=40)) == SMALL_COMMUNITY_SHA256


def test_the_demo_activity_plan_is_pinned(community: DemoCommunity) -> None:
    plan = plan_activity(_snapshot(community, NOW), SEED, now=NOW)
    assert plan.event_count() > 0 and plan.rating_count() > 0
    assert _digest(plan) == ACTIVITY_SHA256
