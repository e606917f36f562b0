"""Export runs kept in S3-compatible object storage: written, listed and downloaded through the
API, loaded by ``datasets`` straight from the bucket, with nothing left in the local folder.

The S3 server here is moto's standalone server (``moto[server]``'s ``ThreadedMotoServer``): a
real HTTP S3 endpoint on loopback, reached over the network by s3fs exactly as MinIO is in
compose (a MinIO server cannot be installed on the test machines). The code under test is told
only an endpoint URL and keys; it does not know which server answers.
"""

from __future__ import annotations

import hashlib
import io
import secrets

import datasets
import fsspec
import pyarrow.parquet as pq
import pytest
from moto.server import ThreadedMotoServer
from sqlalchemy import select
from sqlmodel import Session

from market.exports.models import ExportRun
from market.exports.storage import RunStorage
from market.platform.state import app_state
from tests.conftest import make_app
from tests.factories import make_user
from tests.functional.exports import test_api as local_exports

API = "/api/v1"
community = local_exports.community  # the same small community as the local-folder tests


@pytest.fixture(scope="module")
def s3_endpoint():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket_url(s3_endpoint):
    """A fresh bucket per test, so one test's runs never show in another's listing."""
    bucket = f"sprig-exports-{secrets.token_hex(4)}"
    filesystem = fsspec.filesystem("s3", **_options(s3_endpoint))
    filesystem.mkdir(bucket)
    return f"s3://{bucket}/runs"


def _options(endpoint: str) -> dict:
    return {"key": "test-key-id", "secret": "test-secret", "endpoint_url": endpoint}


@pytest.fixture
def app(database_url, tmp_path, s3_endpoint, bucket_url):
    with make_app(
        database_url,
        export_dir=str(tmp_path / "exports"),
        export_settle_seconds=0,
        export_storage=bucket_url,
        export_storage_endpoint=s3_endpoint,
        export_storage_key_id="test-key-id",
        export_storage_secret="test-secret",
    ) as app:
        yield app


def _export(client, community, **body) -> dict:
    response = client.post(f"{API}/exports", json=body, headers=community.service.headers)
    assert response.status_code == 202, response.get_json()
    run = response.get_json()
    assert run["status"] == "succeeded", run
    return run


def _location(app, run_id: int) -> str:
    with Session(app_state(app).engine) as session:
        return session.execute(select(ExportRun.location).where(ExportRun.id == run_id)).scalar()


def test_a_run_is_written_to_the_bucket_listed_and_served_byte_for_byte(
    app, client, community, s3_endpoint, bucket_url, tmp_path
):
    run = _export(client, community)
    location = _location(app, run["id"])
    assert location == f"{bucket_url}/{run['folder']}"
    bucket = fsspec.filesystem("s3", **_options(s3_endpoint))
    stored = {
        key.removeprefix(location.removeprefix("s3://") + "/")
        for key in bucket.find(location.removeprefix("s3://"))
    }
    listed = client.get(f"{API}/exports", headers=community.service.headers).get_json()["items"]
    assert [item["id"] for item in listed] == [run["id"]]
    files = listed[0]["files"]
    assert {entry["path"] for entry in files} | {"manifest.json"} == stored
    for entry in files:
        served = client.get(entry["url"], headers=community.service.headers)
        assert served.status_code == 200, entry["path"]
        with bucket.open(f"{location}/{entry['path']}", "rb") as handle:
            assert served.data == handle.read()  # byte-identical to what was written
        assert hashlib.sha256(served.data).hexdigest() == entry["sha256"]
        if entry["path"].endswith(".parquet"):
            assert pq.read_table(io.BytesIO(served.data)).num_rows == entry["rows"]
    # Nothing stays on the machine that built it: no run, no unfinished folder.
    export_dir = tmp_path / "exports"
    assert not export_dir.exists() or not any(export_dir.iterdir())


def test_datasets_loads_a_run_straight_from_the_bucket(
    app, client, community, tmp_path, monkeypatch
):
    # The suite keeps datasets off the Hugging Face Hub (HF_HUB_OFFLINE), and datasets counts
    # any remote URL as online: let it reach this bucket, as a training cluster would.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    run = _export(client, community, test_share=0.0)
    location = _location(app, run["id"])
    storage = RunStorage.from_settings(app_state(app).settings)
    pairwise = datasets.load_dataset(
        "parquet",
        data_files={"train": f"{location}/pairwise/*/train-*.parquet"},
        storage_options=storage.storage_options(),
        cache_dir=str(tmp_path / "hf-cache"),
    )["train"]
    assert len(pairwise) == run["manifest"]["counts"]["pairwise"]["total"] > 0
    assert {"chosen", "rejected"} <= set(pairwise.column_names)


def test_callers_who_may_not_read_the_run_get_nothing_from_the_bucket(
    app, client, engine, community
):
    run = _export(client, community)
    file_url = f"{API}/exports/{run['id']}/files/manifest.json"
    assert client.get(file_url).status_code == 401
    assert client.get(file_url, headers=community.person.headers).status_code == 403
    other = make_user(engine, "recommender", kind="service", scopes=["recommend"])
    assert client.get(file_url, headers=other.headers).status_code == 403
    headers = community.service.headers
    # Only the files the run's manifest lists are served, never another key of the bucket.
    for path in ("../manifest.json", f"../{run['folder']}/manifest.json", "nothing.parquet"):
        response = client.get(f"{API}/exports/{run['id']}/files/{path}", headers=headers)
        assert response.status_code == 404, path
    missing_run = f"{API}/exports/{run['id'] + 1}/files/manifest.json"
    assert client.get(missing_run, headers=headers).status_code == 404


def test_a_file_gone_from_the_bucket_is_a_404(app, client, community, s3_endpoint):
    run = _export(client, community)
    location = _location(app, run["id"])
    fsspec.filesystem("s3", **_options(s3_endpoint)).rm(f"{location}/README.md")
    response = client.get(
        f"{API}/exports/{run['id']}/files/README.md", headers=community.service.headers
    )
    assert response.status_code == 404


def test_an_upload_broken_halfway_fails_the_run_and_leaves_nothing(
    app, client, community, s3_endpoint, bucket_url, tmp_path, monkeypatch
):
    # fsspec hands out one client per set of options: the one the export will use.
    bucket = fsspec.filesystem("s3", **_options(s3_endpoint))
    uploaded = []
    upload = bucket.put_file

    def breaks_on_the_third_file(local, remote, **options):
        uploaded.append(remote)
        if len(uploaded) == 3:
            raise ConnectionResetError("the object store went away")
        return upload(local, remote, **options)

    monkeypatch.setattr(bucket, "put_file", breaks_on_the_third_file)
    response = client.post(f"{API}/exports", json={}, headers=community.service.headers)
    run = response.get_json()
    assert run["status"] == "failed" and "went away" in run["error"]
    assert len(uploaded) == 3  # two files were in the bucket before it broke
    assert bucket.find(bucket_url.removeprefix("s3://")) == []
    export_dir = tmp_path / "exports"
    assert not export_dir.exists() or not any(export_dir.iterdir())
