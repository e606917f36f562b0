"""Unit tests for market.catalog.bundles itself: the Bundle type, canonical bytes, JSON input."""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from market.catalog import bundles
from market.catalog.bundles import bundle_from_canonical, bundle_from_json, canonical_bytes
from tests.unit.catalog.bundles.helpers import BASE_FILES, BASE_MANIFEST, body, make, rejects


def test_package_is_pure():
    """No web framework and no database in any module, and nothing of market but the package."""
    for path in sorted(Path(bundles.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {
            node.module if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        outside = {
            module
            for module in imported
            if module.split(".")[0] in {"flask", "apiflask", "sqlmodel", "sqlalchemy", "market"}
            and module != "market.catalog.bundles"
            and not module.startswith("market.catalog.bundles.")
        }
        assert outside == set(), path.name


def test_json_bundle_is_normalized_and_hashed():
    b = make(
        {"js/app.js": "let x = 1;\n", **BASE_FILES},
        name="  Water buddy ",
        scopes=["hydration.write", "hydration.read", "hydration.read"],
        hosts=["API.Example.com", "cdn.example.org", "api.example.com"],
        description="Tracks glasses of water.",
        data_schema={"type": "object", "properties": {"ml": {"type": "integer"}}},
    )
    assert list(b.files) == ["index.html", "js/app.js"]
    assert b.manifest == {
        "name": "Water buddy",
        "entry": "index.html",
        "scopes": ["hydration.read", "hydration.write"],
        "hosts": ["api.example.com", "cdn.example.org"],
        "description": "Tracks glasses of water.",
        "data_schema": {"type": "object", "properties": {"ml": {"type": "integer"}}},
    }
    data = b.canonical_bytes()
    assert (
        data
        == json.dumps(
            {"files": b.files, "manifest": b.manifest},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
    )
    assert data == canonical_bytes(b.manifest, b.files)
    assert b.sha256 == hashlib.sha256(data).hexdigest()
    assert b.size == len(data)
    assert "<!doctype" not in repr(b)  # repr must not dump file contents
    assert hash(b) == hash(bundle_from_canonical(data))


def test_defaults_and_null_optionals():
    b = make(scopes=None, hosts=None, description=None, data_schema=None)
    assert b.manifest == {**BASE_MANIFEST, "scopes": [], "hosts": []}


def test_hash_stable_under_key_order():
    files = {"index.html": "x", "b.js": "b", "a/c.css": "c"}
    manifest = {"name": "N", "entry": "index.html", "scopes": ["diet.read", "sleep.read"]}
    reordered = {
        "files": dict(reversed(list(files.items()))),
        "manifest": dict(
            reversed(list({**manifest, "scopes": ["sleep.read", "diet.read"]}.items()))
        ),
    }
    assert bundle_from_json({"manifest": manifest, "files": files}).sha256 == (
        bundle_from_json(reordered).sha256
    )


def test_non_ascii_text_is_hashed_as_utf8():
    b = make({"index.html": "café ☕ 日本\n"})
    assert "café ☕ 日本".encode() in b.canonical_bytes()


def test_bundle_from_canonical_round_trips():
    b = make(scopes=["diet.read"])
    assert bundle_from_canonical(b.canonical_bytes()) == b
    rejects(bundle_from_canonical, b"{nope", code="bad_bundle")


def test_rejects_malformed_bundle_shapes():
    rejects(bundle_from_json, ["not", "an", "object"], code="bad_bundle")
    rejects(bundle_from_json, {"manifest": BASE_MANIFEST}, code="bad_bundle")
    rejects(bundle_from_json, {**body(), "filez": {}}, code="bad_bundle")
    rejects(
        bundle_from_json, {"manifest": BASE_MANIFEST, "files": ["index.html"]}, code="bad_bundle"
    )
    rejects(bundle_from_json, body({"index.html": 5}), code="bad_bundle")
    rejects(bundle_from_json, body({1: "x", **BASE_FILES}), code="bad_bundle")
