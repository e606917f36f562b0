"""Unit tests for market.catalog.bundles.files: file paths and file texts."""

from __future__ import annotations

import pytest

from market.catalog.bundles.archive import bundle_from_zip
from tests.unit.catalog.bundles.helpers import BASE_FILES, make, rejects, valid_zip


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/etc/passwd", "absolute_path"),
        ("C:/win.js", "absolute_path"),
        ("c:evil.js", "absolute_path"),
        ("\\\\server\\share.js", "absolute_path"),
        ("../up.js", "path_traversal"),
        ("a/../../up.js", "path_traversal"),
        ("a/..", "path_traversal"),
        ("js\\app.js", "bad_path"),
        ("a//b.js", "bad_path"),
        ("dir/", "bad_path"),
        ("./a.js", "bad_path"),
        ("", "bad_path"),
        ("a\x00.js", "bad_path"),
        ("a\nb.js", "bad_path"),
        ("evil\u202egpj.js", "bad_path"),
        ("x" * 201, "bad_path"),
        ("manifest.json", "reserved_path"),
        ("Manifest.JSON", "reserved_path"),
        ("__MACOSX/x.js", "reserved_path"),
        ("a\ud800.js", "not_utf8"),
    ],
)
def test_rejects_bad_paths_in_json(path, code):
    err = rejects(make, {path: "x", **BASE_FILES}, code=code)
    assert err.errors[0]["location"].startswith("files/")
    assert "\x00" not in err.detail and "\n" not in err.errors[0]["location"]


def test_path_at_length_cap_is_fine():
    make({"x" * 200: "", **BASE_FILES})


@pytest.mark.parametrize(
    "files",
    [
        {"App.js": "1", "app.js": "2"},
        {"caf\u00e9.js": "1", "cafe\u0301.js": "2"},  # NFC vs NFD
        {"lib": "1", "lib/x.js": "2"},  # a file used as a directory
    ],
)
def test_rejects_colliding_paths_in_json(files):
    rejects(make, {**files, **BASE_FILES}, code="duplicate_path")


def test_rejects_nul_and_surrogates_in_json_text():
    err = rejects(make, {"a.js": "ok\n\x00", **BASE_FILES}, code="binary_content")
    assert err.errors[0]["location"] == "files/a.js:2"
    rejects(make, {"a.js": "bad \udc80", **BASE_FILES}, code="not_utf8")
    rejects(bundle_from_zip, valid_zip(("a.js", b"a\x00b")), code="binary_content")
