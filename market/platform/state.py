"""What the application factory builds once for an app: its settings, engines, caches and
services, as one typed object stored on the app and read through :func:`app_state`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from celery import Celery
from flask import Flask, current_app
from sqlalchemy import Engine

from market.platform.config import Settings
from market.platform.db import AfterCommit, UnitOfWork
from market.platform.ratelimit import RateLimiter
from market.platform.read_cache import NotificationListener, ReadCache

_KEY = "sprig"


@dataclass(frozen=True)
class AppState:
    settings: Settings
    engine: Engine
    # GET requests read on autocommit connections of their own pool (the same engine on SQLite).
    read_engine: Engine
    rate_limiter: RateLimiter
    # Each limit class's market.platform.limits.Limit (None: off), parsed once at startup.
    rate_limits: dict[str, Any]
    # A market.suggestions.services.SuggestionService: its index lives as long as the process.
    suggestions: Any
    # A market.ranking.services.EmbeddedSchedule: beat's ranking job when there is no beat.
    ranking_schedule: Any
    celery: Celery
    # A market.entrypoints.mcp_http.McpBridge: MCP over HTTP, its server built on first use.
    mcp: Any
    # The anonymous read cache and what keeps it fresh (PostgreSQL with a cache time only).
    read_cache: ReadCache | None = None
    cache_listener: NotificationListener | None = None
    # A market.platform.health.Readiness: what /readyz checks, and its last result.
    readiness: Any = None
    # After-commit hooks that enqueue the tasks a commit calls for (the domains' own).
    enqueue_after_commit: tuple[AfterCommit, ...] = ()

    @property
    def after_commit(self) -> tuple[AfterCommit, ...]:
        """What catches up once a unit of work commits: this process's read cache, then its
        suggestion index; then the tasks the commit calls for are enqueued."""
        hooks = (self.suggestions.after_commit, *self.enqueue_after_commit)
        return hooks if self.read_cache is None else (self.read_cache.after_commit, *hooks)

    def unit_of_work(self, *, read_only: bool = False) -> UnitOfWork:
        return UnitOfWork(self.read_engine if read_only else self.engine, self.after_commit)


def install_state(app: Flask, state: AppState) -> None:
    app.extensions[_KEY] = state


def app_state(app: Flask | None = None) -> AppState:
    """The state of ``app``, or of the app whose context this runs in (a request, a task)."""
    return (app or current_app).extensions[_KEY]
