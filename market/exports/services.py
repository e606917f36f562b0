"""Reward-dataset exports against the database: numbered runs, loading, writing, publishing.

What is read: versions that are active, of sub-agents that are public and active (a private,
unlisted, yanked or quarantined sub-agent never appears, not even as a parent's summary in a
prompt), and the feedback of people who opted in (``share_feedback_for_training``), last
written at or before the run's watermark. The watermark is the run's start minus
``settle_seconds``: a rating being committed while the run starts is left for the next run
rather than missed by both (the next incremental run reads ``updated_at`` > this watermark);
on PostgreSQL the run also waits, before it reads, for every transaction writing as it
started to end, so a rating stamped earlier and committed late is read too.

Feedback is streamed from the database in chunks into compact numpy arrays (about 40 bytes per
rating); text (prompts, bundles, comments) is loaded per batch while the rows are written, by
``DatabaseTexts``. Everything else is ``feedback.export``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import secrets
import subprocess
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import orjson
import sqlmodel
from sqlalchemy import Engine, case, select, text, update
from sqlmodel import Session

from feedback.dataset_files import abandon_run, publish_run, run_name, sha256_of, start_run
from feedback.export import (
    CatalogArrays,
    Comment,
    ExportParameters,
    FeedbackColumns,
    Progress,
    RewardExport,
    write_card,
)
from feedback.rewards import VersionText
from feedback.scrub import Scrubber
from market.catalog.models import BundleBlob, SubAgent, Version
from market.exports.models import ExportRun
from market.exports.storage import RunStorage
from market.identity.access import publicly_listed_clause
from market.identity.models import User
from market.platform import metrics
from market.platform.db import Lock, UnitOfWork, holding_alone
from market.platform.errors import Conflict, NotFound
from market.platform.pagination import newest_first_page
from market.platform.time import utcnow
from market.recommend.models import Exposure
from market.usage.models import COUNTED_RATING, Feedback

log = logging.getLogger("feedback.export")

FEEDBACK_CHUNK = 100_000
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_IN_CHUNK = 900  # ids per IN (...) list: under every backend's bound-parameter limit


# --------------------------------------------------------------------------- runs
def create_run(
    session: Session,
    parameters: ExportParameters,
    *,
    since_run: int | None = None,
    requested_by: int | None = None,
) -> ExportRun:
    """A queued run; ``since_run`` must be a run that succeeded (its watermark is the start)."""
    if since_run is not None:
        previous = session.get(ExportRun, since_run)
        if previous is None:
            raise NotFound(f"No export run {since_run}.")
        if previous.status != "succeeded" or previous.watermark is None:
            raise Conflict(
                f"Export run {since_run} is {previous.status}; only a run that "
                "succeeded can start an incremental export."
            )
    run = ExportRun(
        parameters=parameters.as_dict(), since_run_id=since_run, requested_by_id=requested_by
    )
    session.add(run)
    session.flush()
    return run


def list_runs(
    session: Session, *, limit: int, cursor: str | None
) -> tuple[list[ExportRun], str | None]:
    """Runs newest first, a page of ``limit`` after ``cursor``; (runs, the next cursor)."""
    # SQLModel's select: its session hands back the runs themselves, not one-column rows.
    statement = sqlmodel.select(ExportRun)
    return newest_first_page(session, statement, ExportRun.id, limit=limit, cursor=cursor)


def last_succeeded_run(session: Session) -> int | None:
    return session.execute(
        select(ExportRun.id)
        .where(ExportRun.status == "succeeded")
        .order_by(ExportRun.id.desc())
        .limit(1)
    ).scalar()


def code_version() -> str:
    """``git describe`` of the checkout when there is one, else the installed package version."""
    here = Path(__file__).resolve().parent.parent
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],  # noqa: S607 - git on PATH
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        if described:
            return f"git:{described}"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return f"sprig-market=={importlib.metadata.version('sprig-market')}"
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def run_folder(engine: Engine, run: ExportRun) -> str:
    """The run's folder name: its number and the first 32 bits of SHA-256 over the database's
    address (password left out), the run's number and the moment it was created. The same run
    always gets the same name, so a redo after a crash clears its own unfinished folder; a run
    of the same number from another database, or from this one created afresh, gets another,
    so ``datasets`` (which caches a local dataset by its folder's name) never serves one run's
    rows for another's."""
    identity = "\n".join(
        [
            engine.url.render_as_string(hide_password=True),
            str(run.id),
            _aware(run.created_at).isoformat(),
        ]
    )
    return run_name(run.id, hashlib.sha256(identity.encode()).hexdigest()[:8])


def execute_run(
    engine: Engine,
    run_id: int,
    destination: str | Path | RunStorage,
    *,
    settle_seconds: float = 5.0,
    progress: Progress | None = None,
) -> ExportRun:
    """Build run ``run_id``'s files and publish them to ``destination`` (a local folder, or
    a :class:`RunStorage`: the folder or object storage). Idempotent: a run that succeeded is
    left alone; a run found ``running`` (its worker died) is redone from scratch, unless it
    was kept whole before its worker died: it is then recorded from its manifest. A failure
    marks the run failed with its reason and leaves no files. A run another worker is building
    (the same task delivered twice) is left to it and returned as it stands."""
    storage = destination if isinstance(destination, RunStorage) else RunStorage(str(destination))
    with _building_alone(engine, run_id) as alone:
        if not alone:
            log.warning("export run %s is being built by another worker; left to it", run_id)
            with UnitOfWork(engine) as unit:
                return unit.session.get(ExportRun, run_id)
        return _build(engine, run_id, storage, settle_seconds, progress)


@contextmanager
def _building_alone(engine: Engine, run_id: int) -> Iterator[bool]:
    """Whether this worker is the only one building run ``run_id``, held until the block ends.

    The same task can be delivered twice while its first delivery still runs (a worker that
    loses its broker connection gives its unacknowledged tasks back). Two builders of one run
    share its unfinished folder, each clearing it as a crashed attempt, and the one that loses
    marks a published run failed. On PostgreSQL the builder holds the run's lock
    (``market.platform.db.holding_alone``), which ends with its connection, so a run whose
    worker died is built by the next delivery. The embedded default (SQLite) runs its tasks
    inline, one delivery each."""
    if engine.dialect.name != "postgresql":
        yield True
        return
    with holding_alone(engine, Lock.EXPORT_BUILD, run_id) as alone:
        yield alone


def _build(
    engine: Engine,
    run_id: int,
    storage: RunStorage,
    settle_seconds: float,
    progress: Progress | None,
) -> ExportRun:
    with UnitOfWork(engine) as unit:
        session = unit.session
        run = session.get(ExportRun, run_id)
        if run is None:
            raise NotFound(f"No export run {run_id}.")
        if run.status in ("succeeded", "failed"):
            return run
        name = run_folder(engine, run)
        kept = storage.kept_manifest(name) if run.status == "running" else None
        if kept is not None:  # the folder's name is this run's own (``run_folder``)
            # Its worker died after keeping the run whole and before recording it; the run may
            # have been read already. Recorded as kept: built again, it would be refused (its
            # folder exists) or replaced under its readers with other pseudonyms, and left
            # unrecorded its watermark would not move, so the next incremental run would
            # export the same ratings again.
            log.warning("export run %s was kept but not recorded; recorded now", run_id)
            return _record_success(
                engine,
                run_id,
                kept,
                storage.location(name),
                watermark=datetime.fromisoformat(kept["watermark"]),
                finished=datetime.fromisoformat(kept["finished_at"]),
            )
        started = utcnow()
        writing = _writes_in_progress(session)
        session.execute(
            update(ExportRun)
            .where(ExportRun.id == run_id)
            .values(status="running", started_at=started, error=None)
        )
        unit.commit()
        since_watermark = None
        if run.since_run_id is not None:
            since_watermark = session.get(ExportRun, run.since_run_id).watermark
            since_watermark = _aware(since_watermark)
    watermark = started - timedelta(seconds=settle_seconds)
    parameters = ExportParameters(**run.parameters)
    with storage.building() as export_root:
        try:
            _wait_for_writes(engine, writing)
            with UnitOfWork(engine) as unit:
                session = unit.session
                catalog = load_catalog(session)
                feedback = load_feedback(session, watermark, since_watermark)
                # The key exists only in this frame and the export object: nothing stores it, so
                # this run's pseudonyms cannot be recomputed or linked to another run's.
                export = RewardExport(
                    catalog,
                    feedback,
                    parameters,
                    pseudonym_key=secrets.token_bytes(32),
                    progress=progress,
                )
                del feedback  # the export keeps what it needs
                texts = DatabaseTexts(session, catalog)
                directory = start_run(export_root, name)
                result = export.write(directory, texts)
            run_info = {
                "run": run_id,
                "name": name,
                "since_run": run.since_run_id,
                "watermark": watermark.isoformat(),
                "code_version": code_version(),
            }
            card_files = write_card(directory, result, parameters, run_info)
            finished = utcnow()
            files = [vars(shard) for shard in result.shards]
            files += [
                {
                    "path": path,
                    "config": "card",
                    "category": "",
                    "split": "",
                    "rows": 0,
                    "bytes": (directory / path).stat().st_size,
                    "sha256": sha256_of(directory / path),
                }
                for path in card_files
            ]
            manifest = {
                **run_info,
                "kind": "incremental" if run.since_run_id else "full",
                "since_watermark": since_watermark.isoformat() if since_watermark else None,
                "created_at": _aware(run.created_at).isoformat(),
                "started_at": started.isoformat(),
                "finished_at": finished.isoformat(),
                "parameters": parameters.as_dict(),
                "counts": result.counts,
                "lengths": result.lengths,
                "languages": result.languages,
                "model": result.model,
                "privacy": {
                    "consent": "only users with share_feedback_for_training",
                    "pseudonym": "HMAC-SHA256 of the user id under a random per-export key that "
                    "is never stored; first 128 bits, hex",
                    "k_anonymity": parameters.k_anonymity,
                    "comments": "included, scrubbed" if parameters.include_comments else "excluded",
                },
                "seconds": {k: round(v, 3) for k, v in result.seconds.items()},
                "files": files,
            }
            location = storage.keep(publish_run(export_root, name, manifest))
        except Exception as error:
            log.exception("export run %s failed", run_id)
            abandon_run(export_root, name)
            storage.discard(name)
            with UnitOfWork(engine) as unit:
                unit.session.execute(
                    update(ExportRun)
                    .where(ExportRun.id == run_id)
                    .values(status="failed", error=str(error)[:2000], finished_at=utcnow())
                )
                unit.commit()
                metrics.record_export_run("failed")
                return unit.session.get(ExportRun, run_id)
    return _record_success(engine, run_id, manifest, location, watermark, finished)


# How long a run waits for the writes in progress as it started to end, and how often it asks.
WRITES_WAIT_SECONDS = 600.0
WRITES_POLL_SECONDS = 0.2


def _writes_in_progress(session: Session) -> str | None:
    """The transactions writing as the run starts, which it waits for before it reads
    (``_wait_for_writes``): on PostgreSQL, a snapshot of them; on SQLite, None."""
    if session.get_bind().dialect.name != "postgresql":
        return None
    return session.execute(text("SELECT CAST(pg_current_snapshot() AS text)")).scalar_one()


def _wait_for_writes(engine: Engine, snapshot: str | None) -> None:
    """Return once every transaction in ``snapshot``'s in-progress list has ended.

    A rating is stamped (``updated_at``) before its transaction commits. One stamped at or
    before the watermark that commits after this run read the feedback would be in neither
    this run nor, as new, the next incremental one (which takes only what was stamped after
    this watermark). The settle time covers a write stamped but not yet begun in the database;
    this wait covers one begun and committed late (a slow disk, a stalled worker). A writer
    still open after WRITES_WAIT_SECONDS fails the run: run it again, nothing is missed."""
    if snapshot is None:
        return
    still_writing = text(
        "SELECT count(*) FROM pg_snapshot_xip(CAST(:snapshot AS pg_snapshot)) AS xid "
        "WHERE pg_xact_status(xid) = 'in progress'"
    )
    deadline = time.monotonic() + WRITES_WAIT_SECONDS
    with engine.connect() as connection:
        while True:
            open_writers = connection.execute(still_writing, {"snapshot": snapshot}).scalar_one()
            connection.rollback()  # each question its own snapshot
            if not open_writers:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{open_writers} transaction(s) writing when the run started had not ended "
                    f"after {WRITES_WAIT_SECONDS:.0f} s; run the export again"
                )
            time.sleep(WRITES_POLL_SECONDS)


def _record_success(
    engine: Engine,
    run_id: int,
    manifest: dict,
    location: str,
    watermark: datetime,
    finished: datetime,
) -> ExportRun:
    with UnitOfWork(engine) as unit:
        unit.session.execute(
            update(ExportRun)
            .where(ExportRun.id == run_id)
            .values(
                status="succeeded",
                watermark=watermark,
                manifest=orjson.loads(orjson.dumps(manifest)),
                location=str(location),
                finished_at=finished,
            )
        )
        unit.commit()
        metrics.record_export_run("succeeded")
        return unit.session.get(ExportRun, run_id)


def _aware(moment: datetime | None) -> datetime | None:
    """SQLite hands timestamps back without their zone; they were written in UTC."""
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


# --------------------------------------------------------------------------- loading
def _exportable_versions():
    return (
        select(
            Version.id,
            Version.subagent_id,
            Version.number,
            SubAgent.parent_version_id,
            SubAgent.category,
        )
        .join(SubAgent, SubAgent.id == Version.subagent_id)
        .where(publicly_listed_clause(), Version.status == "active")
        .order_by(Version.subagent_id, Version.number)
    )


def load_catalog(session: Session) -> CatalogArrays:
    """Exportable versions and their parents: the previous exported version of the same
    sub-agent (a revision), else the version it was forked from if that one is exported."""
    rows = session.execute(_exportable_versions()).all()
    n = len(rows)
    version = np.fromiter((r[0] for r in rows), np.int64, n)
    subagent = np.fromiter((r[1] for r in rows), np.int64, n)
    fork_parent = np.fromiter((r[3] if r[3] is not None else -1 for r in rows), np.int64, n)
    names = sorted({r[4] for r in rows})
    code = {name: i for i, name in enumerate(names)}
    category = np.fromiter((code[r[4]] for r in rows), np.int32, n)
    parent = np.full(n, -1, np.int64)
    if n:
        same = np.r_[False, subagent[1:] == subagent[:-1]]
        parent[same] = version[np.flatnonzero(same) - 1]
        first = ~same
        exported = np.isin(fork_parent, version)
        parent[first & exported] = fork_parent[first & exported]
    return CatalogArrays(version, parent, subagent, category, tuple(names))


def load_feedback(
    session: Session, watermark: datetime, since: datetime | None = None
) -> FeedbackColumns:
    """Consenting feedback written at or before ``watermark``, streamed in chunks; ``is_new``
    marks what was written after ``since`` (None: a full export, everything is new)."""
    is_new = case((Feedback.updated_at > since, True), else_=False) if since else None
    columns = [
        Feedback.id,
        Feedback.user_id,
        Feedback.version_id,
        Feedback.scale,
        Feedback.rating,
        Exposure.propensity,
        Feedback.updated_day,
    ]
    if is_new is not None:
        columns.append(is_new)
    query = (
        select(*columns)
        .join(User, User.id == Feedback.user_id)
        .outerjoin(Exposure, Exposure.id == Feedback.exposure_id)
        .where(
            User.share_feedback_for_training.is_(True),
            Feedback.updated_at <= watermark,
            COUNTED_RATING,
        )
        .order_by(Feedback.id)
    )
    parts: dict[str, list[np.ndarray]] = {name: [] for name in FeedbackColumns.__dataclass_fields__}
    result = session.execute(query.execution_options(yield_per=FEEDBACK_CHUNK))
    for chunk in result.partitions(FEEDBACK_CHUNK):
        m = len(chunk)
        parts["feedback_id"].append(np.fromiter((r[0] for r in chunk), np.int64, m))
        parts["user_id"].append(np.fromiter((r[1] for r in chunk), np.int64, m))
        parts["version_id"].append(np.fromiter((r[2] for r in chunk), np.int64, m))
        parts["is_thumb"].append(np.fromiter((r[3] == "thumbs" for r in chunk), bool, m))
        parts["rating"].append(np.fromiter((r[4] for r in chunk), np.int8, m))
        parts["propensity"].append(
            np.fromiter((r[5] if r[5] is not None else np.nan for r in chunk), np.float64, m)
        )
        parts["day"].append(np.fromiter((_day_number(r[6]) for r in chunk), np.int32, m))
        if is_new is not None:
            parts["is_new"].append(np.fromiter((bool(r[7]) for r in chunk), bool, m))
    empty = {
        "feedback_id": np.int64,
        "user_id": np.int64,
        "version_id": np.int64,
        "is_thumb": bool,
        "rating": np.int8,
        "propensity": np.float64,
        "day": np.int32,
        "is_new": bool,
    }
    arrays = {
        name: (np.concatenate(chunks) if chunks else np.zeros(0, empty[name]))
        for name, chunks in parts.items()
    }
    if is_new is None:
        arrays["is_new"] = None
    return FeedbackColumns(**arrays)


def _day_number(day: date | str) -> int:
    if isinstance(day, str):
        day = date.fromisoformat(day)
    return day.toordinal() - _EPOCH_ORDINAL


def _chunks(ids: Sequence[int]):
    ids = list(ids)
    for start in range(0, len(ids), _IN_CHUNK):
        yield ids[start : start + _IN_CHUNK]


class DatabaseTexts:
    """Prompts, bundles and comments for a batch of ids (``feedback.export.TextSource``)."""

    def __init__(self, session: Session, catalog: CatalogArrays) -> None:
        self.session = session
        self.parent_of = dict(
            zip(catalog.version_id.tolist(), catalog.parent_version_id.tolist(), strict=True)
        )

    def versions(self, version_ids: Sequence[int]) -> dict[int, VersionText]:
        rows = []
        for chunk in _chunks(version_ids):
            rows += self.session.execute(
                select(
                    Version.id,
                    Version.number,
                    Version.changelog,
                    Version.manifest,
                    SubAgent.title,
                    SubAgent.summary,
                    SubAgent.category,
                    SubAgent.fork_request_text,
                    SubAgent.parent_id,
                    BundleBlob.content,
                )
                .join(SubAgent, SubAgent.id == Version.subagent_id)
                .join(BundleBlob, BundleBlob.sha256 == Version.sha256)
                .where(Version.id.in_(chunk))
            ).all()
        parents = {self.parent_of[row[0]] for row in rows if self.parent_of.get(row[0], -1) >= 0}
        parent_text: dict[int, tuple[str, str]] = {}
        for chunk in _chunks(sorted(parents)):
            for vid, title, summary in self.session.execute(
                select(Version.id, SubAgent.title, SubAgent.summary)
                .join(SubAgent, SubAgent.id == Version.subagent_id)
                .where(Version.id.in_(chunk))
            ):
                parent_text[vid] = (title, summary)
        out = {}
        for row in rows:
            vid, number, changelog, manifest, title, summary, category, request, parent_id, blob = (
                row
            )
            parent = parent_text.get(self.parent_of.get(vid, -1))
            out[vid] = VersionText(
                version_id=vid,
                number=number,
                category=category,
                title=title,
                summary=summary or "",
                description=str((manifest or {}).get("description") or ""),
                # The stored blob is the bundle's canonical bytes (market.catalog.bundles),
                # zlib-packed.
                completion=zlib.decompress(blob).decode("utf-8"),
                fork_request=request,
                changelog=changelog or "",
                parent_title=parent[0] if parent else None,
                parent_summary=parent[1] if parent else None,
                is_fork=parent_id is not None,
            )
        return out

    def comments(self, feedback_ids: Sequence[int]) -> dict[int, Comment]:
        out = {}
        for chunk in _chunks(feedback_ids):
            for fid, comment, tags, email, phone, address, name, handle in self.session.execute(
                select(
                    Feedback.id,
                    Feedback.comment,
                    Feedback.tags,
                    User.email,
                    User.phone,
                    User.address,
                    User.display_name,
                    User.handle,
                )
                .join(User, User.id == Feedback.user_id)
                .where(Feedback.id.in_(chunk))
            ):
                if comment or tags:
                    own = (email, phone, address, name, handle)
                    out[fid] = Comment(comment, list(tags or []), own)
        return out

    def comment_scrubber(self) -> Scrubber:
        return Scrubber(self.session.execute(select(User.handle)).scalars())


def run_summary(run: ExportRun) -> dict:
    """What the API and the CLI say about a run."""
    return {
        "id": run.id,
        "folder": Path(run.location).name if run.location else None,
        "status": run.status,
        "since_run": run.since_run_id,
        "parameters": run.parameters,
        "watermark": _aware(run.watermark),
        "created_at": _aware(run.created_at),
        "started_at": _aware(run.started_at),
        "finished_at": _aware(run.finished_at),
        "error": run.error,
        "manifest": run.manifest,
    }
