"""What :func:`market.demo.generate_community` returns: the demo community's public types,
and the categories and permission scopes its sub-agents use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CATEGORIES: tuple[str, ...] = (
    "diet",
    "fitness",
    "mood",
    "sleep",
    "finance",
    "study",
    "family",
    "hobby",
    "travel",
    "hydration",
)
_DOMAINS = (
    "profile",
    "diet",
    "hydration",
    "fitness",
    "health",
    "health.injuries",
    "health.medications",
    "sleep",
    "mood",
    "journal",
    "finance",
    "family",
    "calendar",
    "location",
    "study",
    "hobby",
    "travel",
    "photos",
    "contacts",
    "home",
    "pets",
    "music",
)
SCOPE_VOCABULARY: frozenset[str] = frozenset(
    f"{d}.{a}" for d in _DOMAINS for a in ("read", "write")
)


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True)
class DemoUser:
    handle: str
    display_name: str
    email: str
    phone: str | None
    address: str | None
    kind: str
    role: str
    share_feedback_for_training: bool
    bio: str
    locale: str


@dataclass(frozen=True)
class DemoBundle:
    manifest: dict[str, Any]
    files: dict[str, str]
    changelog: str


@dataclass(frozen=True)
class DemoSubAgent:
    key: str
    author: str
    title: str
    summary: str
    story: str
    category: str
    tags: tuple[str, ...]
    visibility: str
    parent: str | None
    fork_request: str | None
    versions: tuple[DemoBundle, ...]
    created_days_ago: int


@dataclass(frozen=True)
class DemoInstall:
    user: str
    subagent: str
    days_ago: int


@dataclass(frozen=True)
class DemoForkRequest:
    user: str
    subagent: str
    text: str
    days_ago: int


@dataclass(frozen=True)
class DemoCommunity:
    users: tuple[DemoUser, ...]
    subagents: tuple[DemoSubAgent, ...]
    installs: tuple[DemoInstall, ...]
    fork_requests: tuple[DemoForkRequest, ...]
