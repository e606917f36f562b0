"""Request and response models of usage events, feedback and stats."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from feedback.ingest import EVENT_KINDS, MAX_DURATION_MS
from market.platform.schemas import (
    INT32_MAX,
    Cursor,
    Id,
    StrictInput,
    Tag,
    UtcDatetime,
    whole_number,
)


class UsageEventIn(BaseModel):
    """One usage event. One that does not fit is rejected alone (its result says why) and the
    rest of the batch is stored."""

    model_config = ConfigDict(extra="forbid")

    event_id: UUID = Field(description="made by the client; a retried event is stored once")
    user_id: int = Field(ge=1, le=INT32_MAX)
    subagent_id: int = Field(ge=1, le=INT32_MAX)
    version_id: int = Field(ge=1, le=INT32_MAX)
    kind: Literal[tuple(sorted(EVENT_KINDS))]
    occurred_at: datetime = Field(
        description="with a UTC offset; at most 7 days old, at most 5 minutes ahead"
    )
    duration_ms: int | None = Field(None, ge=0, le=MAX_DURATION_MS)
    properties: dict[str, Any] | None = Field(None, description="at most 1 KiB as JSON")
    exposure_id: UUID | None = Field(None, description="the recommendation it came from")


class EventBatchIn(BaseModel):
    """Up to 1,000 events (1 MiB), each judged alone."""

    model_config = ConfigDict(extra="forbid")
    events: list[UsageEventIn] = Field(max_length=1000)


class EventBatchRead(BaseModel):
    """How the server reads an ``EventBatchIn`` (the document's word for it): items
    free-form, each then read by ``feedback.ingest.parse_event``, so that a malformed one is
    rejected alone and the rest of the batch is stored."""

    model_config = ConfigDict(extra="forbid")
    events: list[Any] = Field(max_length=1000)


class EventResult(BaseModel):
    index: int
    event_id: str | None
    status: str = Field(description="stored | duplicate | rejected")
    reason: str | None = None


class EventBatchOut(BaseModel):
    stored: int
    duplicates: int
    rejected: int
    results: list[EventResult]


class FeedbackIn(StrictInput):
    # Exactly one of stars and thumbs, said in the document too (the validator below). As
    # if/then/else rather than a oneOf beside the properties: client generators read such a
    # oneOf as a union of its two branches and drop every other field of the body.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "if": {"required": ["stars"], "properties": {"stars": {"type": "integer"}}},
            "then": {"not": {"required": ["thumbs"], "properties": {"thumbs": {"type": "string"}}}},
            "else": {"required": ["thumbs"], "properties": {"thumbs": {"type": "string"}}},
        },
    )

    version_id: Id
    user_id: Id | None = Field(
        None,
        description="services only (scope `feedback:on-behalf`): the person who rated, who "
        "must have installed or used the sub-agent",
    )
    stars: whole_number(1, 5) | None = None
    thumbs: str | None = Field(None, pattern="^(up|down)$")
    comment: str | None = Field(None, max_length=1000)
    tags: list[Tag] = Field(default_factory=list, max_length=10)
    # Exactly the forms uuid.UUID reads (the looser [0-9a-f-]{32,36} let "----…" through
    # to a 500).
    exposure_id: str | None = Field(
        None,
        pattern=r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$",
        description="the exposure (from POST /recommendations) that showed this sub-agent "
        "to this user",
    )

    @model_validator(mode="after")
    def _one_rating(self):
        if (self.stars is None) == (self.thumbs is None):
            raise ValueError("give exactly one of `stars` or `thumbs`")
        return self


class FeedbackOut(BaseModel):
    id: int
    user_id: int
    subagent_id: int
    version_id: int
    scale: str
    rating: int
    comment: str | None
    tags: list[str]
    created_at: UtcDatetime
    updated_at: UtcDatetime
    rated_by_service_id: int | None = Field(
        None,
        description="the service that wrote this rating on the person's behalf; null when "
        "the person rated themselves",
    )


class StatsQuery(StrictInput):
    from_: date | None = Field(None, alias="from", description="first UTC day (YYYY-MM-DD)")
    to: date | None = Field(None, description="last UTC day (YYYY-MM-DD)")
    granularity: str = Field("day", pattern="^(day|week)$")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class CreatorStatsQuery(StatsQuery):
    limit: int = Field(100, ge=1, le=100, description="sub-agents listed in `subagents`")
    cursor: Cursor | None = Field(None, description="the next sub-agents: a `next_cursor`")


class StatsWindow(BaseModel):
    start: str = Field(description="first UTC day included")
    end: str = Field(description="last UTC day included")
    granularity: str


class SubAgentStats(BaseModel):
    """Full figures for the author and moderators; others get ``view: "public"`` with only
    installs and the rating (the other fields are null)."""

    subagent_id: int
    view: str = Field(description="full | public")
    install_count: int = Field(description="active installs now")
    rating: dict = Field(description="current ratings (one per user and version), all time")
    window: StatsWindow | None = None
    fork_count: int | None = Field(None, description="direct public forks now")
    totals: dict | None = Field(None, description="over the window")
    series: list[dict] | None = None
    retention: list[dict] | None = Field(None, description="install cohorts in the window")
    lineage: dict | None = Field(
        None, description="forks by others, lineage reach and credit, in the window"
    )


class CreatorStats(BaseModel):
    """Totals, series, retention, rating and lineage cover all of the creator's sub-agents;
    ``subagents`` lists them ``limit`` at a time."""

    handle: str
    window: StatsWindow
    subagents: list[dict] = Field(
        description="each sub-agent's figures, most installed in the window first, then most "
        "installed now, then the oldest"
    )
    subagents_total: int = Field(description="the creator's sub-agents the caller sees")
    next_cursor: str | None = Field(
        None, description="the next sub-agents (`cursor`), when there are more"
    )
    rating: dict
    totals: dict
    series: list[dict]
    retention: list[dict]
    lineage: dict
