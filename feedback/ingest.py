"""Validation of usage-event and feedback batches: pure, no I/O.

A batch is checked item by item: one malformed event is rejected with its reason and the rest
go on. What needs the database (does the user exist, may this client see that sub-agent) is
decided by the service with the ids this module extracts.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

EVENT_KINDS = frozenset({"open", "action", "session_end", "error", "uninstall"})
MAX_BATCH_EVENTS = 1000
MAX_PROPERTIES_BYTES = 1024
MAX_DURATION_MS = 24 * 3600 * 1000
# Clocks drift and phones queue events offline: accept a week back, five minutes ahead.
MAX_EVENT_AGE = timedelta(days=7)
MAX_CLOCK_SKEW = timedelta(minutes=5)
EVENT_FIELDS = frozenset(
    {
        "event_id",
        "user_id",
        "subagent_id",
        "version_id",
        "kind",
        "occurred_at",
        "duration_ms",
        "properties",
        "exposure_id",
    }
)


@dataclass(frozen=True)
class EventRow:
    event_id: uuid.UUID
    user_id: int
    subagent_id: int
    version_id: int
    kind: str
    occurred_at: datetime
    duration_ms: int | None
    properties: dict
    exposure_id: uuid.UUID | None


@dataclass(frozen=True)
class Rejection:
    index: int
    event_id: str | None
    reason: str


def _uuid(value: object) -> uuid.UUID | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def _positive_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31:
        return None
    return value


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return parsed.astimezone(UTC)


def parse_event(index: int, raw: object, now: datetime) -> EventRow | Rejection:
    """One event, or the reason it cannot be stored."""
    if not isinstance(raw, dict):
        return Rejection(index, None, "an event is a JSON object")
    event_id = _uuid(raw.get("event_id"))
    shown_id = raw.get("event_id") if isinstance(raw.get("event_id"), str) else None
    shown_id = shown_id[:40] if shown_id else None

    def reject(reason: str) -> Rejection:
        return Rejection(index, shown_id, reason)

    if event_id is None:
        return reject("event_id must be a UUID string")
    unknown = set(raw) - EVENT_FIELDS
    if unknown:
        return reject(f"unknown fields: {', '.join(sorted(unknown))[:200]}")
    ids = {}
    for name in ("user_id", "subagent_id", "version_id"):
        ids[name] = _positive_int(raw.get(name))
        if ids[name] is None:
            return reject(f"{name} must be a positive integer")
    kind = raw.get("kind")
    if kind not in EVENT_KINDS:
        return reject(f"kind must be one of {', '.join(sorted(EVENT_KINDS))}")
    occurred_at = _timestamp(raw.get("occurred_at"))
    if occurred_at is None:
        return reject("occurred_at must be an ISO 8601 time with a timezone")
    if occurred_at > now + MAX_CLOCK_SKEW:
        return reject("occurred_at is in the future")
    if occurred_at < now - MAX_EVENT_AGE:
        return reject("occurred_at is more than 7 days old")
    duration = raw.get("duration_ms")
    if duration is not None and (
        isinstance(duration, bool)
        or not isinstance(duration, int)
        or not 0 <= duration <= MAX_DURATION_MS
    ):
        return reject("duration_ms must be an integer between 0 and 86400000")
    properties = raw.get("properties") or {}
    if not isinstance(properties, dict):
        return reject("properties must be an object")
    if properties and len(json.dumps(properties, separators=(",", ":"))) > MAX_PROPERTIES_BYTES:
        return reject(f"properties exceed {MAX_PROPERTIES_BYTES} bytes")
    exposure_id = None
    if raw.get("exposure_id") is not None:
        exposure_id = _uuid(raw.get("exposure_id"))
        if exposure_id is None:
            return reject("exposure_id must be a UUID string")
    return EventRow(
        event_id=event_id,
        user_id=ids["user_id"],
        subagent_id=ids["subagent_id"],
        version_id=ids["version_id"],
        kind=kind,
        occurred_at=occurred_at,
        duration_ms=duration,
        properties=properties,
        exposure_id=exposure_id,
    )


def parse_batch(items: list, now: datetime) -> tuple[list[tuple[int, EventRow]], list[Rejection]]:
    """Split a batch into storable events (with their positions) and rejections.

    The same event_id twice in one batch is stored once; the later copy reports "duplicate"
    through the normal path, so it is not a rejection here.
    """
    accepted: list[tuple[int, EventRow]] = []
    rejected: list[Rejection] = []
    for index, raw in enumerate(items):
        parsed = parse_event(index, raw, now)
        if isinstance(parsed, Rejection):
            rejected.append(parsed)
        else:
            accepted.append((index, parsed))
    return accepted, rejected
