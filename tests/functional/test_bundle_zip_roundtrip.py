"""A downloaded zip is a bundle Sprig takes back: publishing the zip that
``GET …/versions/{vid}/bundle?format=zip`` served gives the same version again.

Repetitive files are the hard case: deflated, they compress past the upload's ratio guard
(a zip bomb check), so the download must store them the way the upload accepts."""

from __future__ import annotations

import io
import json

from tests.factories import listing, make_user

API = "/api/v1"


def _repetitive_bundle() -> dict:
    rows = "".join(f'<tr><td class="cell">{"0" * 8}</td></tr>\n' for _ in range(4000))
    return {
        "manifest": {"name": "Grid", "entry": "index.html", "scopes": [], "hosts": []},
        "files": {
            "index.html": f"<!doctype html><title>Grid</title><table>\n{rows}</table>",
            "app.js": "// " + "x" * 60_000 + "\n",
        },
    }


def test_a_downloaded_zip_publishes_again_as_the_same_version(client, engine):
    alice = make_user(engine, "alice")
    first = client.post(
        f"{API}/subagents", json=listing(bundle=_repetitive_bundle()), headers=alice.headers
    )
    assert first.status_code == 201, first.get_json()
    created = first.get_json()
    version = created["latest_version"]
    download = client.get(
        f"{API}/subagents/{created['id']}/versions/{version['id']}/bundle?format=zip"
    )
    assert download.status_code == 200 and download.mimetype == "application/zip"

    metadata = {k: v for k, v in listing().items() if k != "bundle"}
    again = client.post(
        f"{API}/subagents",
        data={
            "metadata": json.dumps(metadata),
            "bundle": (io.BytesIO(download.data), "download.zip"),
        },
        headers=alice.headers,
        content_type="multipart/form-data",
    )
    assert again.status_code == 200, again.get_json()
    assert again.get_json()["id"] == created["id"]
    assert again.get_json()["latest_version"]["sha256"] == version["sha256"]
