"""Request and response models of the catalog API (they also generate the OpenAPI document).

Input models forbid unknown fields, so a client can never set owner, parent, root, depth,
status, counts or ids: such a field is a 422 naming it, and nothing is stored.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StrictBool, StringConstraints

from market.catalog.bundles.limits import (
    MAX_DATA_SAMPLES,
    MAX_DESCRIPTION_CHARS,
    MAX_HOSTS,
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
)
from market.catalog.bundles.manifest import SCOPES
from market.catalog.models import Category
from market.platform.schemas import Cursor, Id, StrictInput, Tag, UtcDatetime


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


SchemaChangeKind = Literal["compatible", "additive", "breaking"]
FieldVerdict = Literal["carried", "transformed", "at_risk", "lost"]


class DiffAgainst(StrEnum):
    parent = "parent"
    previous = "previous"


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


# A manifest's shape, for clients that want it checked and documented field by field (the MCP
# tools). ``market.catalog.bundles.manifest`` still checks what a shape cannot: that the entry
# is one of the files, that each host is a public DNS name, the data schema's size.
class ManifestIn(StrictInput):
    """What a sub-agent is and may do: its name, the file it starts from, the person's data it
    reads or writes, the hosts it may call."""

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    entry: str = Field(
        min_length=1, max_length=MAX_PATH_CHARS, description="the file the app starts from"
    )
    scopes: list[Literal[tuple(sorted(SCOPES))]] = Field(
        default_factory=list, description="the person's data the app reads or writes"
    )
    hosts: list[Annotated[str, StringConstraints(min_length=1, max_length=253)]] = Field(
        default_factory=list,
        max_length=MAX_HOSTS,
        description="the public hostnames the app may call, like api.example.com",
    )
    data_schema: dict | None = Field(None, description="a JSON Schema of the data the app keeps")
    data_migration: dict | None = Field(
        None,
        description="a fork's mapping of its parent's stored data into this data_schema: "
        '{"fields": {"<new field>": {"from": "<old field>", "convert": "number|integer|string|'
        'boolean|split|join", "values": {"old": "new"}, "default": <value>}}, "drop": '
        '["<old field>"]}; required when the fork breaks its parent\'s data_schema',
    )
    data_samples: list[dict] | None = Field(
        None,
        max_length=MAX_DATA_SAMPLES,
        description="records valid under the parent's data_schema that data_migration must "
        "carry into this one (checked at fork, with the parent schema's `examples`)",
    )
    description: str | None = Field(None, max_length=MAX_DESCRIPTION_CHARS)


class BundleIn(StrictInput):
    """A bundle sent as JSON. Checked in depth by ``market.catalog.bundles``."""

    manifest: dict = Field(
        description="name, entry, scopes, hosts, data_schema, data_migration, data_samples, "
        "description"
    )
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
    upstream_update_id: Id | None = Field(
        None,
        description="the open upstream update (of this sub-agent) this version resolves: the "
        "coding agent publishing a conflicted merge it resolved; the update is then accepted",
    )


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


class VersionsQuery(StrictInput):
    limit: int = Field(100, ge=1, le=100)
    cursor: Cursor | None = None


class ForkRequestQuery(PageQuery):
    status: str = Field("open", pattern="^(open|fulfilled|closed)$")


class TreeQuery(StrictInput):
    depth: int = Field(3, ge=1, le=6)
    max_children: int = Field(20, ge=1, le=100)


class DiffQuery(StrictInput):
    version_id: int | None = Field(None, ge=1, le=2**31 - 1)
    against: DiffAgainst = DiffAgainst.parent


class SwitchPlanQuery(StrictInput):
    # Query strings are text: the ids are read as numbers (``Id`` is strict, for JSON bodies).
    to: int = Field(
        ge=1, le=2**31 - 1, description="the sub-agent to switch to, a branch of the same lineage"
    )
    version_id: int | None = Field(
        None,
        ge=1,
        le=2**31 - 1,
        description="the current version; default: the one in the caller's agent, else the latest",
    )
    to_version_id: int | None = Field(
        None, ge=1, le=2**31 - 1, description="the target version; default: latest"
    )


class BundleQuery(StrictInput):
    format: str = Field("json", pattern="^(json|zip)$")


# ---- responses -------------------------------------------------------------------------


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


class BestDescendantOut(BaseModel):
    id: int
    title: str
    depth: int
    probability_better: float
    language: str = Field(
        description="the language its title and summary are written in: zh, ja, ko, en, es, "
        "fr, de, pt, it, or latin (Latin script, language not told)"
    )


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
        "display score, named only when P(it is better) ≥ 0.8. One written in the caller's "
        "language (its Accept-Language, else the signed-in person's locale) comes first, when "
        "one is better with P ≥ 0.8 counted without the lineage's correlation (which only "
        "understates it); else the best in any language, and `language` says which",
    )


class NearCopyOut(BaseModel):
    """A public sub-agent of another author that a new root nearly copies: publish the root as
    its fork with ``POST /subagents/{id}/adopt-parent``, or decline."""

    id: int = Field(description="the original sub-agent")
    title: str
    author: AuthorOut
    similarity: float = Field(
        description="Jaccard similarity of the two bundles' distinctive text, 0-1 (template "
        "text shared by many apps left out); offered from 0.35"
    )


class PublishedOut(SubAgentOut):
    near_copies: list[NearCopyOut] = Field(
        default_factory=list,
        description="a new root only: public sub-agents of others it nearly copies, most "
        "similar first, each offered as the parent to publish it as a fork of",
    )


class NearCopyList(BaseModel):
    items: list[NearCopyOut]


class AdoptParentIn(StrictInput):
    parent_id: Id = Field(description="an original offered in `near_copies`")


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
    similar_count: int = Field(
        0,
        description="near-identical forks of the same tool hidden under this card in a search "
        "or the top and trending sorts (same fork family and script, and the same tool name "
        "or nearly the same title and summary). GET /subagents/{root}/tree lists them with "
        "the family; the root is the first ancestor in GET /subagents/{id}/lineage, or the "
        "card itself when it has none",
    )


class Page(BaseModel):
    items: list[SubAgentCard]
    next_cursor: str | None


class VersionList(BaseModel):
    items: list[VersionOut]
    next_cursor: str | None = Field(
        None, description="the next versions (`cursor`), when there are more"
    )


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


class FieldChangeOut(BaseModel):
    name: str
    change: str = Field(
        description="added, removed, loosened, tightened, type_changed, changed, now_required "
        "or now_optional"
    )
    detail: str
    kind: SchemaChangeKind = Field(description="the class this one change puts the schema in")


class SchemaChangeOut(BaseModel):
    """How the stored-data schema changed: ``compatible`` (every old record still valid),
    ``additive`` (as compatible, plus optional or defaulted fields) or ``breaking`` (an old
    record may be refused or lose a value)."""

    kind: SchemaChangeKind
    fields: list[FieldChangeOut]


class DiffOut(BaseModel):
    subagent_id: int
    version_id: int
    against: str
    base_version_id: int | None
    files: list[dict]
    manifest: dict
    stats: dict
    data_schema_change: SchemaChangeOut | None = Field(
        description="how the data_schema changed; null when a side declares none"
    )


class SwitchEndOut(BaseModel):
    subagent_id: int
    title: str
    version_id: int
    version_number: int


class FieldPlanOut(BaseModel):
    name: str = Field(description="a field of the data the current version keeps")
    verdict: FieldVerdict = Field(
        description="carried (kept as is), transformed (renamed or converted), at_risk (kept, "
        "but the target refuses some values) or lost (no place in the target)"
    )
    into: list[str] = Field(description="the target fields its value ends up in")
    detail: str


class PathStepOut(BaseModel):
    subagent_id: int | None = Field(description="null for a sub-agent the caller may not see")
    version_id: int | None
    migration: Literal["declared", "implicit"] = Field(
        description="declared: the fork's own data_migration takes the data into it; "
        "implicit: every field keeps its name"
    )


class SwitchPlanOut(BaseModel):
    """What becomes of each field of the data kept by the current version if it moves to the
    target branch, before anything happens."""

    current: SwitchEndOut
    installed: bool = Field(description="the current version is the one in the caller's agent")
    target: SwitchEndOut
    change: SchemaChangeOut
    fields: list[FieldPlanOut]
    defaults: dict[str, Any] = Field(
        description="target fields the current data lacks, filled with these values"
    )
    unfilled: list[str] = Field(description="required target fields nothing fills")
    safe: bool = Field(description="nothing lost, at risk or unfilled")
    path: list[PathStepOut] = Field(
        description="the hops of the fork tree that change the data, from the current version "
        "to the target"
    )
    migration: dict[str, Any] = Field(
        description="the data_migration the plan applies, for the main agent to run on the "
        "person's records when they switch (fields, drop)"
    )
    new_scopes: list[str] = Field(
        description="scopes the target asks for beyond those granted to the current "
        "sub-agent (its version's when not installed): the person must grant them to switch"
    )
    composed: bool = Field(
        description="false when the path's migrations could not be composed into one and "
        "the implicit migration from the current schema to the target's is shown"
    )


class SwitchIn(StrictInput):
    to: Id = Field(description="the sub-agent to switch to, a branch of the same lineage")
    to_version_id: Id | None = Field(None, description="the target version; default: latest")
    accept_losses: StrictBool = Field(
        False,
        description="the person saw the plan and agrees to lose the fields it says are lost, "
        "at risk or unfilled (required when the plan is not safe)",
    )
    grant_scopes: list[Literal[tuple(sorted(SCOPES))]] = Field(
        default_factory=list,
        description="scopes the person newly grants the target: every scope it asks for "
        "beyond those granted to the current sub-agent",
    )


class SwitchOut(BaseModel):
    install: InstallOut = Field(description="the install of the target, now active")
    plan: SwitchPlanOut = Field(description="what the switch did to the data's shape")


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


class MatchingFileOut(BaseModel):
    path: str = Field(description="a file of the reported sub-agent")
    original_path: str = Field(description="the original's file it shares most text with")
    shared: int = Field(description="distinctive shingles (3-word runs) in common")
    share: float = Field(description="of the file's distinctive shingles, 0-1")


class NearCopyEvidenceOut(BaseModel):
    original_id: int
    similarity: float
    shared_shingles: int
    matching_files: list[MatchingFileOut]


class ReportOut(BaseModel):
    id: int
    subagent_id: int
    reason: str
    detail: str
    status: str
    created_at: UtcDatetime
    near_copy: NearCopyEvidenceOut | None = Field(
        None, description="a near-copy report (filed by Sprig): what it copies, and the evidence"
    )


class ReportList(BaseModel):
    items: list[ReportOut]
    next_cursor: str | None


class UpstreamStatus(StrEnum):
    open = "open"
    accepted = "accepted"
    declined = "declined"
    superseded = "superseded"


class UpstreamQuery(PageQuery):
    status: UpstreamStatus | None = Field(None, description="only proposals in this status")


class UpstreamFileOut(BaseModel):
    path: str
    status: str = Field(
        description="unchanged | taken-from-upstream | kept-fork | merged-clean | conflict"
    )
    reason: str = Field(description="why it conflicted (empty when it did not)")


class UpstreamProposalOut(BaseModel):
    id: int
    fork_id: int
    parent_id: int
    parent_title: str
    status: UpstreamStatus
    conflicted: bool
    base_version: int = Field(description="the parent's version the fork had everything of")
    upstream_version: int = Field(description="the parent's new version offered")
    fork_version: int = Field(description="the fork's version the merge was made onto")
    current_version: int = Field(description="the fork's newest version now")
    stale: bool = Field(
        description="the fork moved on since the merge: refresh it before accepting"
    )
    added_scopes: list[str] = Field(
        description="personal-data scopes the merged version asks for that the fork did not: "
        "its installed users are asked again when they update"
    )
    files: list[UpstreamFileOut]
    merged_version_id: int | None = Field(description="the fork's version an accept made")
    created_at: UtcDatetime
    decided_at: UtcDatetime | None


class UpstreamProposalList(BaseModel):
    items: list[UpstreamProposalOut]
    next_cursor: str | None
    open_count: int = Field(description="open proposals of this fork (at most one, normally)")
    conflicted_count: int = Field(description="open proposals that conflict")


class UpstreamQueue(BaseModel):
    items: list[UpstreamProposalOut]
    next_cursor: str | None


class MergedDiffOut(BaseModel):
    """``DiffOut``'s files, manifest and stats, from the fork's newest version to the merge."""

    files: list[dict]
    manifest: dict
    stats: dict


class UpstreamDetailOut(UpstreamProposalOut):
    conflicts: dict = Field(
        description="`files`: per conflicted file its reason and regions (base, fork and "
        "upstream text); `manifest`: values both sides changed differently (a side left out "
        "removed it); `bundle`: why the merged files are not a bundle, when they are not"
    )
    diff: MergedDiffOut | None = Field(
        description="the merged bundle against the fork's newest version (conflicted regions "
        "between <<<<<<< fork / ======= / >>>>>>> upstream); null when the merged files are "
        "not a bundle"
    )


class UpstreamAcceptOut(BaseModel):
    proposal: UpstreamProposalOut
    version: VersionOut = Field(description="the fork's version made from the merge")
