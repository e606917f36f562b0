"""``/subagents``: publish, read, fork, browse, lineage, diff, install, moderation; the
caller's installs, the fork-request queue and the reports."""

from __future__ import annotations

import io

from apiflask import APIBlueprint
from flask import after_this_request, current_app, request, send_file
from pydantic import BaseModel

from market.catalog import bundles, installs, upstream
from market.catalog import queries as browse
from market.catalog import services as catalog
from market.catalog.bundles.archive import bundle_from_zip, bundle_to_zip
from market.catalog.bundles.diff import diff_bundles
from market.catalog.bundles.limits import BundleError
from market.catalog.schemas import (
    AdoptParentIn,
    BrowseQuery,
    BundleOut,
    BundleQuery,
    DiffOut,
    DiffQuery,
    ForkIn,
    ForkRequestIn,
    ForkRequestList,
    ForkRequestOut,
    ForkRequestQuery,
    InstallIn,
    InstallList,
    InstallOut,
    Lineage,
    NearCopyList,
    Page,
    PageQuery,
    PublishedOut,
    PublishIn,
    QuarantineIn,
    ReportIn,
    ReportList,
    ReportOut,
    SubAgentOut,
    SwitchIn,
    SwitchOut,
    SwitchPlanOut,
    SwitchPlanQuery,
    Tree,
    TreeQuery,
    UpdateIn,
    UpstreamAcceptOut,
    UpstreamDetailOut,
    UpstreamProposalList,
    UpstreamProposalOut,
    UpstreamQuery,
    UpstreamQueue,
    VersionIn,
    VersionList,
    VersionOut,
    VersionsQuery,
    YankIn,
)
from market.catalog.search import matcher_for
from market.catalog.serialize import (
    fork_command,
    fork_request_out,
    fork_request_page_out,
    install_out,
    install_page_out,
    lineage_out,
    near_copy_out,
    page_out,
    report_out,
    switch_plan_out,
    tree_out,
    upstream_detail_out,
    upstream_out,
    upstream_page_out,
    upstream_queue_out,
    version_out,
    visible_detail,
)
from market.catalog.switch_plans import plan_switch, switch_install
from market.identity.models import User
from market.identity.tokens import caller, reader_language
from market.platform import metrics
from market.platform.api_deps import body_optional, commit, db, parse_json, parse_model
from market.platform.errors import Unprocessable, UnsupportedMediaType
from market.platform.pagination import decode_cursor, encode_cursor
from market.platform.problems import problem
from market.platform.state import app_state

bp = APIBlueprint("subagents", __name__, tag="Sub-agents")


@bp.app_errorhandler(BundleError)
def _bundle_error(error: BundleError):
    """A refused bundle, wherever it was read: a problem naming the code of each finding."""
    title = "Bundle too large" if error.status == 413 else "Bundle rejected"
    errors = [{"code": error.code, **e} for e in error.errors] or [{"code": error.code}]
    return problem(error.status, title, error.detail, errors)


# Bodies carrying a bundle are parsed by hand; their schema is added to the OpenAPI document
# by ``market.platform.api.complete_spec``: JSON at the first path, a multipart zip upload at
# the second (one content type per operation, so that generated clients can call both).
BUNDLE_BODIES = {
    ("/subagents", "post"): PublishIn,
    ("/subagents/{subagent_id}/forks", "post"): ForkIn,
    ("/subagents/{subagent_id}/versions", "post"): VersionIn,
}
ZIP_UPLOADS = {
    ("/subagents/zip", "post"): PublishIn,
    ("/subagents/{subagent_id}/forks/zip", "post"): ForkIn,
    ("/subagents/{subagent_id}/versions/zip", "post"): VersionIn,
}
# The JSON paths read a zip upload too, as they did before the zip paths existed.
ALSO_READS_ZIP = (
    "Also reads the multipart zip upload of the operation ending in `Zip`, at this path."
)


def _detail(subagent) -> SubAgentOut:
    """The answer to a write: the sub-agent the caller has just made or changed."""
    return _visible(catalog.read_detail(db(), subagent.id))


def _visible(read: catalog.Detail) -> SubAgentOut:
    session, viewer = db(), caller()
    after_this_request(_varies_by_language)
    return visible_detail(session, viewer, read, reader_language(session, viewer))


def _varies_by_language(response):
    """The best descendant is chosen for the reader's language (``reader_language``)."""
    response.vary.add("Accept-Language")
    return response


def _fresh_ranking() -> None:
    """Embedded mode has no beat: score sorts run the ranking first when it is due."""
    state = app_state()
    if state.settings.tasks_run_inline:
        state.ranking_schedule.refresh_if_due(state.unit_of_work)


NEAR_COPIES = (
    "A new root that nearly copies public sub-agents of others says so in `near_copies`: "
    "publish it as a fork of one with `POST /subagents/{id}/adopt-parent` (within 7 days, "
    "before anyone forks or installs it), or decline with `POST .../near-copies/decline`."
)


@bp.post("/subagents")
@bp.output(PublishedOut, status_code=201, description="created (200 if these bytes exist)")
@bp.doc(operation_id="publishSubagent", description=f"{ALSO_READS_ZIP} {NEAR_COPIES}")
def publish():
    """Publish a new sub-agent (JSON with `bundle`)."""
    return _publish(*read_body_with_bundle(PublishIn))


@bp.post("/subagents/zip")
@bp.output(PublishedOut, status_code=201, description="created (200 if these bytes exist)")
@bp.doc(operation_id="publishSubagentZip", description=NEAR_COPIES)
def publish_zip():
    """Publish a new sub-agent from a zip (multipart: `metadata` JSON and the zip `bundle`)."""
    return _publish(*read_zip_upload(PublishIn))


def _publish(body: PublishIn, bundle: bundles.Bundle):
    subagent, _version, created, offers = catalog.publish_as_requested(
        db(),
        caller(),
        on_behalf_of=body.on_behalf_of,
        title=body.title,
        category=body.category.value,
        bundle=bundle,
        summary=body.summary,
        story=body.story,
        tags=body.tags,
        visibility=body.visibility.value,
    )
    commit()
    if created:
        metrics.record_publish("root")
    detail = _detail(subagent)
    published = PublishedOut(**dict(detail), near_copies=[near_copy_out(o) for o in offers])
    return published, 201 if created else 200


@bp.get("/subagents/<int(max=2147483647):subagent_id>/near-copies")
@bp.output(NearCopyList)
@bp.doc(operation_id="listNearCopies")
def list_near_copies(subagent_id: int):
    """The open near-copy offers of a new root, for its author (empty for anyone else): what
    `near_copies` said when it was published, less what was answered or expired."""
    session, who = db(), caller()
    subagent = catalog.get_visible(session, who, subagent_id)
    offers = catalog.offers_for(session, who, subagent)
    return NearCopyList(items=[near_copy_out(o) for o in offers])


@bp.post("/subagents/<int(max=2147483647):subagent_id>/adopt-parent")
@bp.input(AdoptParentIn, arg_name="body")
@bp.output(SubAgentOut, description="now a fork of `parent_id` (also when it already was)")
@bp.doc(operation_id="adoptParent")
def adopt_parent(subagent_id: int, body: AdoptParentIn):
    """Accept a near-copy offer: the new root becomes a fork of the original it copies, so its
    lineage, reach and credit flow there. Its author (or a service publishing for people),
    within 7 days of publishing and before anyone forks or installs it."""
    subagent, _changed = catalog.adopt_parent(db(), caller(), subagent_id, body.parent_id)
    commit()
    return _detail(subagent)


@bp.post("/subagents/<int(max=2147483647):subagent_id>/near-copies/decline")
@bp.output(SubAgentOut, description="every open offer declined (nothing changes if none)")
@bp.doc(operation_id="declineNearCopies")
def decline_near_copies(subagent_id: int):
    """Keep the new root as a root of its own. A copy nearly identical to the original
    (similarity 0.8 or more) goes to the moderators with the evidence."""
    subagent = catalog.decline_near_copies(db(), caller(), subagent_id)
    commit()
    return _detail(subagent)


@bp.get("/subagents")
@bp.input(BrowseQuery, location="query", arg_name="query")
@bp.output(Page)
@bp.doc(operation_id="browseSubagents")
def list_subagents(query: BrowseQuery):
    """Browse and search public sub-agents (one search engine for every language). A search
    and the `top` and `trending` sorts show one card per tool: near-identical forks of it are
    hidden under the best placed one (`similar_count`), and `top` and `trending` show at most
    2 cards of one fork family in any 24 in a row while others are left."""
    if query.sort and query.sort.value in browse.SCORE_SORTS:
        _fresh_ranking()
    page = browse.browse(
        db(),
        caller(),
        q=query.q,
        category=query.category.value if query.category else None,
        tag=query.tag,
        sort=query.sort.value if query.sort else None,
        limit=query.limit,
        cursor=query.cursor,
        matcher=matcher_for(current_app, db()),
    )
    return page_out(page)


@bp.get("/subagents/<int(max=2147483647):subagent_id>")
@bp.output(SubAgentOut)
@bp.doc(operation_id="getSubagent")
def get_subagent(subagent_id: int):
    """One sub-agent with its latest version."""
    return _visible(catalog.get_visible_detail(db(), caller(), subagent_id))


@bp.patch("/subagents/<int(max=2147483647):subagent_id>")
@bp.input(UpdateIn, arg_name="body")
@bp.output(SubAgentOut)
@bp.doc(operation_id="updateSubagent")
def update_subagent(subagent_id: int, body: UpdateIn):
    """Edit the listing (author only). Bundles change only through new versions."""
    session = db()
    who = caller()
    who.require()
    subagent = catalog.get_visible(session, who, subagent_id)
    catalog.update_listing(session, who, subagent, body.model_dump(exclude_unset=True))
    commit()
    return _detail(subagent)


@bp.get("/subagents/<int(max=2147483647):subagent_id>/versions")
@bp.input(VersionsQuery, location="query", arg_name="query")
@bp.output(VersionList)
@bp.doc(operation_id="listVersions")
def list_versions(subagent_id: int, query: VersionsQuery):
    """The versions, oldest first, up to `limit` (100) at a time; `next_cursor` goes on."""
    session = db()
    subagent = catalog.get_visible(session, caller(), subagent_id)
    after = decode_cursor(query.cursor, (int,))[0] if query.cursor else 0
    versions, more = catalog.versions_after(session, subagent, after, query.limit)
    return VersionList(
        items=[version_out(v) for v in versions],
        next_cursor=encode_cursor(versions[-1].number) if more else None,
    )


@bp.post("/subagents/<int(max=2147483647):subagent_id>/versions")
@bp.output(VersionOut, status_code=201, description="created (200 if these bytes exist)")
@bp.doc(operation_id="publishVersion", description=ALSO_READS_ZIP)
def publish_version(subagent_id: int):
    """Publish a new version (author, or a service on the author's behalf)."""
    return _publish_version(subagent_id, *read_body_with_bundle(VersionIn))


@bp.post("/subagents/<int(max=2147483647):subagent_id>/versions/zip")
@bp.output(VersionOut, status_code=201, description="created (200 if these bytes exist)")
@bp.doc(operation_id="publishVersionZip")
def publish_version_zip(subagent_id: int):
    """Publish a new version from a zip (multipart: `metadata` JSON and the zip `bundle`)."""
    return _publish_version(subagent_id, *read_zip_upload(VersionIn))


def _publish_version(subagent_id: int, body: VersionIn, bundle: bundles.Bundle):
    session = db()
    who = caller()
    subagent = catalog.get_visible(session, who, subagent_id)
    publisher = catalog.resolve_publisher(session, who, body.on_behalf_of)
    version, created = catalog.publish_version(session, publisher, subagent, bundle, body.changelog)
    if body.upstream_update_id is not None:
        upstream.resolve(session, who, body.upstream_update_id, subagent, version)
    commit()
    if created:
        metrics.record_publish("version")
    return version_out(version), 201 if created else 200


@bp.get(
    "/subagents/<int(max=2147483647):subagent_id>/versions/<int(max=2147483647):version_id>/bundle"
)
@bp.input(BundleQuery, location="query", arg_name="query")
@bp.output(BundleOut, description="the bundle as JSON, or a zip with `format=zip`")
@bp.doc(operation_id="getBundle")
def get_bundle(subagent_id: int, version_id: int, query: BundleQuery):
    """Download a version's bundle to import it. Yanked versions only for those who have it."""
    session = db()
    who = caller()
    subagent = catalog.get_visible(session, who, subagent_id)
    version = catalog.get_readable_version(session, who, subagent, version_id)
    bundle = catalog.load_bundle(session, version)
    if query.format == "zip":
        return send_file(
            io.BytesIO(bundle_to_zip(bundle)),
            mimetype="application/zip",
            as_attachment=True,
            download_name=f"subagent-{subagent.id}-v{version.number}.zip",
        )
    return BundleOut(sha256=bundle.sha256, manifest=bundle.manifest, files=bundle.files)


@bp.post("/subagents/<int(max=2147483647):subagent_id>/forks")
@bp.output(SubAgentOut, status_code=201, description="created (200 if this fork exists)")
@bp.doc(operation_id="forkSubagent", description=ALSO_READS_ZIP)
def fork_subagent(subagent_id: int):
    """Fork: the fork request text plus the new bundle; the server records the parent link."""
    return _fork(subagent_id, *read_body_with_bundle(ForkIn))


@bp.post("/subagents/<int(max=2147483647):subagent_id>/forks/zip")
@bp.output(SubAgentOut, status_code=201, description="created (200 if this fork exists)")
@bp.doc(operation_id="forkSubagentZip")
def fork_subagent_zip(subagent_id: int):
    """Fork from a zip (multipart: `metadata` JSON and the zip `bundle`)."""
    return _fork(subagent_id, *read_zip_upload(ForkIn))


def _fork(subagent_id: int, body: ForkIn, bundle: bundles.Bundle):
    command = fork_command(subagent_id, body, bundle)
    child, _version, created = catalog.fork_as_requested(db(), caller(), command)
    commit()
    if created:
        metrics.record_publish("fork")
    return _detail(child), 201 if created else 200


@bp.get("/subagents/<int(max=2147483647):subagent_id>/forks")
@bp.input(PageQuery, location="query", arg_name="query")
@bp.output(Page)
@bp.doc(operation_id="listForks")
def list_forks(subagent_id: int, query: PageQuery):
    """Direct forks, most installed first."""
    session = db()
    who = caller()
    parent = catalog.get_visible(session, who, subagent_id)
    return page_out(browse.forks_of(session, who, parent, limit=query.limit, cursor=query.cursor))


@bp.get("/subagents/<int(max=2147483647):subagent_id>/lineage")
@bp.output(Lineage)
@bp.doc(operation_id="getLineage")
def get_lineage(subagent_id: int):
    """Ancestors from the root to the parent."""
    session = db()
    who = caller()
    return lineage_out(browse.lineage(session, who, catalog.get_visible(session, who, subagent_id)))


@bp.get("/subagents/<int(max=2147483647):subagent_id>/tree")
@bp.input(TreeQuery, location="query", arg_name="query")
@bp.output(Tree)
@bp.doc(operation_id="getTree")
def get_tree(subagent_id: int, query: TreeQuery):
    """The subtree below a sub-agent, breadth first, capped in depth, children and nodes."""
    session = db()
    who = caller()
    top, parent = catalog.get_visible_with_parent(session, who, subagent_id)
    settings = app_state().settings
    tree = browse.subtree(
        session,
        who,
        top,
        parent,
        depth=min(query.depth, settings.tree_depth_max),
        max_children=query.max_children,
        max_nodes=settings.tree_nodes_max,
    )
    return tree_out(tree)


@bp.get("/subagents/<int(max=2147483647):subagent_id>/diff")
@bp.input(DiffQuery, location="query", arg_name="query")
@bp.output(DiffOut)
@bp.doc(operation_id="getDiff")
def get_diff(subagent_id: int, query: DiffQuery):
    """Files and manifest of a version against its parent version (or the previous one)."""
    session = db()
    who = caller()
    subagent = catalog.get_visible(session, who, subagent_id)
    version = catalog.get_readable_version(session, who, subagent, query.version_id)
    base = catalog.diff_base(session, who, subagent, version, query.against.value)
    diff = diff_bundles(
        catalog.load_bundle(session, base) if base else None,
        catalog.load_bundle(session, version),
    )
    return DiffOut(
        subagent_id=subagent.id,
        version_id=version.id,
        against=query.against.value,
        base_version_id=base.id if base else None,
        **diff,
    )


@bp.get("/subagents/<int(max=2147483647):subagent_id>/switch-plan")
@bp.input(SwitchPlanQuery, location="query", arg_name="query")
@bp.output(SwitchPlanOut)
@bp.doc(operation_id="getSwitchPlan")
def get_switch_plan(subagent_id: int, query: SwitchPlanQuery):
    """Before switching from this sub-agent to another branch of its lineage (`to`): what
    becomes of each field of the data it keeps (carried, transformed, at risk or lost),
    composing the migrations declared along the fork path. Changes nothing."""
    planned = plan_switch(
        db(),
        caller(),
        subagent_id,
        query.to,
        version_id=query.version_id,
        target_version_id=query.to_version_id,
    )
    return switch_plan_out(planned)


@bp.post("/subagents/<int(max=2147483647):subagent_id>/switch")
@bp.input(SwitchIn, arg_name="body")
@bp.output(SwitchOut, status_code=201, description="switched (200 if it already was)")
@bp.doc(operation_id="switchSubagent")
def switch(subagent_id: int, body: SwitchIn):
    """Move the caller's install of this sub-agent to another branch of its lineage (`to`),
    once the person agreed to the plan (`GET …/switch-plan`): `accept_losses` when it is not
    safe, `grant_scopes` for every scope the target asks for beyond the current one's; 409
    naming what is missing otherwise. The plan's `migration` is for the main agent to apply
    to the person's records."""
    switched = switch_install(
        db(),
        caller(),
        subagent_id,
        body.to,
        target_version_id=body.to_version_id,
        accept_losses=body.accept_losses,
        grant_scopes=body.grant_scopes,
    )
    commit()
    installed = switched.installed
    out = SwitchOut(
        install=install_out(installed.install, installed.new_scopes),
        plan=switch_plan_out(switched.planned),
    )
    return out, 201 if installed.created else 200


@bp.post("/subagents/<int(max=2147483647):subagent_id>/install")
@bp.input(InstallIn, arg_name="body")
@bp.output(InstallOut, status_code=201, description="installed (200 if it already was)")
@body_optional
@bp.doc(operation_id="installSubagent")
def install(subagent_id: int, body: InstallIn):
    """Import a version into the caller's agent; says which scopes are newly asked for."""
    session = db()
    who = caller()
    who.require("install")
    subagent = catalog.get_visible(session, who, subagent_id)
    installed = installs.install(
        session,
        who,
        subagent,
        version_id=body.version_id,
        source=body.source.value,
        exposure_id=body.exposure_id,
    )
    commit()
    return install_out(installed.install, installed.new_scopes), 201 if installed.created else 200


@bp.delete("/subagents/<int(max=2147483647):subagent_id>/install")
@bp.output({}, status_code=204)
@bp.doc(operation_id="uninstallSubagent")
def uninstall(subagent_id: int):
    """Remove it from the caller's agent (idempotent)."""
    session = db()
    who = caller()
    who.require("install")
    subagent = catalog.get_visible(session, who, subagent_id)
    installs.uninstall(session, who, subagent)
    commit()
    return ""


@bp.post("/subagents/<int(max=2147483647):subagent_id>/fork-requests")
@bp.input(ForkRequestIn, arg_name="body")
@bp.output(ForkRequestOut, status_code=201, description="queued (200 if already queued)")
@bp.doc(operation_id="requestFork")
def request_fork(subagent_id: int, body: ForkRequestIn):
    """Ask for a customized fork; the coding agent picks it up from the queue."""
    session = db()
    who = caller()
    who.require("request")
    subagent = catalog.get_visible(session, who, subagent_id)
    row, created = installs.request_fork(session, who, subagent, body.text)
    commit()
    requester = session.get(User, row.requester_id)
    return fork_request_out(row, requester), 201 if created else 200


@bp.post("/subagents/<int(max=2147483647):subagent_id>/yank")
@bp.input(YankIn, arg_name="body")
@bp.output(SubAgentOut)
@bp.doc(operation_id="yankSubagent")
def yank(subagent_id: int, body: YankIn):
    """Yank the sub-agent or one version (author or moderator), with a reason."""
    session = db()
    who = caller()
    who.require()
    subagent = catalog.get_visible(session, who, subagent_id)
    catalog.yank(session, who, subagent, body.reason, body.version_id)
    commit()
    return _detail(subagent)


@bp.post("/subagents/<int(max=2147483647):subagent_id>/quarantine")
@bp.input(QuarantineIn, arg_name="body")
@bp.output(SubAgentOut)
@bp.doc(operation_id="quarantineSubagent")
def quarantine(subagent_id: int, body: QuarantineIn):
    """Quarantine (or lift it with `lift: true`); moderators only."""
    session = db()
    who = caller()
    who.require()
    subagent = catalog.get_visible(session, who, subagent_id)
    catalog.quarantine(session, who, subagent, body.reason, body.lift)
    commit()
    return _detail(subagent)


@bp.post("/subagents/<int(max=2147483647):subagent_id>/report")
@bp.input(ReportIn, arg_name="body")
@bp.output(ReportOut, status_code=201, description="filed (200 if already reported)")
@bp.doc(operation_id="reportSubagent")
def report(subagent_id: int, body: ReportIn):
    """Report a problem to the moderators (one report per user and sub-agent)."""
    session = db()
    who = caller()
    who.require()
    subagent = catalog.get_visible(session, who, subagent_id)
    row, created = catalog.report(session, who, subagent, body.reason.value, body.detail)
    commit()
    return report_out(row, None), 201 if created else 200


# The caller's installs, the fork-request queue and the moderators' reports are catalog rows
# listed under the Account tag of the API document, beside ``/me``.
ACCOUNT = {"tags": ["Account"]}


@bp.get("/me/installs")
@bp.input(PageQuery, location="query", arg_name="query")
@bp.output(InstallList)
@bp.doc(operation_id="listMyInstalls", **ACCOUNT)
def my_installs(query: PageQuery):
    """The caller's imported sub-agents, newest first."""
    page = installs.my_installs(db(), caller(), limit=query.limit, cursor=query.cursor)
    return install_page_out(page)


@bp.get("/fork-requests")
@bp.input(ForkRequestQuery, location="query", arg_name="query")
@bp.output(ForkRequestList)
@bp.doc(operation_id="listForkRequests", **ACCOUNT)
def fork_requests(query: ForkRequestQuery):
    """The coding agent's queue of customization requests (oldest first)."""
    page = installs.fork_request_queue(
        db(), caller(), status=query.status, limit=query.limit, cursor=query.cursor
    )
    return fork_request_page_out(page)


@bp.get("/reports")
@bp.input(PageQuery, location="query", arg_name="query")
@bp.output(ReportList)
@bp.doc(operation_id="listReports", **ACCOUNT)
def reports(query: PageQuery):
    """Open reports, for moderators; a near-copy report (filed by Sprig when a copy declines
    or ignores the offer to become a fork) carries its evidence."""
    page = browse.open_reports(db(), caller(), limit=query.limit, cursor=query.cursor)
    return ReportList(
        items=[report_out(item.report, item.offer) for item in page.items],
        next_cursor=page.next_cursor,
    )


# ---- upstream updates: a parent's new version offered to each fork (market.catalog.upstream)


@bp.get("/subagents/<int(max=2147483647):subagent_id>/upstream-updates")
@bp.input(UpstreamQuery, location="query", arg_name="query")
@bp.output(UpstreamProposalList)
@bp.doc(operation_id="listUpstreamUpdates")
def list_upstream_updates(subagent_id: int, query: UpstreamQuery):
    """A fork's proposed updates from its parent, newest first, with how many are open: its
    author's (and moderators'); others see none."""
    session, who = db(), caller()
    fork = catalog.get_visible(session, who, subagent_id)
    return upstream_page_out(
        upstream.offers_for(
            session, who, fork, status=query.status, limit=query.limit, cursor=query.cursor
        )
    )


@bp.get("/upstream-updates/<int(max=2147483647):proposal_id>")
@bp.output(UpstreamDetailOut)
@bp.doc(operation_id="getUpstreamUpdate")
def get_upstream_update(proposal_id: int):
    """One proposal: per-file merge status, conflicts, and the diff accepting it would make."""
    session, who = db(), caller()
    offer = upstream.get_offer(session, who, proposal_id)
    return upstream_detail_out(session, offer)


@bp.post("/upstream-updates/<int(max=2147483647):proposal_id>/accept")
@bp.output(UpstreamAcceptOut, status_code=201, description="merged (200 if it already was)")
@bp.doc(operation_id="acceptUpstreamUpdate")
def accept_upstream_update(proposal_id: int):
    """Make the merge the fork's next version (the fork's author). 409 when it conflicts or
    the fork moved on since (then `refresh` merges it again)."""
    session, who = db(), caller()
    offer, version, created = upstream.accept(session, who, proposal_id)
    commit()
    if created:
        metrics.record_publish("version")
    body = UpstreamAcceptOut(proposal=upstream_out(offer), version=version_out(version))
    return body, 201 if created else 200


@bp.post("/upstream-updates/<int(max=2147483647):proposal_id>/decline")
@bp.output(UpstreamProposalOut)
@bp.doc(operation_id="declineUpstreamUpdate")
def decline_upstream_update(proposal_id: int):
    """Decline a proposal (the fork's author); the parent's next version is offered anew."""
    session, who = db(), caller()
    offer = upstream.decline(session, who, proposal_id)
    commit()
    return upstream_out(offer)


@bp.post("/upstream-updates/<int(max=2147483647):proposal_id>/refresh")
@bp.output(UpstreamDetailOut)
@bp.doc(operation_id="refreshUpstreamUpdate")
def refresh_upstream_update(proposal_id: int):
    """Merge an open proposal again onto the fork's newest version (the fork's author)."""
    session, who = db(), caller()
    offer = upstream.refresh(session, who, proposal_id)
    commit()
    return upstream_detail_out(session, offer)


@bp.get("/upstream-conflicts")
@bp.input(PageQuery, location="query", arg_name="query")
@bp.output(UpstreamQueue)
@bp.doc(operation_id="listUpstreamConflicts", **ACCOUNT)
def upstream_conflicts(query: PageQuery):
    """The coding agent's queue of open upstream updates that conflict (newest first): it
    resolves one by publishing the resolved version on the author's behalf."""
    offers, next_cursor = upstream.conflict_queue(
        db(), caller(), limit=query.limit, cursor=query.cursor
    )
    return upstream_queue_out(offers, next_cursor)


def read_zip_upload(model: type[BaseModel]) -> tuple[BaseModel, bundles.Bundle]:
    """A zip upload: multipart with ``metadata`` (JSON) and a zip file field ``bundle``."""
    if request.mimetype != "multipart/form-data":
        raise UnsupportedMediaType(
            "Send `multipart/form-data` with a `metadata` field and the zip as `bundle`.",
            errors=[{"location": "headers.Content-Type", "message": "unsupported"}],
        )
    raw = request.form.get("metadata")
    if raw is None:
        raise Unprocessable(
            "Multipart uploads carry a `metadata` field with the JSON listing.",
            errors=[{"location": "form.metadata", "message": "missing"}],
        )
    body = parse_model(model, parse_json(raw, "The `metadata` field"), "form.metadata")
    upload = request.files.get("bundle")
    if upload is None:
        raise Unprocessable(
            "Multipart uploads carry the zip in a file field named `bundle`.",
            errors=[{"location": "files.bundle", "message": "missing"}],
        )
    if getattr(body, "bundle", None) is not None:
        raise Unprocessable("Send the bundle either as JSON or as a zip, not both.")
    return body, bundle_from_zip(upload.stream)


def read_body_with_bundle(model: type[BaseModel]) -> tuple[BaseModel, bundles.Bundle]:
    """A publish body: JSON with ``bundle``, or a zip upload (``read_zip_upload``). Both
    reach the same checks."""
    if request.mimetype == "multipart/form-data":
        return read_zip_upload(model)
    if request.get_data() and not request.is_json:
        raise UnsupportedMediaType(
            "Send `application/json` or `multipart/form-data`.",
            errors=[{"location": "headers.Content-Type", "message": "unsupported"}],
        )
    body = parse_model(model, request.get_json())
    if body.bundle is None:
        raise Unprocessable(
            "A bundle is required (JSON `bundle`, or a zip upload).",
            errors=[{"location": "json.bundle", "message": "Field required"}],
        )
    return body, bundles.bundle_from_json(body.bundle.model_dump())
