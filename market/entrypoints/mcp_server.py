"""``sprig mcp``: Sprig as Model Context Protocol tools for any coding agent that speaks MCP.

Tools (each runs the same catalog and suggestion code as the HTTP API, on the database of
``SPRIG_DATABASE_URL``):
  * ``suggest_forks``  what ``POST /api/v1/suggestions`` answers;
  * ``get_subagent``   a sub-agent with its latest version (``GET /subagents/{id}``);
  * ``get_diff``       a version against the version it was forked from, or the previous one:
                       files and permissions added, removed, changed (``GET …/diff``);
  * ``publish_fork``   fork a sub-agent with a new bundle (``POST …/forks``).
Who calls is the owner of the token given by ``SPRIG_MCP_TOKEN`` (or ``--token``), looked up
on every call so a revoked token stops working at once; without a token only public reads
work. Failures come back as tool errors (``is_error``) carrying the same message the HTTP API
would put in its problem document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ValidationError

from market.catalog import bundles
from market.catalog import services as catalog
from market.catalog.bundles.diff import diff_bundles
from market.catalog.bundles.limits import BundleError
from market.catalog.schemas import DiffOut, ForkIn, SubAgentOut
from market.catalog.serialize import fork_command, subagent_out, visible_detail
from market.identity.tokens import ANONYMOUS, Principal, principal_for_token, reader_language
from market.platform.db import UnitOfWork
from market.platform.errors import SprigError
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
    "Read one with get_subagent and get_diff, then publish your adapted version with "
    "publish_fork."
)


class PublishedFork(BaseModel):
    created: bool  # False: the same bytes were already forked by the same author
    subagent: SubAgentOut


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
    """The MCP server for ``engine``, acting as the owner of ``token``."""
    suggestions = service or SuggestionService(engine)
    server = MCPServer(name="sprig", instructions=INSTRUCTIONS)

    @contextmanager
    def call() -> Iterator[tuple[UnitOfWork, Callable[[], Principal]]]:
        """A unit of work per tool call; domain errors become tool errors, and nothing is kept
        unless the tool commits. No read cache in this process: web workers hear the commit's
        NOTIFY; this process's suggestion index catches up after the commit."""
        with UnitOfWork(engine, (suggestions.after_commit,)) as unit:

            def who() -> Principal:
                return principal_for_token(unit.session, token) if token else ANONYMOUS

            try:
                yield unit, who
            except SprigError as error:
                raise ToolError(f"{error.title} ({error.status}): {error.detail}") from None
            except BundleError as error:
                where = "; ".join(f"{e.get('location')}: {e.get('message')}" for e in error.errors)
                raise ToolError(
                    f"Bundle rejected ({error.status}): {error.detail}. {where}"
                ) from None

    @server.tool()
    def suggest_forks(
        request: str,
        category: str | None = None,
        granted_scopes: list[str] | None = None,
        locale: str | None = None,
        k: int = 5,
        gloss: str | None = None,
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
    def get_subagent(subagent_id: int) -> SubAgentOut:
        """A sub-agent (title, story, tags, parent, counts) with its latest version and
        manifest."""
        with call() as (unit, who):
            session = unit.session
            viewer = who()
            detail = subagent_out(*catalog.get_visible_detail(session, viewer, subagent_id))
            return visible_detail(session, viewer, detail, reader_language(session, viewer))

    @server.tool()
    def get_diff(
        subagent_id: int,
        version_id: int | None = None,
        against: Literal["parent", "previous"] = "parent",
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
    def publish_fork(
        parent_id: int,
        title: str,
        fork_request: str,
        manifest: dict[str, Any],
        files: dict[str, str],
        summary: str = "",
        story: str = "",
        tags: list[str] | None = None,
        category: str | None = None,
        parent_version_id: int | None = None,
        fork_request_id: int | None = None,
        visibility: Literal["public", "unlisted", "private"] = "public",
        on_behalf_of: str | None = None,
    ) -> PublishedFork:
        """Fork `parent_id` with a new bundle (manifest: name, entry, scopes, hosts,
        description; files: path -> text). `fork_request` is the user's words that asked for
        the change. A service publishes for a person named in `on_behalf_of`."""
        with call() as (unit, who):
            session = unit.session
            principal = who()
            body = _validated(
                ForkIn,
                {
                    "title": title,
                    "fork_request": fork_request,
                    "bundle": {"manifest": manifest, "files": files},
                    "summary": summary,
                    "story": story,
                    "tags": tags or [],
                    "category": category,
                    "parent_version_id": parent_version_id,
                    "fork_request_id": fork_request_id,
                    "visibility": visibility,
                    "on_behalf_of": on_behalf_of,
                },
            )
            bundle = bundles.bundle_from_json(body.bundle.model_dump())
            command = fork_command(parent_id, body, bundle)
            child, version, created = catalog.fork_as_requested(session, principal, command)
            unit.commit()
            detail = subagent_out(child, catalog.get_author(session, child), version)
            detail = visible_detail(session, principal, detail, reader_language(session, principal))
            return PublishedFork(created=created, subagent=detail)

    return server
