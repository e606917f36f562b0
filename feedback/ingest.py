"""Validation of usage-event and feedback batches: pure, no I/O.

A batch is checked item by item: one malformed event is rejected with its reason and the rest
go on. What needs the database (does the user exist, may this client see that sub-agent) is
decided by the service with the ids this module extracts.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import orjson

from feedback.json_limits import first_unstorable

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


class EventRow(NamedTuple):
    """A valid event. A named tuple, not a dataclass: a batch makes a thousand of them and a
    frozen dataclass costs several times as much to build."""

    event_id: str  # canonical lowercase UUID text
    user_id: int
    subagent_id: int
    version_id: int
    kind: str
    occurred_at: datetime  # UTC
    duration_ms: int | None
    properties: dict
    exposure_id: str | None  # canonical lowercase UUID text


class Rejection(NamedTuple):
    index: int
    event_id: str | None
    reason: str


_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def canonical_uuid(value: object) -> str | None:
    """The UUID as lowercase hyphenated text, or None. Canonical input (nearly all of it) is
    recognised by a regular expression; other spellings go through :class:`uuid.UUID`."""
    if not isinstance(value, str) or len(value) > 45:
        return None
    if _CANONICAL_UUID.fullmatch(value):
        return value
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def _positive_int(value: object) -> int | None:
    if value.__class__ is not int or not 0 < value < 2**31:  # bool is a subclass: refused
        return None
    return value


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        parsed = datetime.fromisoformat(value)  # Python 3.11 reads "Z" itself
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return parsed.astimezone(UTC)


def _properties_problem(properties: dict) -> str | None:
    """Why an event's properties cannot be stored (too big, or text a database refuses)."""
    try:
        data = orjson.dumps(properties)
    except TypeError:  # integers beyond 64 bits, or a lone surrogate: measured the slow way
        data = None
    # orjson writes NUL as the escape \u0000, so properties without one skip the walk.
    if data is None or b"\\u0000" in data:
        found = first_unstorable(properties, "properties")
        if found is not None:
            return " ".join(found)
    if data is None:
        data = json.dumps(properties, separators=(",", ":")).encode()
    if len(data) > MAX_PROPERTIES_BYTES:
        return f"properties exceed {MAX_PROPERTIES_BYTES} bytes"
    return None


def parse_event(index: int, raw: object, now: datetime) -> EventRow | Rejection:
    """One event, or the reason it cannot be stored."""
    if raw.__class__ is not dict:
        return Rejection(index, None, "an event is a JSON object")
    given_id = raw.get("event_id")
    event_id = canonical_uuid(given_id)
    if event_id is None:
        shown = given_id[:40] if isinstance(given_id, str) and given_id else None
        return Rejection(index, shown, "event_id must be a UUID string")
    if not raw.keys() <= EVENT_FIELDS:
        unknown = ", ".join(sorted(raw.keys() - EVENT_FIELDS))[:200]
        return Rejection(index, event_id, f"unknown fields: {unknown}")
    user_id = _positive_int(raw.get("user_id"))
    if user_id is None:
        return Rejection(index, event_id, "user_id must be a positive integer")
    subagent_id = _positive_int(raw.get("subagent_id"))
    if subagent_id is None:
        return Rejection(index, event_id, "subagent_id must be a positive integer")
    version_id = _positive_int(raw.get("version_id"))
    if version_id is None:
        return Rejection(index, event_id, "version_id must be a positive integer")
    kind = raw.get("kind")
    if kind not in EVENT_KINDS:
        return Rejection(index, event_id, _KIND_REASON)
    occurred_at = _timestamp(raw.get("occurred_at"))
    if occurred_at is None:
        return Rejection(index, event_id, "occurred_at must be an ISO 8601 time with a timezone")
    if occurred_at > now + MAX_CLOCK_SKEW:
        return Rejection(index, event_id, "occurred_at is in the future")
    if occurred_at < now - MAX_EVENT_AGE:
        return Rejection(index, event_id, "occurred_at is more than 7 days old")
    duration = raw.get("duration_ms")
    if duration is not None and (
        duration.__class__ is not int or not 0 <= duration <= MAX_DURATION_MS
    ):
        return Rejection(index, event_id, "duration_ms must be an integer between 0 and 86400000")
    properties = raw.get("properties") or {}
    if properties.__class__ is not dict:
        return Rejection(index, event_id, "properties must be an object")
    problem = _properties_problem(properties) if properties else None
    if problem is not None:
        return Rejection(index, event_id, problem)
    exposure_id = raw.get("exposure_id")
    if exposure_id is not None:
        exposure_id = canonical_uuid(exposure_id)
        if exposure_id is None:
            return Rejection(index, event_id, "exposure_id must be a UUID string")
    return EventRow(
        event_id,
        user_id,
        subagent_id,
        version_id,
        kind,
        occurred_at,
        duration,
        properties,
        exposure_id,
    )


_KIND_REASON = f"kind must be one of {', '.join(sorted(EVENT_KINDS))}"


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
