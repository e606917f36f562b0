"""Unit tests for market.catalog.bundles.limits: the size and count caps, BundleError."""

from __future__ import annotations

import json

import pytest

from market.catalog.bundles import canonical_bytes
from market.catalog.bundles.archive import bundle_from_zip, bundle_to_zip
from market.catalog.bundles.limits import MAX_BUNDLE_BYTES, MAX_ERRORS, MAX_FILES, BundleError
from tests.unit.catalog.bundles.helpers import BASE_FILES, make, rejects, wordy_text


def test_rejects_files_over_total_cap():
    err = rejects(
        make, {"big.txt": "a" * MAX_BUNDLE_BYTES, **BASE_FILES}, code="too_large", status=413
    )
    assert str(MAX_BUNDLE_BYTES) in err.detail


def test_manifest_counts_toward_total_cap():
    schema = {"description": "d" * 30_000}
    room = MAX_BUNDLE_BYTES - 20_000 - sum(len(p) + len(t) for p, t in BASE_FILES.items())
    files = {"big.txt": "a" * room, **BASE_FILES}
    make(files)  # fits without the schema
    with pytest.raises(BundleError) as info:
        make(files, data_schema=schema)
    assert (info.value.code, info.value.status) == ("too_large", 413)


def test_bundle_exactly_at_the_cap_is_accepted_in_both_formats():
    # The cap counts raw UTF-8 of paths, texts and the canonical manifest; Bundle.size
    # (the canonical JSON) is a little larger because of quoting and escapes.
    schema = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(400)}}
    files = {"big.txt": "", **BASE_FILES}
    manifest = make(files, data_schema=schema).manifest
    used = sum(len(p.encode()) + len(t.encode()) for p, t in files.items())
    room = MAX_BUNDLE_BYTES - used - len(canonical_bytes(manifest, {}))
    files["big.txt"] = wordy_text(room + 100).replace("\n", " ")[:room]
    b = make(files, data_schema=schema)
    assert MAX_BUNDLE_BYTES < b.size < MAX_BUNDLE_BYTES + 100
    assert bundle_from_zip(bundle_to_zip(b)).sha256 == b.sha256
    files["big.txt"] += "x"
    rejects(make, files, code="too_large", status=413, data_schema=schema)


def test_rejects_too_many_files():
    files = {f"f{i}.js": "" for i in range(MAX_FILES)} | BASE_FILES
    assert len(files) == MAX_FILES + 1
    rejects(make, files, code="too_many_files", status=413)
    make({f"f{i}.js": "" for i in range(MAX_FILES - 1)} | BASE_FILES)  # at the cap is fine


def test_collects_several_manifest_problems():
    err = rejects(make, code="bad_manifest", extra=1, description=5, hosts=["bad host"])
    codes = [e["code"] for e in err.errors]
    assert codes.count("bad_manifest") == 2 and "bad_host" in codes
    assert "more problem" in err.detail


def test_error_list_is_capped_and_problem_shape():
    err = rejects(make, code="unknown_scope", scopes=[f"nope{i}.read" for i in range(80)])
    assert len(err.errors) == MAX_ERRORS + 1
    problem = err.to_problem()
    assert problem["status"] == 422 and problem["code"] == "unknown_scope"
    assert problem["type"].endswith("/unknown_scope") and problem["title"]
    json.dumps(problem)
