"""Sprig as Model Context Protocol tools for any coding agent that speaks MCP.

Tools (each runs the same catalog and suggestion code as the HTTP API, and checks its
arguments with the API's own request models, so the tool listing shows their limits):
  * ``suggest_forks``  what ``POST /api/v1/suggestions`` answers;
  * ``get_subagent``   a sub-agent with its latest version (``GET /subagents/{id}``);
  * ``get_diff``       a version against the version it was forked from, or the previous one:
                       files and permissions added, removed, changed (``GET …/diff``);
  * ``get_files``      a version's manifest and files, to build a fork from (``GET …/bundle``);
  * ``publish_fork``   fork a sub-agent with a new bundle (``POST …/forks``);
  * ``list_upstream_updates``, ``get_upstream_update``, ``accept_upstream_update``,
    ``decline_upstream_update``  a fork's proposed merges of its parent's new versions
                       (``GET …/upstream-updates``, ``/upstream-updates/{id}``, its accept
                       and decline), for the fork's author;
  * ``list_upstream_conflicts``, ``resolve_upstream_update``  the coding agent's queue of
                       conflicted ones (``GET /upstream-conflicts``) and publishing the
                       resolved version (``POST …/versions`` with ``upstream_update_id``);
  * ``publish_subagent`` publish a new root (``POST /subagents``), with the public
                       sub-agents it nearly copies offered as its parent;
  * ``adopt_parent``   accept such an offer: the root becomes a fork of the original
                       (``POST …/adopt-parent``); ``decline_near_copies`` declines them;
  * ``switch_plan``    what becomes of each field of the data a sub-agent keeps when the
                       person switches to another branch of its lineage
                       (``GET …/switch-plan``).
Two transports: ``sprig mcp`` on stdio acts as the owner of the token given by
``SPRIG_MCP_TOKEN`` (or ``--token``), looked up on every call so a revoked token stops working
at once; streamable HTTP at ``/mcp`` in the web app (``market.entrypoints.mcp_http``) acts, for
each request, as its bearer token's owner, read from :data:`HTTP_CALLER`. Without a token only
public reads work. Failures come back as tool errors (``is_error``) carrying the same message
the HTTP API would put in its problem document.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from importlib.metadata import version as package_version
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, ValidationError
from sqlmodel import Session

from market.catalog import bundles, upstream
from market.catalog import services as catalog
from market.catalog.bundles.diff import diff_bundles
from market.catalog.bundles.limits import BundleError, utf8_len
from market.catalog.schemas import (
    AdoptParentIn,
    BundleIn,
    DiffAgainst,
    DiffOut,
    ForkIn,
    ManifestIn,
    NearCopyOut,
    PageQuery,
    PublishIn,
    SubAgentOut,
    SwitchPlanOut,
    SwitchPlanQuery,
    UpstreamAcceptOut,
    UpstreamDetailOut,
    UpstreamProposalList,
    UpstreamProposalOut,
    UpstreamQuery,
    UpstreamQueue,
    UpstreamStatus,
    VersionIn,
    VersionOut,
    Visibility,
)
from market.catalog.serialize import (
    fork_command,
    near_copy_out,
    switch_plan_out,
    upstream_detail_out,
    upstream_out,
    upstream_page_out,
    upstream_queue_out,
    version_out,
    visible_detail,
)
from market.catalog.switch_plans import plan_switch
from market.identity.tokens import ANONYMOUS, Principal, principal_for_token, reader_language
from market.platform import metrics
from market.platform.db import AfterCommit, UnitOfWork
from market.platform.errors import SprigError
from market.platform.schemas import Id
from market.suggestions.schemas import SuggestionsIn, SuggestionsOut
from market.suggestions.serialize import suggestion_request, suggestions_out
from market.suggestions.services import SuggestionService

INSTRUCTIONS = (
    "Sprig is a marketplace of small lifestyle apps (sub-agents) that people share and fork. "
    "Before writing an app, call suggest_forks with the person's request (and, when it is not "
    "in English, your English gloss of it): its verdict says whether an existing base fits "
    "(fits), only related ones exist (weak), or nothing fits and you should write the app "
    "from scratch (none); the bases come with what their users asked for and which changes "
    "improved forks before. "
    "Read one with get_subagent and get_diff, take its files with get_files, then publish "
    "your adapted version with publish_fork. "
    "When a parent publishes a new version, each fork gets a proposed merge: its author "
    "reads them with list_upstream_updates and get_upstream_update and accepts or declines; "
    "the ones that conflict are in list_upstream_conflicts for you to resolve with "
    "resolve_upstream_update. "
    "When nothing fits and you publish a new app with publish_subagent, read its "
    "near_copies: if it is in fact a copy of one of them, make it that app's fork with "
    "adopt_parent (the original's author is credited), else call decline_near_copies. "
    "Before moving a person to another branch of a lineage, call switch_plan: it says what "
    "becomes of each field of the data they keep."
)

# Who makes the HTTP request being served. The /mcp endpoint sets it in the task that serves
# one request; the tool call runs in a copy of that task's context, so concurrent requests of
# different callers never see each other's principal.
HTTP_CALLER: ContextVar[Principal] = ContextVar("sprig_mcp_http_caller", default=ANONYMOUS)
# The same request's Accept-Language header (None: it sent none), so that what a tool names in
# the reader's language (a sub-agent's better branch) follows it as the API's answer does.
HTTP_ACCEPT_LANGUAGE: ContextVar[str | None] = ContextVar(
    "sprig_mcp_http_accept_language", default=None
)


def _field(model: type[BaseModel], name: str) -> Any:
    """The type of ``model``'s field ``name`` with its constraints and description, for a
    tool parameter: the tool listing then shows, and the SDK checks, exactly what the API's
    request model does (the default stays on the parameter)."""
    info = model.model_fields[name]
    described = Field(description=info.description, json_schema_extra=info.json_schema_extra)
    return Annotated[(info.annotation, *info.metadata, described)]


SuggestRequest = _field(SuggestionsIn, "request")
SuggestCategory = _field(SuggestionsIn, "category")
GrantedScopes = _field(SuggestionsIn, "granted_scopes")
Locale = _field(SuggestionsIn, "locale")
HowMany = _field(SuggestionsIn, "k")
Gloss = _field(SuggestionsIn, "gloss")
ForkTitle = _field(ForkIn, "title")
ForkRequest = _field(ForkIn, "fork_request")
ForkFiles = _field(BundleIn, "files")
ForkSummary = _field(ForkIn, "summary")
ForkStory = _field(ForkIn, "story")
ForkTags = _field(ForkIn, "tags")
ForkCategory = _field(ForkIn, "category")
ParentVersionId = _field(ForkIn, "parent_version_id")
ForkRequestId = _field(ForkIn, "fork_request_id")
ForkVisibility = _field(ForkIn, "visibility")
OnBehalfOf = _field(ForkIn, "on_behalf_of")
Limit = _field(PageQuery, "limit")
Cursor = _field(PageQuery, "cursor")
Changelog = _field(VersionIn, "changelog")
RootCategory = _field(PublishIn, "category")
ParentId = _field(AdoptParentIn, "parent_id")
SwitchTo = _field(SwitchPlanQuery, "to")
CurrentVersionId = _field(SwitchPlanQuery, "version_id")
TargetVersionId = _field(SwitchPlanQuery, "to_version_id")


class PublishedFork(BaseModel):
    created: bool  # False: the same bytes were already forked by the same author
    subagent: SubAgentOut


class PublishedRoot(BaseModel):
    created: bool  # False: the same bytes were already published by the same author
    subagent: SubAgentOut
    near_copies: list[NearCopyOut] = Field(
        description="public sub-agents of others this nearly copies, most similar first: "
        "make it a fork of one with adopt_parent, or decline_near_copies"
    )


class FileOut(BaseModel):
    path: str
    size: int = Field(description="bytes, UTF-8")
    content: str


class FilesOut(BaseModel):
    subagent_id: int
    version_id: int
    version_number: int
    sha256: str = Field(description="of the bundle's canonical bytes")
    manifest: dict[str, Any]
    files: list[FileOut]


def _validated(model: type[BaseModel], data: dict) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}"
            for e in error.errors()[:5]
        )
        raise ToolError(f"Invalid input: {problems}") from None


def build_server(
    engine, *, token: str | None, service: SuggestionService | None = None
) -> MCPServer:
    """The MCP server for stdio on ``engine``, acting as the owner of ``token``."""

    def token_owner(session: Session) -> Principal:
        return principal_for_token(session, token) if token else ANONYMOUS

    suggestions = service or SuggestionService(engine)
    hooks = (suggestions.after_commit, upstream.offer_in_process(engine))
    # stdio carries no headers: the reader's language is the token owner's locale.
    return _server(engine, token_owner, lambda: None, suggestions, hooks)


def build_http_server(
    engine, service: SuggestionService, after_commit: tuple[AfterCommit, ...]
) -> MCPServer:
    """The MCP server behind ``/mcp``: each call acts as the principal the endpoint found for
    its request (:data:`HTTP_CALLER`); a commit runs the web app's ``after_commit`` hooks."""
    # Building a server, the SDK calls logging.basicConfig (a handler and a level on the root
    # logger). In the web process logging is gunicorn's and the app's to set: put it back.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return _server(
            engine,
            lambda _session: HTTP_CALLER.get(),
            HTTP_ACCEPT_LANGUAGE.get,
            service,
            after_commit,
        )
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)


def _bundle_rejected(error: BundleError) -> ToolError:
    """The API's problem for a refused bundle as one message: each finding once (the error's
    detail repeats the first finding, so it is not added)."""
    title = "Bundle too large" if error.status == 413 else "Bundle rejected"
    findings = "; ".join(
        f"{e['location']}: {e['message']}" if e.get("location") else e["message"]
        for e in error.errors
    )
    return ToolError(f"{title} ({error.status}): {findings}")


def _publish_body(model: type[BaseModel], manifest: ManifestIn, files: dict, **fields) -> Any:
    """A publish tool's arguments as the API's request model: the bundle from the manifest
    and files, no tags as an empty list."""
    bundle = {"manifest": manifest.model_dump(exclude_none=True), "files": files}
    return _validated(model, {**fields, "bundle": bundle, "tags": fields.get("tags") or []})


def _server(
    engine,
    principal_of: Callable[[Session], Principal],
    accept_language_of: Callable[[], str | None],
    suggestions: SuggestionService,
    after_commit: tuple[AfterCommit, ...],
) -> MCPServer:
    server = MCPServer(
        name="sprig", version=package_version("sprig-market"), instructions=INSTRUCTIONS
    )

    @contextmanager
    def call() -> Iterator[tuple[UnitOfWork, Callable[[], Principal]]]:
        """A unit of work per tool call; domain errors become tool errors, and nothing is kept
        unless the tool commits."""
        with UnitOfWork(engine, after_commit) as unit:
            try:
                yield unit, lambda: principal_of(unit.session)
            except SprigError as error:
                raise ToolError(f"{error.title} ({error.status}): {error.detail}") from None
            except BundleError as error:
                raise _bundle_rejected(error) from None

    @server.tool()
    def suggest_forks(
        request: SuggestRequest,
        category: SuggestCategory = None,
        granted_scopes: GrantedScopes = None,
        locale: Locale = None,
        k: HowMany = 5,
        gloss: Gloss = None,
    ) -> SuggestionsOut:
        """Existing sub-agents best to fork for a request in the user's words (any language),
        and a verdict: `fits` (fork the first), `weak` (related bases only) or `none`
        (nothing fits: write it from scratch; no items). Each base comes with its version,
        relevance, calibrated fit, quality, why it matched, the themes of its users'
        feedback, and the changes that improved its forks. `gloss`: your English rendering of
        a request in another language (finds what dictionaries cannot bridge);
        `granted_scopes` keeps only bases whose permissions the user granted; `category` one
        category; `k` 1-20."""
        with call() as (unit, who):
            session = unit.session
            principal = who()
            principal.require()
            if principal.kind == "service":
                principal.require("suggest")
            body = _validated(
                SuggestionsIn,
                {
                    "request": request,
                    "category": category,
                    "granted_scopes": granted_scopes,
                    "locale": locale,
                    "k": k,
                    "gloss": gloss,
                },
            )
            return suggestions_out(suggestions.suggest(session, suggestion_request(body)))

    @server.tool()
    def get_subagent(subagent_id: Id) -> SubAgentOut:
        """A sub-agent (title, story, tags, parent, counts) with its latest version and
        manifest."""
        with call() as (unit, who):
            session = unit.session
            viewer = who()
            read = catalog.get_visible_detail(session, viewer, subagent_id)
            language = reader_language(session, viewer, accept_language_of())
            return visible_detail(session, viewer, read, language)

    @server.tool()
    def get_diff(
        subagent_id: Id,
        version_id: Id | None = None,
        against: DiffAgainst = DiffAgainst.parent,
    ) -> DiffOut:
        """What a version (default: the latest) changed against the parent version it was
        forked from, or against its previous version: files added, removed or modified with
        line diffs, and manifest changes (scopes and hosts added or removed)."""
        with call() as (unit, who):
            session = unit.session
            viewer = who()
            subagent = catalog.get_visible(session, viewer, subagent_id)
            version = catalog.get_readable_version(session, viewer, subagent, version_id)
            base = catalog.diff_base(session, viewer, subagent, version, against)
            diff = diff_bundles(
                catalog.load_bundle(session, base) if base else None,
                catalog.load_bundle(session, version),
            )
            return DiffOut(
                subagent_id=subagent.id,
                version_id=version.id,
                against=against,
                base_version_id=base.id if base else None,
                **diff,
            )

    @server.tool()
    def get_files(subagent_id: Id, version_id: Id | None = None) -> FilesOut:
        """A version's manifest and files (default: the latest version), to adapt into a fork
        for publish_fork. Each file comes with its path, its size in bytes and its full text:
        a bundle holds UTF-8 text files only (publishing refuses anything else), so no file is
        left out or encoded. Yanked versions only for those who may still read them."""
        with call() as (unit, who):
            session = unit.session
            viewer = who()
            subagent = catalog.get_visible(session, viewer, subagent_id)
            version = catalog.get_readable_version(session, viewer, subagent, version_id)
            bundle = catalog.load_bundle(session, version)
            return FilesOut(
                subagent_id=subagent.id,
                version_id=version.id,
                version_number=version.number,
                sha256=bundle.sha256,
                manifest=bundle.manifest,
                files=[
                    FileOut(path=path, size=utf8_len(text), content=text)
                    for path, text in sorted(bundle.files.items())
                ],
            )

    @server.tool()
    def publish_fork(
        parent_id: Id,
        title: ForkTitle,
        fork_request: ForkRequest,
        manifest: ManifestIn,
        files: ForkFiles,
        summary: ForkSummary = "",
        story: ForkStory = "",
        tags: ForkTags | None = None,
        category: ForkCategory = None,
        parent_version_id: ParentVersionId = None,
        fork_request_id: ForkRequestId = None,
        visibility: ForkVisibility = Visibility.public,
        on_behalf_of: OnBehalfOf = None,
    ) -> PublishedFork:
        """Fork `parent_id` with a new bundle (manifest: name, entry, scopes, hosts,
        description, data_schema; files: path -> UTF-8 text). `fork_request` is the user's
        words that asked for the change. A service publishes for a person named in
        `on_behalf_of`."""
        with call() as (unit, who):
            session = unit.session
            principal = who()
            body = _publish_body(
                ForkIn,
                manifest,
                files,
                title=title,
                fork_request=fork_request,
                summary=summary,
                story=story,
                tags=tags,
                category=category,
                parent_version_id=parent_version_id,
                fork_request_id=fork_request_id,
                visibility=visibility,
                on_behalf_of=on_behalf_of,
            )
            bundle = bundles.bundle_from_json(body.bundle.model_dump())
            command = fork_command(parent_id, body, bundle)
            child, version, created = catalog.fork_as_requested(session, principal, command)
            unit.commit()
            if created:
                metrics.record_publish("fork")
            return PublishedFork(
                created=created,
                subagent=_detail_of(session, principal, accept_language_of(), child, version),
            )

    @server.tool()
    def publish_subagent(
        title: ForkTitle,
        category: RootCategory,
        manifest: ManifestIn,
        files: ForkFiles,
        summary: ForkSummary = "",
        story: ForkStory = "",
        tags: ForkTags | None = None,
        visibility: ForkVisibility = Visibility.public,
        on_behalf_of: OnBehalfOf = None,
    ) -> PublishedRoot:
        """Publish a new app that forks nothing (manifest and files as for publish_fork). The
        answer's `near_copies` lists public apps of others it nearly copies: make it a fork
        of one with adopt_parent, or call decline_near_copies."""
        with call() as (unit, who):
            session = unit.session
            principal = who()
            body = _publish_body(
                PublishIn,
                manifest,
                files,
                title=title,
                category=category,
                summary=summary,
                story=story,
                tags=tags,
                visibility=visibility,
                on_behalf_of=on_behalf_of,
            )
            subagent, version, created, offers = catalog.publish_as_requested(
                session,
                principal,
                on_behalf_of=body.on_behalf_of,
                bundle=bundles.bundle_from_json(body.bundle.model_dump()),
                title=body.title,
                category=body.category.value,
                summary=body.summary,
                story=body.story,
                tags=body.tags,
                visibility=body.visibility.value,
            )
            unit.commit()
            if created:
                metrics.record_publish("root")
            return PublishedRoot(
                created=created,
                subagent=_detail_of(session, principal, accept_language_of(), subagent, version),
                near_copies=[near_copy_out(o) for o in offers],
            )

    @server.tool()
    def adopt_parent(subagent_id: Id, parent_id: ParentId) -> SubAgentOut:
        """Accept a near-copy offer from publish_subagent: the new app becomes a fork of
        `parent_id`, crediting its author (within 7 days, before anyone forks or installs
        it; accepting again answers the same fork)."""
        with call() as (unit, who):
            session = unit.session
            principal = who()
            subagent, _changed = catalog.adopt_parent(session, principal, subagent_id, parent_id)
            unit.commit()
            return _detail_of(session, principal, accept_language_of(), subagent)

    @server.tool()
    def decline_near_copies(subagent_id: Id) -> SubAgentOut:
        """Keep a new app a root of its own: decline its near-copy offers (a copy nearly
        identical to the original goes to the moderators)."""
        with call() as (unit, who):
            session = unit.session
            principal = who()
            subagent = catalog.decline_near_copies(session, principal, subagent_id)
            unit.commit()
            return _detail_of(session, principal, accept_language_of(), subagent)

    @server.tool()
    def list_upstream_updates(
        subagent_id: Id,
        status: UpstreamStatus | None = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> UpstreamProposalList:
        """A fork's proposed merges of its parent's new versions, newest first, with how many
        are open and how many of those conflict (the fork's author's and moderators'; others
        get none). Each names the parent versions merged and every file's merge status."""
        with call() as (unit, who):
            session = unit.session
            viewer = who()
            query = _validated(UpstreamQuery, {"status": status, "limit": limit, "cursor": cursor})
            fork = catalog.get_visible(session, viewer, subagent_id)
            return upstream_page_out(
                upstream.offers_for(
                    session,
                    viewer,
                    fork,
                    status=query.status,
                    limit=query.limit,
                    cursor=query.cursor,
                )
            )

    @server.tool()
    def get_upstream_update(proposal_id: Id) -> UpstreamDetailOut:
        """One proposed merge: each file's status (unchanged, taken-from-upstream,
        kept-fork, merged-clean, conflict), the conflicts (file regions with the base, fork
        and upstream text; manifest values both sides changed), and the diff accepting it
        would make to the fork's newest version (conflicts between <<<<<<< fork / =======
        / >>>>>>> upstream)."""
        with call() as (unit, who):
            session = unit.session
            offer = upstream.get_offer(session, who(), proposal_id)
            return upstream_detail_out(session, offer)

    @server.tool()
    def accept_upstream_update(proposal_id: Id) -> UpstreamAcceptOut:
        """Accept a clean proposed merge (the fork's author): it becomes the fork's next
        version, "merged from <parent> vN". Refused when it conflicts or the fork has a
        newer version than the merge was made onto."""
        with call() as (unit, who):
            session = unit.session
            offer, version, created = upstream.accept(session, who(), proposal_id)
            unit.commit()
            if created:
                metrics.record_publish("version")
            return UpstreamAcceptOut(proposal=upstream_out(offer), version=version_out(version))

    @server.tool()
    def decline_upstream_update(proposal_id: Id) -> UpstreamProposalOut:
        """Decline a proposed merge (the fork's author)."""
        with call() as (unit, who):
            offer = upstream.decline(unit.session, who(), proposal_id)
            unit.commit()
            return upstream_out(offer)

    @server.tool()
    def list_upstream_conflicts(limit: Limit = 20, cursor: Cursor = None) -> UpstreamQueue:
        """Open proposed merges that conflict, newest first: the coding agent's queue (every
        one, with the publish:on-behalf scope; a person's own forks' for a person). Read one
        with get_upstream_update and resolve it with resolve_upstream_update."""
        with call() as (unit, who):
            query = _validated(PageQuery, {"limit": limit, "cursor": cursor})
            offers, next_cursor = upstream.conflict_queue(
                unit.session, who(), limit=query.limit, cursor=query.cursor
            )
            return upstream_queue_out(offers, next_cursor)

    @server.tool()
    def resolve_upstream_update(
        proposal_id: Id,
        manifest: ManifestIn,
        files: ForkFiles,
        changelog: Changelog = "",
        on_behalf_of: OnBehalfOf = None,
    ) -> VersionOut:
        """Publish the resolved merge of a proposal as the fork's next version (its author,
        or a service for the author named in `on_behalf_of`); the proposal is then accepted
        and the parent's next version is merged from the one it offered."""
        with call() as (unit, who):
            session = unit.session
            principal = who()
            body = _validated(
                VersionIn,
                {
                    "changelog": changelog,
                    "bundle": {"manifest": manifest.model_dump(exclude_none=True), "files": files},
                    "on_behalf_of": on_behalf_of,
                    "upstream_update_id": proposal_id,
                },
            )
            offer = upstream.get_offer(session, principal, proposal_id)
            publisher = catalog.resolve_publisher(session, principal, body.on_behalf_of)
            bundle = bundles.bundle_from_json(body.bundle.model_dump())
            version, created = catalog.publish_version(
                session, publisher, offer.fork, bundle, body.changelog
            )
            upstream.resolve(session, principal, proposal_id, offer.fork, version)
            unit.commit()
            if created:
                metrics.record_publish("version")
            return version_out(version)

    @server.tool()
    def switch_plan(
        subagent_id: Id,
        to: SwitchTo,
        version_id: CurrentVersionId = None,
        to_version_id: TargetVersionId = None,
    ) -> SwitchPlanOut:
        """Before moving a person from sub-agent `subagent_id` to another branch of its
        lineage `to` (a better-rated sibling, say): what becomes of each field of the data it
        keeps, per field carried, transformed (how), at_risk or lost, the target fields filled
        with defaults, and `safe` when nothing is lost. The current version defaults to the
        one in the caller's agent. Changes nothing."""
        with call() as (unit, who):
            planned = plan_switch(
                unit.session,
                who(),
                subagent_id,
                to,
                version_id=version_id,
                target_version_id=to_version_id,
            )
            return switch_plan_out(planned)

    return server


def _detail_of(
    session: Session,
    viewer: Principal,
    accept_language: str | None,
    subagent,
    version: catalog.Version | None = None,
) -> SubAgentOut:
    """The answer to a write: what the caller has just made or changed, showing ``version``
    (the latest by default)."""
    read = catalog.read_detail(session, subagent.id)
    language = reader_language(session, viewer, accept_language)
    return visible_detail(session, viewer, read, language, version)
