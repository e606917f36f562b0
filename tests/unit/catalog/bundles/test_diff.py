"""Unit tests for market.catalog.bundles.diff."""

from __future__ import annotations

import difflib

from market.catalog.bundles.diff import diff_bundles
from market.catalog.bundles.limits import MAX_DIFF_BYTES
from tests.unit.catalog.bundles.helpers import BASE_FILES, make


def test_diff_root_bundle_is_all_added():
    new = make({"js/app.js": "a\nb\n", **BASE_FILES}, scopes=["diet.read"], hosts=["x.example.com"])
    d = diff_bundles(None, new)
    assert [(f["path"], f["status"]) for f in d["files"]] == [
        ("index.html", "added"),
        ("js/app.js", "added"),
    ]
    assert d["files"][1]["diff"] == "--- a/js/app.js\n+++ b/js/app.js\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    assert d["manifest"]["scopes_added"] == ["diet.read"]
    assert d["manifest"]["hosts_added"] == ["x.example.com"]
    assert d["manifest"]["name_changed"] and d["manifest"]["entry_changed"]
    assert d["stats"] == {
        "files_added": 2,
        "files_removed": 0,
        "files_modified": 0,
        "lines_added": 4,
        "lines_removed": 0,
    }


def test_diff_files_added_removed_modified():
    old = make({"app.js": "a\nb\nc\n", "gone.css": "x {}\n", "same.txt": "s", **BASE_FILES})
    new = make({"app.js": "a\nB\nc\nd\n", "new.md": "# hi\n", "same.txt": "s", **BASE_FILES})
    d = diff_bundles(old, new)
    by_path = {f["path"]: f for f in d["files"]}
    assert {p: f["status"] for p, f in by_path.items()} == {
        "app.js": "modified",
        "gone.css": "removed",
        "new.md": "added",
    }
    expected = "".join(
        difflib.unified_diff(
            ["a\n", "b\n", "c\n"],
            ["a\n", "B\n", "c\n", "d\n"],
            fromfile="a/app.js",
            tofile="b/app.js",
            n=3,
        )
    )
    assert (
        by_path["app.js"]["diff"]
        == expected
        == ("--- a/app.js\n+++ b/app.js\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n")
    )
    assert by_path["gone.css"]["diff"] == ("--- a/gone.css\n+++ b/gone.css\n@@ -1 +0,0 @@\n-x {}\n")
    assert not any(f["truncated"] for f in d["files"])
    assert d["stats"] == {
        "files_added": 1,
        "files_removed": 1,
        "files_modified": 1,
        "lines_added": 3,
        "lines_removed": 2,
    }
    assert d["manifest"] == {
        "scopes_added": [],
        "scopes_removed": [],
        "hosts_added": [],
        "hosts_removed": [],
        "entry_changed": False,
        "name_changed": False,
        "description_changed": False,
        "data_schema_changed": False,
    }


def test_diff_counts_added_lines_that_look_like_headers():
    d = diff_bundles(
        make({"a.txt": "x\n", **BASE_FILES}), make({"a.txt": "x\n++ y\n-- z\n", **BASE_FILES})
    )
    assert d["stats"]["lines_added"] == 2 and d["stats"]["lines_removed"] == 0


def test_diff_marks_missing_final_newline():
    d = diff_bundles(make({"a.txt": "x\ny", **BASE_FILES}), make({"a.txt": "x\nz", **BASE_FILES}))
    assert d["files"][0]["diff"].endswith(
        "-y\n\\ No newline at end of file\n+z\n\\ No newline at end of file\n"
    )


def test_diff_scopes_hosts_and_manifest_changes():
    old = make(scopes=["diet.read", "sleep.read"], hosts=["a.example.com"])
    new = make(
        scopes=["diet.read", "diet.write"],
        hosts=["b.example.com"],
        name="Renamed",
        data_schema={"type": "object"},
    )
    m = diff_bundles(old, new)["manifest"]
    assert m["scopes_added"] == ["diet.write"] and m["scopes_removed"] == ["sleep.read"]
    assert m["hosts_added"] == ["b.example.com"] and m["hosts_removed"] == ["a.example.com"]
    assert m["name_changed"] and m["data_schema_changed"] and not m["entry_changed"]
    assert diff_bundles(old, old)["files"] == []


def test_diff_text_is_truncated_but_stats_are_complete():
    old = make({"big.txt": "", **BASE_FILES})
    new = make({"big.txt": "line of text\n" * 40_000, **BASE_FILES})
    d = diff_bundles(old, new)
    f = d["files"][0]
    assert f["truncated"] is True
    assert len(f["diff"].encode()) <= MAX_DIFF_BYTES
    assert f["diff"].endswith("\n")
    assert d["stats"]["lines_added"] == 40_000
