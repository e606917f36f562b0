"""``/subagents``: publish, read, fork, browse, lineage, diff, install, moderation; the
caller's installs, the fork-request queue and the reports."""

from __future__ import annotations

import io

from apiflask import APIBlueprint
from flask import after_this_request, current_app, request, send_file
from pydantic import BaseModel
from sqlmodel import select

from market.catalog import bundles, installs
from market.catalog import queries as browse
from market.catalog import services as catalog
from market.catalog.bundles.archive import bundle_from_zip, bundle_to_zip
from market.catalog.bundles.diff import diff_bundles
from market.catalog.bundles.limits import BundleError
from market.catalog.models import Report
from market.catalog.schemas import (
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
    Page,
    PageQuery,
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
    VersionIn,
    VersionList,
    VersionOut,
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
    page_out,
    subagent_out,
    switch_plan_out,
    tree_out,
    version_out,
    visible_detail,
)
from market.catalog.switch_plans import plan_switch, switch_install
from market.identity.access import can_moderate
from market.identity.models import User
from market.identity.tokens import caller, reader_language
from market.platform import metrics
from market.platform.api_deps import body_optional, commit, db, parse_json, parse_model
from market.platform.errors import Forbidden, Unprocessable, UnsupportedMediaType
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
    session = db()
    latest = session.get(catalog.Version, subagent.latest_version_id)
    return _visible_links(subagent_out(subagent, catalog.get_author(session, subagent), latest))


def _visible_links(detail: SubAgentOut) -> SubAgentOut:
    session, viewer = db(), caller()
    after_this_request(_varies_by_language)
    return visible_detail(session, viewer, detail, reader_language(session, viewer))


def _varies_by_language(response):
    """The best descendant is chosen for the reader's language (``reader_language``)."""
    response.vary.add("Accept-Language")
    return response


def _fresh_ranking() -> None:
    """Embedded mode has no beat: score sorts run the ranking first when it is due."""
    state = app_state()
    if state.settings.celery_eager or not state.settings.redis_url:
        state.ranking_schedule.refresh_if_due(state.unit_of_work)


@bp.post("/subagents")
@bp.output(SubAgentOut, status_code=201, description="created (200 if these bytes exist)")
@bp.doc(operation_id="publishSubagent", description=ALSO_READS_ZIP)
def publish():
    """Publish a new sub-agent (JSON with `bundle`)."""
    return _publish(*read_body_with_bundle(PublishIn))


@bp.post("/subagents/zip")
@bp.output(SubAgentOut, status_code=201, description="created (200 if these bytes exist)")
@bp.doc(operation_id="publishSubagentZip")
def publish_zip():
    """Publish a new sub-agent from a zip (multipart: `metadata` JSON and the zip `bundle`)."""
    return _publish(*read_zip_upload(PublishIn))


def _publish(body: PublishIn, bundle: bundles.Bundle):
    session = db()
    publisher = catalog.resolve_publisher(session, caller(), body.on_behalf_of)
    subagent, _version, created = catalog.publish(
        session,
        publisher,
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
    return _detail(subagent), 201 if created else 200


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
    return _visible_links(subagent_out(*catalog.get_visible_detail(db(), caller(), subagent_id)))


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
@bp.output(VersionList)
@bp.doc(operation_id="listVersions")
def list_versions(subagent_id: int):
    """Every version, oldest first."""
    session = db()
    subagent = catalog.get_visible(session, caller(), subagent_id)
    return VersionList(items=[version_out(v) for v in catalog.list_versions(session, subagent)])


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
    top = catalog.get_visible(session, who, subagent_id)
    settings = app_state().settings
    tree = browse.subtree(
        session,
        who,
        top,
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
    return ReportOut.model_validate(row, from_attributes=True), 201 if created else 200


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
    """Open reports, for moderators."""
    who = caller()
    who.require()
    if not can_moderate(who):
        raise Forbidden("Only moderators read reports.")
    statement = select(Report).where(Report.status == "open")
    if query.cursor:
        (last_id,) = decode_cursor(query.cursor, (int,))
        statement = statement.where(Report.id > last_id)
    rows = list(db().exec(statement.order_by(Report.id).limit(query.limit + 1)))
    items = [ReportOut.model_validate(r, from_attributes=True) for r in rows[: query.limit]]
    next_cursor = encode_cursor(rows[query.limit - 1].id) if len(rows) > query.limit else None
    return ReportList(items=items, next_cursor=next_cursor)


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
