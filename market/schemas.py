"""Request and response models of the catalog API (they also generate the OpenAPI document).

Input models forbid unknown fields, so a client can never set owner, parent, root, depth,
status, counts or ids: such a field is a 422 naming it, and nothing is stored.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    field_validator,
    model_validator,
)

from feedback.json_limits import first_unstorable

CATEGORIES = (
    "diet",
    "hydration",
    "fitness",
    "health",
    "mood",
    "sleep",
    "finance",
    "study",
    "family",
    "hobby",
    "travel",
    "home",
)
Category = StrEnum("Category", {c: c for c in CATEGORIES})


class Visibility(StrEnum):
    public = "public"
    unlisted = "unlisted"
    private = "private"


class BrowseSort(StrEnum):
    new = "new"
    installs = "installs"
    relevance = "relevance"
    top = "top"
    trending = "trending"
    rising = "rising"


class InstallSource(StrEnum):
    browse = "browse"
    link = "link"
    suggestion = "suggestion"
    exposure = "exposure"
    fork = "fork"


class ReportReason(StrEnum):
    malware = "malware"
    privacy = "privacy"
    spam = "spam"
    broken = "broken"
    misleading = "misleading"
    other = "other"


class DiffAgainst(StrEnum):
    parent = "parent"
    previous = "previous"


Tag = Annotated[str, StringConstraints(min_length=1, max_length=40, pattern=r"^[\w][\w .+\-]*$")]
# Titles and reasons are counted after stripping the spaces around them, which minLength
# cannot say: the document adds a pattern that does (no NUL, and at least 1 or 3 characters
# from the first non-space one to the last).
_VISIBLE = r"[^\s\u0000]"
Title = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=120),
    Field(json_schema_extra={"pattern": rf"^[^\u0000]*{_VISIBLE}[^\u0000]*$"}),
]
Reason = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=3, max_length=500),
    Field(json_schema_extra={"pattern": rf"^[^\u0000]*{_VISIBLE}[^\u0000]+{_VISIBLE}[^\u0000]*$"}),
]
Cursor = Annotated[str, StringConstraints(max_length=200)]


INT32_MAX = 2**31 - 1


def _whole_number(value: Any) -> Any:
    """JSON has one number type: 3.0 is the integer 3 (JSON Schema's "integer" says so too);
    3.5, true and "3" are still refused by the strict check after this."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def whole_number(ge: int, le: int) -> Any:
    """An integer input between ``ge`` and ``le``: strict (no true, no "3"), 3.0 accepted.
    The bounds sit inside the annotation so that an optional field still documents them as
    minimum and maximum."""
    return Annotated[StrictInt, Field(ge=ge, le=le), BeforeValidator(_whole_number)]


Id = whole_number(1, INT32_MAX)


class StrictInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value):
        # Text a database cannot store (NUL, lone surrogates): a 422 naming the field rather
        # than a failure at the database. Free-form objects (a bundle's manifest and files)
        # are the bundle checks' to judge, in either wire format (market.bundles).
        found = first_unstorable(value) if isinstance(value, str | list) else None
        if found is not None:
            where, reason = found
            raise ValueError(f"{where} {reason}" if where else reason)
        return value


class BundleIn(StrictInput):
    """A bundle sent as JSON. Checked in depth by ``market.bundles``."""

    manifest: dict = Field(description="name, entry, scopes, hosts, data_schema, description")
    files: dict[str, str] = Field(description="path → UTF-8 text of each file")


class ListingFields(StrictInput):
    summary: str = Field("", max_length=300)
    story: str = Field("", max_length=4000, description="the creator's lifestyle story")
    tags: list[Tag] = Field(default_factory=list, max_length=10)
    visibility: Visibility = Visibility.public


class PublishIn(ListingFields):
    title: Title
    category: Category
    bundle: BundleIn | None = Field(None, description="omit when uploading a zip instead")
    on_behalf_of: str | None = Field(
        None, max_length=40, description="handle; needs the publish:on-behalf scope"
    )


class ForkIn(ListingFields):
    title: Title
    category: Category | None = Field(None, description="defaults to the parent's")
    fork_request: str = Field(
        min_length=1, max_length=2000, description="the words that asked for this change"
    )
    fork_request_id: Id | None = None
    parent_version_id: Id | None = Field(
        None, description="defaults to the parent's latest version"
    )
    bundle: BundleIn | None = None
    on_behalf_of: str | None = Field(None, max_length=40)


class VersionIn(StrictInput):
    changelog: str = Field("", max_length=4000)
    bundle: BundleIn | None = None
    on_behalf_of: str | None = Field(None, max_length=40)


class UpdateIn(StrictInput):
    title: Title | None = None
    summary: str | None = Field(None, max_length=300)
    story: str | None = Field(None, max_length=4000)
    category: Category | None = None
    tags: list[Tag] | None = Field(None, max_length=10)
    visibility: Visibility | None = None


class InstallIn(StrictInput):
    version_id: Id | None = None
    source: InstallSource = InstallSource.browse
    exposure_id: str | None = Field(None, max_length=64)


class ForkRequestIn(StrictInput):
    text: str = Field(min_length=3, max_length=2000)


class YankIn(StrictInput):
    reason: Reason
    version_id: Id | None = None


class QuarantineIn(StrictInput):
    reason: Reason
    lift: StrictBool = False


class ReportIn(StrictInput):
    reason: ReportReason
    detail: str = Field("", max_length=2000)


class BrowseQuery(StrictInput):
    q: str | None = Field(None, max_length=200)
    category: Category | None = None
    tag: Tag | None = None
    sort: BrowseSort | None = Field(
        None,
        description="default: relevance with q, else new. `top`: rater-corrected quality's "
        "lower bound E[θ] − 1.64·sd; `trending`: recent distinct users against the sub-agent's "
        "own past; `rising`: recent forks most surely better than their parent. Formulas: "
        "GET /api/v1/ranking",
    )
    limit: int = Field(20, ge=1, le=100)
    cursor: Cursor | None = None


class PageQuery(StrictInput):
    limit: int = Field(20, ge=1, le=100)
    cursor: Cursor | None = None


class ForkRequestQuery(PageQuery):
    status: str = Field("open", pattern="^(open|fulfilled|closed)$")


class TreeQuery(StrictInput):
    depth: int = Field(3, ge=1, le=6)
    max_children: int = Field(20, ge=1, le=100)


class DiffQuery(StrictInput):
    version_id: int | None = Field(None, ge=1, le=2**31 - 1)
    against: DiffAgainst = DiffAgainst.parent


class BundleQuery(StrictInput):
    format: str = Field("json", pattern="^(json|zip)$")


# ---- responses -------------------------------------------------------------------------


def _assume_utc(value):
    # SQLite hands back naive datetimes (stored in UTC): say so on the way out.
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


UtcDatetime = Annotated[datetime, BeforeValidator(_assume_utc)]


class AuthorOut(BaseModel):
    handle: str
    display_name: str


class VersionOut(BaseModel):
    id: int
    number: int
    sha256: str
    manifest: dict
    changelog: str
    status: str
    status_reason: str | None
    size_bytes: int
    file_count: int
    created_at: UtcDatetime


class SubAgentOut(BaseModel):
    id: int
    title: str
    summary: str
    story: str
    category: str
    tags: list[str]
    author: AuthorOut
    visibility: str
    status: str
    status_reason: str | None
    parent_id: int | None
    parent_version_id: int | None
    root_id: int | None = Field(description="null when the root is hidden from the caller")
    depth: int
    fork_request: str | None
    fork_request_id: int | None
    latest_version: VersionOut | None
    install_count: int
    fork_count: int
    created_at: UtcDatetime
    updated_at: UtcDatetime
    ranking: RankingOut | None = Field(
        None, description="the last ranking run's figures (null until it has run); see /ranking"
    )
    best_descendant: BestDescendantOut | None = Field(
        None,
        description="a newer branch of this that is loved more: the descendant with the best "
        "display score, named only when P(it is better) ≥ 0.8",
    )


class RankingOut(BaseModel):
    quality: float = Field(description="E[θ]: rater-corrected quality, standard rating units")
    quality_sd: float = Field(description="sd(θ)")
    display: float = Field(description="E[θ] − 1.64·sd(θ), the `top` order")
    branch_value: float = Field(description="E[max θ over this and its descendants]")
    fork_gain: float = Field(description="how much its forks tend to improve on it")
    rising: float | None = Field(description="recent forks: E[θ − θ_parent] / sd")
    trending: float = Field(description="ln((users last 7 days + 5) / (weekly users before + 5))")
    active_users: float = Field(description="distinct users, each decayed by a 30-day half-life")
    retention: float = Field(description="shrunk share of users back after 7 days")
    rating_count: int
    young: bool = Field(description="own evidence worth under 10 typical ratings")
    computed_at: UtcDatetime


class RankingRunOut(BaseModel):
    id: int
    finished_at: UtcDatetime | None
    subagents: int
    ratings: int
    seconds: float
    prior: dict[str, float] = Field(
        description="μ0, σ0² (roots), δ̄, τ² (fork step) of the lineage prior, estimated"
    )
    noise_var: float | None = Field(description="σ², residual variance of one rating")


class RankingMethodOut(BaseModel):
    formulas: str = Field(description="the ranking's definition, formula by formula")
    last_run: RankingRunOut | None


class BestDescendantOut(BaseModel):
    id: int
    title: str
    depth: int
    probability_better: float


class SubAgentCard(BaseModel):
    id: int
    title: str
    summary: str
    category: str
    tags: list[str]
    author: AuthorOut
    visibility: str
    status: str
    parent_id: int | None
    depth: int
    install_count: int
    fork_count: int
    created_at: UtcDatetime


class Page(BaseModel):
    items: list[SubAgentCard]
    next_cursor: str | None


class VersionList(BaseModel):
    items: list[VersionOut]


class LineageNode(BaseModel):
    depth: int
    hidden: bool = False
    subagent: SubAgentCard | None = None


class Lineage(BaseModel):
    subagent_id: int
    root_id: int | None
    ancestors: list[LineageNode] = Field(description="root first, parent last")


class TreeNode(BaseModel):
    id: int
    parent_id: int | None
    depth: int
    title: str
    status: str
    install_count: int
    fork_count: int
    shown_children: int


class Tree(BaseModel):
    root_id: int
    depth: int
    nodes: list[TreeNode]
    truncated: bool


class BundleOut(BaseModel):
    sha256: str
    manifest: dict
    files: dict[str, str]


class DiffOut(BaseModel):
    subagent_id: int
    version_id: int
    against: str
    base_version_id: int | None
    files: list[dict]
    manifest: dict
    stats: dict


class InstallOut(BaseModel):
    id: int
    subagent_id: int
    version_id: int
    source: str
    active: bool
    granted_scopes: list[str]
    new_scopes: list[str] = Field(
        default_factory=list,
        description="scopes this version asks for that the user had not granted before "
        "(for the parent, or an earlier version): the agent must ask the user again",
    )
    created_at: UtcDatetime
    subagent: SubAgentCard | None = None


class InstallList(BaseModel):
    items: list[InstallOut]
    next_cursor: str | None


class ForkRequestOut(BaseModel):
    id: int
    subagent_id: int
    requester: str
    text: str
    status: str
    fulfilled_by_id: int | None
    created_at: UtcDatetime


class ForkRequestList(BaseModel):
    items: list[ForkRequestOut]
    next_cursor: str | None


class ReportOut(BaseModel):
    id: int
    subagent_id: int
    reason: str
    detail: str
    status: str
    created_at: UtcDatetime


class ReportList(BaseModel):
    items: list[ReportOut]
    next_cursor: str | None


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[dict] = Field(default_factory=list)


# ---- usage, feedback and stats ----------------------------------------------------------


class EventBatchIn(BaseModel):
    """Items are checked one by one (a bad one is rejected, the rest stored), so the items
    are free-form here and described in the endpoint's documentation."""

    model_config = ConfigDict(extra="forbid")
    # Free-form items: a malformed one is rejected alone, the rest of the batch is stored.
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
    # Exactly one of stars and thumbs, said in the document too (the validator below).
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {"required": ["stars"], "properties": {"stars": {"type": "integer"}}},
                {"required": ["thumbs"], "properties": {"thumbs": {"type": "string"}}},
            ]
        },
    )

    version_id: Id
    user_id: Id | None = Field(None, description="services only: the user who rated")
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


class StatsQuery(StrictInput):
    from_: date | None = Field(None, alias="from", description="first UTC day (YYYY-MM-DD)")
    to: date | None = Field(None, description="last UTC day (YYYY-MM-DD)")
    granularity: str = Field("day", pattern="^(day|week)$")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


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
    handle: str
    window: StatsWindow
    subagents: list[dict]
    rating: dict
    totals: dict
    series: list[dict]
    retention: list[dict]
    lineage: dict


# --------------------------------------------------------------------------- reward exports
def _json_number(value: Any) -> Any:
    # A JSON number only: "0.9" and true are not confidences.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    return value


Number = Annotated[float, BeforeValidator(_json_number)]


class ExportIn(StrictInput):
    """What to export. Every field is optional; the defaults are the documented ones."""

    since_run: Id | None = Field(
        None, description="incremental: only feedback written after this run's watermark"
    )
    incremental: StrictBool = Field(
        False,
        description="without `since_run`: incremental from the last run that succeeded "
        "(everything if none did); with it, implied",
    )
    k_anonymity: whole_number(5, 100_000) = Field(
        5, description="a version needs at least this many distinct raters"
    )
    confidence: Number = Field(
        0.95, ge=0.6, le=0.999, description="P(chosen better) a pair (or a KTO label) needs"
    )
    test_share: Number = Field(0.1, ge=0.0, le=0.5, description="share of lineage roots in test")
    include_comments: StrictBool = Field(False, description="scrubbed comments and tags")
    conversational: StrictBool = Field(True, description="also the *_conversational configs")
    openai_jsonl: StrictBool = Field(False, description="also OpenAI preference JSONL")


class ExportFileOut(BaseModel):
    path: str
    config: str
    category: str
    split: str
    rows: int
    bytes: int
    sha256: str
    url: str


class ExportRunOut(BaseModel):
    id: int
    status: str = Field(description="queued, running, succeeded or failed")
    since_run: int | None
    parameters: dict[str, Any]
    watermark: UtcDatetime | None
    created_at: UtcDatetime
    started_at: UtcDatetime | None
    finished_at: UtcDatetime | None
    error: str | None
    manifest: dict[str, Any] | None = Field(description="the run's manifest.json once it succeeded")
    files: list[ExportFileOut] = Field(description="every file of the run, with a download URL")
