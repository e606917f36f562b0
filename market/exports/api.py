"""Reward-dataset exports for the training team (scope ``exports``, service tokens only)."""

from __future__ import annotations

from pathlib import PurePosixPath

from apiflask import APIBlueprint
from flask import send_file, url_for

from feedback.export import ExportParameters
from market.exports import services as export_service
from market.exports.models import ExportRun
from market.exports.schemas import (
    ExportFileOut,
    ExportIn,
    ExportListQuery,
    ExportRunList,
    ExportRunOut,
)
from market.exports.storage import RunStorage
from market.exports.tasks import export_rewards_task
from market.identity.tokens import caller
from market.platform.api_deps import commit, db
from market.platform.errors import NotFound, ServiceUnavailable
from market.platform.state import app_state

bp = APIBlueprint("exports", __name__, tag="Reward exports")

SCOPE = "exports"
_ID = "<int(max=2147483647):run_id>"


def _run_out(run: ExportRun) -> ExportRunOut:
    files = []
    if run.status == "succeeded" and run.manifest:
        files = [
            ExportFileOut(
                **{k: entry[k] for k in ("path", "config", "category", "split", "rows")},
                bytes=entry["bytes"],
                sha256=entry["sha256"],
                url=url_for("exports.get_export_file", run_id=run.id, path=entry["path"]),
            )
            for entry in run.manifest.get("files", [])
        ]
    return ExportRunOut(**export_service.run_summary(run), files=files)


def _start(run_id: int) -> None:
    """Run the export now, in this request (embedded mode: no worker, Celery is eager), or
    queue it for a worker."""
    state = app_state()
    settings = state.settings
    if settings.tasks_run_inline:
        export_service.execute_run(
            state.engine,
            run_id,
            RunStorage.from_settings(settings),
            settle_seconds=settings.export_settle_seconds,
        )
        return
    # Through this app's own Celery app (as every request-started task is): a process that
    # built several apps would otherwise send it with the newest one's broker.
    task = state.celery.tasks[export_rewards_task.name]
    try:
        task.delay(run_id)
    except Exception as error:  # the broker is away: say so, the run stays queued
        raise ServiceUnavailable(
            f"Export run {run_id} is queued but the task queue is unavailable; retry later.",
            headers={"Retry-After": "30"},
        ) from error


@bp.post("/exports")
@bp.input(ExportIn, arg_name="body")
@bp.output(ExportRunOut, status_code=202, description="accepted (the run may already be done)")
@bp.doc(operation_id="createExport")
def create_export(body: ExportIn):
    """Start a reward-dataset export: Parquet shards of scalar rewards, TRL preference pairs,
    KTO labels and pseudonymized ratings, with a dataset card and a manifest. Poll the run."""
    who = caller()
    who.require(SCOPE)
    session = db()
    since = body.since_run
    if since is None and body.incremental:
        since = export_service.last_succeeded_run(session)
    parameters = ExportParameters(
        k_anonymity=body.k_anonymity,
        confidence=body.confidence,
        test_share=body.test_share,
        include_comments=body.include_comments,
        conversational=body.conversational,
        openai_jsonl=body.openai_jsonl,
    )
    run = export_service.create_run(session, parameters, since_run=since, requested_by=who.user_id)
    commit()
    run_id = run.id
    _start(run_id)
    session.expire_all()
    run = session.get(ExportRun, run_id)
    location = url_for("exports.get_export", run_id=run_id)
    return _run_out(run), 202, {"Location": location}


@bp.get("/exports")
@bp.input(ExportListQuery, location="query", arg_name="query")
@bp.output(ExportRunList)
@bp.doc(operation_id="listExports")
def list_exports(query: ExportListQuery):
    """Every export run, newest first (paged: pass `next_cursor` back as `cursor`)."""
    who = caller()
    who.require(SCOPE)
    runs, next_cursor = export_service.list_runs(db(), limit=query.limit, cursor=query.cursor)
    return ExportRunList(items=[_run_out(run) for run in runs], next_cursor=next_cursor)


@bp.get(f"/exports/{_ID}")
@bp.output(ExportRunOut)
@bp.doc(operation_id="getExport")
def get_export(run_id: int):
    """A run: its status, parameters, watermark, manifest and files."""
    who = caller()
    who.require(SCOPE)
    run = db().get(ExportRun, run_id)
    if run is None:
        raise NotFound(f"No export run {run_id}.")
    return _run_out(run)


@bp.get(f"/exports/{_ID}/files/<path:path>")
@bp.output(
    {},
    content_type="application/octet-stream",
    description="the file (Parquet, JSONL, README.md or manifest.json)",
)
@bp.doc(operation_id="getExportFile")
def get_export_file(run_id: int, path: str):
    """Download one file of a run that succeeded (the paths its manifest lists, and
    ``manifest.json``)."""
    who = caller()
    who.require(SCOPE)
    run = db().get(ExportRun, run_id)
    if run is None or run.status != "succeeded" or not run.location or not run.manifest:
        raise NotFound(f"No finished export run {run_id}.")
    listed = {entry["path"] for entry in run.manifest.get("files", [])} | {"manifest.json"}
    # Only paths the manifest lists are served: no walking out of the run's directory.
    if path not in listed:
        raise NotFound(f"Export run {run_id} has no file {path!r}.")
    storage = RunStorage.from_settings(app_state().settings)
    try:
        handle = storage.open(run.location, path)
    except (FileNotFoundError, IsADirectoryError):
        raise NotFound(f"The file {path!r} of export run {run_id} is no longer stored.") from None
    name = PurePosixPath(path)
    mimetype = {
        ".parquet": "application/vnd.apache.parquet",
        ".jsonl": "application/jsonl",
        ".md": "text/markdown",
        ".json": "application/json",
    }.get(name.suffix, "application/octet-stream")
    # send_file closes the handle once the body is sent, from a folder or a bucket alike.
    return send_file(
        handle, mimetype=mimetype, as_attachment=True, download_name=name.name, max_age=0
    )
