"""Unit tests for market.catalog.bundles.manifest: scopes, hosts and the manifest's fields."""

from __future__ import annotations

import pytest

from market.catalog.bundles import bundle_from_json
from market.catalog.bundles.manifest import SCOPE_DESCRIPTIONS, SCOPES
from tests.unit.catalog.bundles.helpers import BASE_FILES, body, make, rejects


def test_scope_vocabulary_and_descriptions():
    assert len(SCOPES) == 22 * 2
    assert {"diet.read", "health.injuries.write", "music.read"} <= SCOPES
    assert set(SCOPE_DESCRIPTIONS) == SCOPES
    assert SCOPE_DESCRIPTIONS["diet.read"] == "reads your diet log"
    assert SCOPE_DESCRIPTIONS["diet.write"].startswith("adds to and changes")


def test_rejects_unknown_scope_with_location_and_hint():
    err = rejects(make, code="unknown_scope", scopes=["diet.read", "diet.raed", "wealth.read"])
    assert [e["location"] for e in err.errors] == ["manifest.scopes[1]", "manifest.scopes[2]"]
    assert "did you mean 'diet.read'" in err.errors[0]["message"]


def test_rejects_missing_entry():
    err = rejects(make, code="missing_entry", entry="main.html")
    assert err.errors[0]["location"] == "manifest.entry"


def test_rejects_unknown_manifest_key_with_hint():
    err = rejects(make, code="bad_manifest", scope=["diet.read"])
    assert err.errors[0]["location"] == "manifest.scope"
    assert "did you mean 'scopes'" in err.errors[0]["message"]


@pytest.mark.parametrize(
    ("manifest", "location"),
    [
        ({"name": None}, "manifest.name"),
        ({"name": ""}, "manifest.name"),
        ({"name": "   "}, "manifest.name"),
        ({"name": "n" * 81}, "manifest.name"),
        ({"name": 7}, "manifest.name"),
        ({"name": "a\nb"}, "manifest.name"),
        ({"entry": None}, "manifest.entry"),
        ({"entry": ["index.html"]}, "manifest.entry"),
        ({"scopes": "diet.read"}, "manifest.scopes"),
        ({"scopes": [1]}, "manifest.scopes[0]"),
        ({"hosts": "example.com"}, "manifest.hosts"),
        ({"description": "d" * 501}, "manifest.description"),
        ({"description": 5}, "manifest.description"),
        ({"data_schema": [1, 2]}, "manifest.data_schema"),
        ({"data_schema": "object"}, "manifest.data_schema"),
        ({"data_schema": {"x": float("nan")}}, "manifest.data_schema"),
        ({"data_schema": {"x": object()}}, "manifest.data_schema"),
        ({"data_schema": {"d": "x" * (32 * 1024)}}, "manifest.data_schema"),
        ({"data_schema": {}, "data_migration": []}, "manifest.data_migration"),
        (
            {"data_schema": {}, "data_migration": {"d": "x" * (32 * 1024)}},
            "manifest.data_migration",
        ),
        ({"data_migration": {"fields": {}}}, "manifest.data_migration"),
        ({"data_schema": {}, "data_samples": {"day": 1}}, "manifest.data_samples"),
        ({"data_schema": {}, "data_samples": [{}] * 51}, "manifest.data_samples"),
        ({"data_schema": {}, "data_samples": [{"n": "x" * (64 * 1024)}]}, "manifest.data_samples"),
        ({"data_schema": {}, "data_samples": [{}, "day"]}, "manifest.data_samples[1]"),
        (
            {
                "data_schema": {},
                "data_samples": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
            },
            "manifest.data_samples",
        ),
    ],
)
def test_rejects_bad_manifest_fields(manifest, location):
    raw = body()
    raw["manifest"].update(manifest)
    raw["manifest"] = {k: v for k, v in raw["manifest"].items() if v is not None}
    err = rejects(bundle_from_json, raw, code="bad_manifest")
    assert err.errors[0]["location"] == location


def test_keeps_a_migration_and_its_samples_beside_the_schema():
    migration = {"fields": {"litres": {"from": "ml", "convert": "number"}}, "drop": ["note"]}
    bundle = make(data_schema={"type": "object"}, data_migration=migration, data_samples=[{}])
    assert bundle.manifest["data_migration"] == migration
    assert bundle.manifest["data_samples"] == [{}]


def test_manifest_must_be_an_object():
    rejects(bundle_from_json, {"manifest": ["x"], "files": BASE_FILES}, code="bad_manifest")


@pytest.mark.parametrize(
    "host",
    [
        "https://api.example.com",
        "api.example.com:443",
        "api.example.com/v1",
        "user@api.example.com",
        "*.example.com",
        "localhost",
        "127.0.0.1",
        "exa mple.com",
        "-bad.example.com",
        "example.com.",
        "a" * 64 + ".com",
        "",
    ],
)
def test_rejects_bad_host(host):
    err = rejects(make, code="bad_host", hosts=["ok.example.com", host])
    assert err.errors[0]["location"] == "manifest.hosts[1]"


def test_accepts_good_hosts_and_caps_their_number():
    b = make(hosts=["API.Example.COM", "xn--bcher-kva.example", "a-b.c-d.io"])
    assert b.manifest["hosts"] == ["a-b.c-d.io", "api.example.com", "xn--bcher-kva.example"]
    rejects(make, code="too_many_hosts", hosts=[f"h{i}.example.com" for i in range(21)])
    make(hosts=[f"h{i}.example.com" for i in range(20)] * 2)  # duplicates do not count
