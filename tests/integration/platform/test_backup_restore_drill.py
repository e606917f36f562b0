"""The restore drill: back up a live community with scripts/backup.sh, lose everything, restore
with scripts/restore.sh into a fresh database, and check nothing changed.

The community is a copy of the run's loaded demo (seed 7, tests/conftest.py) plus what a day
of traffic adds through the API: a publish, a fork, an install and a rating, and a reward export
run whose files sit in the export folder.
Then the database is dropped and the export folder deleted, a new empty database of the same
name is created, and the backup is restored into it. Checked afterwards: every table's row
count and a content checksum (every row as text, sorted), every sequence's position (so new
rows do not collide with restored ids), the schema at Alembic's head, the API's browse, search,
detail, lineage and tree answers, and the export run's files served by the API and loadable.

PostgreSQL only, with pg_dump/pg_restore of the server's own version (scripts/test-services.sh
provides both). The drill runs in a database of its own, ``sprig_drill``, so the per-test wipe
of ``sprig_test`` is not disturbed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pyarrow.parquet as pq
import pytest
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from market.app import create_app
from market.platform.migrate import alembic_config
from market.platform.state import app_state
from tests.conftest import copy_of_demo
from tests.factories import fork, make_user, publish
from tests.xdist_worker import own_database

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
DRILL_DB = own_database("sprig_drill")
API = "/api/v1"
# A table's row count and the md5 of its rows as text, sorted byte-wise ("C") so the order
# does not depend on a collation.
ROWS_DIGEST = (
    "SELECT count(*), md5(coalesce(string_agg(r, chr(10) ORDER BY r COLLATE \"C\"), ''))"
    ' FROM (SELECT t::text AS r FROM "{table}" t) rows'
)


def _conninfo(database_url: str, database: str) -> str:
    url = make_url(database_url).set(drivername="postgresql", database=database)
    return url.render_as_string(hide_password=False)


def _recreate_database(admin_url: str) -> None:
    """Drop the drill database if it is there (whoever is connected) and create it empty."""
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DRILL_DB} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DRILL_DB}")


def _tables(conninfo: str) -> dict[str, tuple[int, str]]:
    """Each public table's row count and the md5 of its rows as text, in one sorted order."""
    with psycopg.connect(conninfo) as connection:
        names = [
            row[0]
            for row in connection.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            )
        ]
        figures = {}
        for name in names:
            count, digest = connection.execute(ROWS_DIGEST.format(table=name)).fetchone()
            figures[name] = (count, digest)
        return figures


def _sequences(conninfo: str) -> dict[str, int | None]:
    with psycopg.connect(conninfo) as connection:
        return dict(
            connection.execute(
                "SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = 'public'"
            ).fetchall()
        )


def _alembic_heads(app) -> tuple[set[str], set[str]]:
    """(the database's revisions, the code's heads)."""
    engine = app_state(app).engine
    with engine.connect() as connection:
        current = set(MigrationContext.configure(connection).get_current_heads())
    script = ScriptDirectory.from_config(alembic_config(engine.url.render_as_string(False)))
    return current, set(script.get_heads())


def _script(name: str, argument: Path, database_url: str, export_dir: Path):
    env = {
        **os.environ,
        "SPRIG_DATABASE_URL": database_url,
        "SPRIG_EXPORT_DIR": str(export_dir),
        "SPRIG_PG_BIN": os.environ.get("SPRIG_TEST_PG_BIN", ""),
    }
    return subprocess.run(
        ["bash", str(REPO / "scripts" / name), str(argument)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _app(database_url: str, export_dir: Path):
    return create_app(
        {
            "database_url": database_url,
            "testing": True,
            "secret_key": "drill",
            "read_cache_seconds": 0,
            "export_dir": str(export_dir),
            "export_settle_seconds": 0,
        }
    )


def _dispose(app) -> None:
    state = app_state(app)
    state.engine.dispose()
    state.read_engine.dispose()


@dataclass
class Traffic:
    """What the day's traffic made, and the token that may read exports."""

    root_id: int
    fork_id: int
    run_id: int
    exporter_headers: dict[str, str]


def _day_of_traffic(app) -> Traffic:
    client, engine = app.test_client(), app_state(app).engine
    creator = make_user(engine, "drill-creator")
    forker = make_user(engine, "drill-forker")
    rater = make_user(engine, "drill-rater")
    exporter = make_user(engine, "drill-exporter", kind="service", scopes=["exports"])
    root = publish(client, creator, title="Drill Water Tracker")
    child = fork(client, forker, root["id"], "drill")
    version_id = child["latest_version"]["id"]
    installed = client.post(
        f"{API}/subagents/{child['id']}/install",
        json={"version_id": version_id},
        headers=rater.headers,
    )
    assert installed.status_code in (200, 201), installed.get_json()
    rated = client.post(
        f"{API}/feedback", json={"version_id": version_id, "stars": 4}, headers=rater.headers
    )
    assert rated.status_code in (200, 201), rated.get_json()
    exported = client.post(f"{API}/exports", json={}, headers=exporter.headers)
    assert exported.status_code == 202, exported.get_json()
    run = exported.get_json()
    assert run["status"] == "succeeded", run
    return Traffic(root["id"], child["id"], run["id"], exporter.headers)


def _api_answers(app, traffic: Traffic) -> dict[str, object]:
    client = app.test_client()
    paths = [
        f"{API}/subagents?limit=50",
        f"{API}/subagents?sort=installs&limit=50",
        f"{API}/subagents?category=hydration&sort=new&limit=20",
        f"{API}/subagents?q=water",
        f"{API}/subagents/{traffic.root_id}",
        f"{API}/subagents/{traffic.fork_id}",
        f"{API}/subagents/{traffic.fork_id}/lineage",
        f"{API}/subagents/{traffic.root_id}/tree?depth=3",
        f"{API}/subagents/1",
        f"{API}/subagents/1/tree?depth=3",
    ]
    answers = {}
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, (path, response.get_json())
        answers[path] = response.get_json()
    return answers


def _export_files(app, traffic: Traffic) -> dict[str, bytes]:
    """Every file of the run, downloaded through the API."""
    client = app.test_client()
    run = client.get(f"{API}/exports/{traffic.run_id}", headers=traffic.exporter_headers)
    assert run.status_code == 200, run.get_json()
    paths = [entry["path"] for entry in run.get_json()["files"]] + ["manifest.json"]
    files = {}
    for path in paths:
        response = client.get(
            f"{API}/exports/{traffic.run_id}/files/{path}", headers=traffic.exporter_headers
        )
        assert response.status_code == 200, (path, response.get_data(as_text=True)[:300])
        files[path] = response.get_data()
    return files


@dataclass
class Drill:
    before_tables: dict[str, tuple[int, str]]
    after_tables: dict[str, tuple[int, str]]
    before_sequences: dict[str, int | None]
    after_sequences: dict[str, int | None]
    before_api: dict[str, object]
    after_api: dict[str, object]
    before_files: dict[str, bytes]
    after_files: dict[str, bytes]
    alembic: tuple[set[str], set[str]]
    backup_dir: Path
    database_url: str
    export_dir: Path


@pytest.fixture(scope="module")
def drill(tmp_path_factory) -> Drill:
    base_url = os.environ.get("SPRIG_TEST_POSTGRES_URL")
    if not base_url:
        pytest.skip("needs PostgreSQL (scripts/test-services.sh sets SPRIG_TEST_POSTGRES_URL)")
    admin = _conninfo(base_url, "postgres")
    database_url = make_url(base_url).set(database=DRILL_DB).render_as_string(hide_password=False)
    conninfo = _conninfo(base_url, DRILL_DB)
    export_dir = tmp_path_factory.mktemp("drill") / "exports"
    backup_dir = tmp_path_factory.mktemp("drill-backup") / "backup"

    try:
        copied_url, _template = copy_of_demo("postgresql", DRILL_DB, tmp_path_factory)
        assert copied_url == database_url
        app = _app(database_url, export_dir)
        try:
            traffic = _day_of_traffic(app)
            before_api = _api_answers(app, traffic)
            before_files = _export_files(app, traffic)
        finally:
            _dispose(app)
        before_tables, before_sequences = _tables(conninfo), _sequences(conninfo)

        backed_up = _script("backup.sh", backup_dir, database_url, export_dir)
        assert backed_up.returncode == 0, backed_up.stderr

        # The disaster: the database and the export folder are gone.
        shutil.rmtree(export_dir)
        _recreate_database(admin)

        restored = _script("restore.sh", backup_dir, database_url, export_dir)
        assert restored.returncode == 0, restored.stderr
        after_tables, after_sequences = _tables(conninfo), _sequences(conninfo)
        app = _app(database_url, export_dir)
        try:
            alembic = _alembic_heads(app)
            after_api = _api_answers(app, traffic)
            after_files = _export_files(app, traffic)
        finally:
            _dispose(app)
        yield Drill(
            before_tables,
            after_tables,
            before_sequences,
            after_sequences,
            before_api,
            after_api,
            before_files,
            after_files,
            alembic,
            backup_dir,
            database_url,
            export_dir,
        )
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {DRILL_DB} WITH (FORCE)")


def test_every_table_comes_back_with_the_same_rows(drill):
    assert drill.after_tables == drill.before_tables
    # The drill means something only if the community is really there.
    for table in ("user_account", "subagent", "subagent_version", "install", "feedback"):
        assert drill.before_tables[table][0] > 0, table
    assert drill.before_tables["export_run"][0] == 1


def test_sequences_continue_where_they_were(drill):
    assert drill.after_sequences == drill.before_sequences
    assert any(value for value in drill.before_sequences.values())


def test_the_restored_schema_is_at_alembic_head(drill):
    current, heads = drill.alembic
    assert current == heads and heads


def test_the_api_gives_the_same_answers(drill):
    assert drill.after_api == drill.before_api


def test_the_export_runs_files_are_served_again_and_load(drill):
    assert drill.after_files == drill.before_files
    manifest = json.loads(drill.after_files["manifest.json"])
    parquet = [path for path in drill.after_files if path.endswith(".parquet")]
    assert parquet, sorted(drill.after_files)
    rows_by_path = {entry["path"]: entry["rows"] for entry in manifest["files"]}
    for path in parquet:
        table = pq.read_table(io.BytesIO(drill.after_files[path]))
        assert table.num_rows == rows_by_path[path], path


def test_restore_refuses_a_database_that_is_not_empty(drill):
    again = _script("restore.sh", drill.backup_dir, drill.database_url, drill.export_dir)
    assert again.returncode != 0
    assert "restore into an empty one" in again.stderr


def test_restore_refuses_a_damaged_backup(drill, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(drill.backup_dir, damaged)
    with (damaged / "exports.tar").open("ab") as archive:
        archive.write(b"\0")
    refused = _script("restore.sh", damaged, drill.database_url, tmp_path / "exports")
    assert refused.returncode != 0
    assert "checksums" in refused.stderr
    assert not (tmp_path / "exports").exists()
