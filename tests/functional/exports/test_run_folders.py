"""Run folders are named by the run's number and a fingerprint, everywhere a run is made,
listed and served: two runs numbered alike (another database, or this one started afresh)
never share a folder, so ``datasets``, which caches a local dataset by its folder's name,
returns each run's own rows; a run redone after a crash keeps its name and clears its own
unfinished folder; and runs written before fingerprints are still listed and served."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only; read when datasets loads

import hashlib
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import datasets
import orjson
import pytest
from sqlalchemy import delete, func, select, update
from sqlmodel import Session

from feedback.export import ExportParameters
from market.catalog.models import Version
from market.exports.models import ExportRun
from market.exports.services import create_run, execute_run, run_folder
from market.exports.storage import RunStorage
from market.identity.models import User
from market.platform.state import app_state
from market.platform.time import utcnow
from market.usage.models import COUNTED_RATING, Feedback
from tests.functional.exports import test_api
from tests.functional.exports.test_api import API, _export, _rate

community = test_api.community  # the small community of the export tests, as a fixture here

FOLDER = re.compile(r"run-\d{5}-[0-9a-f]{8}")


def test_a_run_folder_is_its_number_and_a_fingerprint_in_the_api_and_the_card(
    app, client, community
):
    run = _export(client, community)
    assert FOLDER.fullmatch(run["folder"]) and run["folder"].startswith(f"run-{run['id']:05d}-")
    export_dir = Path(app_state(app).settings.export_dir)
    assert sorted(p.name for p in export_dir.iterdir()) == [run["folder"]]
    assert run["manifest"]["name"] == run["folder"]
    listed = client.get(f"{API}/exports", headers=community.service.headers).get_json()
    assert [item["folder"] for item in listed["items"]] == [run["folder"]]
    paths = {entry["path"]: entry for entry in run["files"]}
    assert {"README.md", "LICENSE.md"} <= set(paths)
    card = client.get(paths["README.md"]["url"], headers=community.service.headers)
    assert card.status_code == 200 and f"(`{run['folder']}`)" in card.data.decode()


def test_a_run_redone_after_a_crash_keeps_its_folder_and_clears_the_unfinished_one(app, engine):
    export_dir = Path(app_state(app).settings.export_dir)
    with Session(engine) as session:
        run = create_run(session, ExportParameters())
        session.commit()
        run_id, name = run.id, run_folder(engine, run)
        assert run_folder(engine, session.get(ExportRun, run_id)) == name
        session.execute(update(ExportRun).where(ExportRun.id == run_id).values(status="running"))
        session.commit()
    unfinished = export_dir / f".{name}.partial"
    unfinished.mkdir(parents=True)
    (unfinished / "left-over.parquet").write_bytes(b"half a shard")
    done = execute_run(engine, run_id, export_dir, settle_seconds=0)
    assert done.status == "succeeded" and Path(done.location).name == name
    assert sorted(p.name for p in export_dir.iterdir()) == [name]
    assert not (export_dir / name / "left-over.parquet").exists()


class WorkerKilled(BaseException):
    """The worker's process ending (a kill, the OOM killer): no ``except Exception`` runs."""


def test_a_run_published_before_its_worker_died_is_recorded_not_built_again(
    app, engine, community, monkeypatch
):
    """The worker died between publishing the run's files and recording it. Delivered again,
    the task records the complete run from its manifest: built again it was refused (its
    folder exists) and marked failed with the folder left on disk, and its watermark never
    moved, so the next incremental run exported the same ratings a second time."""
    export_dir = Path(app_state(app).settings.export_dir)
    with Session(engine) as session:
        run = create_run(session, ExportParameters())
        session.commit()
        run_id, name = run.id, run_folder(engine, run)
    real_keep = RunStorage.keep

    def keep_then_die(self, built):
        real_keep(self, built)
        raise WorkerKilled

    with monkeypatch.context() as patch, pytest.raises(WorkerKilled):
        patch.setattr(RunStorage, "keep", keep_then_die)
        execute_run(engine, run_id, export_dir, settle_seconds=0)
    with Session(engine) as session:
        assert session.get(ExportRun, run_id).status == "running"
    published = (export_dir / name / "manifest.json").read_bytes()
    manifest = orjson.loads(published)

    done = execute_run(engine, run_id, export_dir, settle_seconds=0)  # delivered again
    assert done.status == "succeeded", done.error
    assert Path(done.location) == export_dir / name
    assert (export_dir / name / "manifest.json").read_bytes() == published  # not rebuilt
    assert done.manifest == manifest
    # SQLite hands the moment back without its zone; it was written in UTC.
    assert done.watermark.replace(tzinfo=UTC) == datetime.fromisoformat(manifest["watermark"])
    assert sorted(p.name for p in export_dir.iterdir()) == [name]


def test_a_run_delivered_twice_at_once_is_built_by_one_worker(app, engine, community, backend):
    """The same export task delivered again while its first delivery is still writing the run
    (a worker that lost its broker connection gave it back). The second leaves the run to the
    first: it used to clear the first's unfinished folder as a crashed attempt and build its
    own, and the first, its files gone, marked a published run failed."""
    if backend != "postgresql":
        pytest.skip("the embedded default (SQLite) runs each task inline, once")
    export_dir = Path(app_state(app).settings.export_dir)
    with Session(engine) as session:
        run = create_run(session, ExportParameters())
        session.commit()
        run_id, name = run.id, run_folder(engine, run)
    writing, second_done = threading.Event(), threading.Event()

    def wait_for_the_second(stage, _done, _total):
        if stage == "rows" and not writing.is_set():
            writing.set()
            assert second_done.wait(30), "the second delivery did not return"

    first = ThreadPoolExecutor(1).submit(
        execute_run, engine, run_id, export_dir, settle_seconds=0, progress=wait_for_the_second
    )
    assert writing.wait(60), "the first delivery never started writing"
    try:
        second = execute_run(engine, run_id, export_dir, settle_seconds=0)  # delivered again
    finally:
        second_done.set()
    assert second.status == "running"
    done = first.result(timeout=120)
    assert done.status == "succeeded", done.error
    assert sorted(p.name for p in export_dir.iterdir()) == [name]
    published = orjson.loads((export_dir / name / "manifest.json").read_bytes())
    assert done.manifest == published
    for entry in published["files"]:
        assert (
            hashlib.sha256((export_dir / name / entry["path"]).read_bytes()).hexdigest()
            == (entry["sha256"])
        )
    again = execute_run(engine, run_id, export_dir, settle_seconds=0)  # the lock was let go
    assert again.status == "succeeded" and again.manifest == published


def test_a_rating_stamped_before_the_run_and_committed_after_it_started_is_read(
    app, engine, community, backend
):
    """A rating's transaction stamps it, then stalls (a slow disk, a paused worker) while an
    export starts, and commits late. The run waits for it and exports it: read before the
    commit, it was in neither this run (not yet visible) nor, as new, the next incremental one
    (stamped before this run's watermark)."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer at a time: the settle time alone covers it")
    export_dir = Path(app_state(app).settings.export_dir)
    rater, version_id = community.consenting[5], community.versions["few"]
    late = Session(engine)
    try:
        stamped = utcnow()
        late.add(
            Feedback(
                user_id=rater.id,
                subagent_id=late.get(Version, version_id).subagent_id,
                version_id=version_id,
                scale="stars",
                rating=5,
                created_at=stamped,
                updated_at=stamped,
                updated_day=stamped.date(),
            )
        )
        late.flush()  # written and stamped, not committed
        with Session(engine) as session:
            run = create_run(session, ExportParameters())
            session.commit()
            run_id = run.id
        export = ThreadPoolExecutor(1).submit(
            execute_run, engine, run_id, export_dir, settle_seconds=0
        )
        time.sleep(1.0)  # the run has started and taken its watermark
        late.commit()
    finally:
        late.close()
    done = export.result(timeout=120)
    assert done.status == "succeeded", done.error
    assert done.watermark.replace(tzinfo=UTC) >= stamped
    with Session(engine) as session:
        consenting_ratings = session.execute(
            select(func.count())
            .select_from(Feedback)
            .join(User, User.id == Feedback.user_id)
            .where(User.share_feedback_for_training.is_(True), COUNTED_RATING)
        ).scalar_one()
    assert done.manifest["counts"]["ratings"]["total"] == consenting_ratings


def test_the_same_run_number_again_gets_its_own_folder_and_loads_its_own_rows(
    app, client, engine, community, tmp_path
):
    """Run N, then the database loses its runs (restored from a backup, or started afresh) and
    numbers the next run N again, after more feedback: one ``datasets`` cache reads both."""
    first = _export(client, community)
    with Session(engine) as session:
        session.execute(delete(ExportRun))
        session.commit()
    _rate(client, community.consenting[5], community.versions["few"], 4)  # a new rating
    with Session(engine) as session:
        again = ExportRun(id=first["id"], parameters=ExportParameters().as_dict())
        session.add(again)
        session.commit()
    second = execute_run(engine, first["id"], app_state(app).settings.export_dir, settle_seconds=0)
    assert second.status == "succeeded"
    assert Path(second.location).name != first["folder"]
    cache = tmp_path / "hf"
    first_dir = Path(app_state(app).settings.export_dir) / first["folder"]
    counts = []
    for run_dir in (first_dir, Path(second.location)):
        ratings = datasets.load_dataset(str(run_dir), name="ratings", cache_dir=str(cache))
        counts.append(sum(len(ratings[split]) for split in ratings))
    assert counts == [
        first["manifest"]["counts"]["ratings"]["total"],
        second.manifest["counts"]["ratings"]["total"],
    ]
    assert counts[0] != counts[1]


def test_a_run_written_before_fingerprints_is_still_listed_and_served(app, client, community):
    run = _export(client, community)
    export_dir = Path(app_state(app).settings.export_dir)
    old = export_dir / f"run-{run['id']:05d}"
    (export_dir / run["folder"]).rename(old)
    with Session(app_state(app).engine) as session:
        session.execute(
            update(ExportRun).where(ExportRun.id == run["id"]).values(location=str(old))
        )
        session.commit()
    headers = community.service.headers
    listed = client.get(f"{API}/exports/{run['id']}", headers=headers).get_json()
    assert listed["folder"] == old.name
    for entry in listed["files"]:
        response = client.get(entry["url"], headers=headers)
        assert response.status_code == 200
        assert hashlib.sha256(response.data).hexdigest() == entry["sha256"]
