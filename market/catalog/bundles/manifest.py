"""The manifest: the scope vocabulary, host names, and normalizing what a publisher wrote."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from feedback.json_limits import first_unstorable, nesting_exceeds
from market.catalog.bundles.limits import (
    MAX_DATA_MIGRATION_BYTES,
    MAX_DATA_SAMPLES,
    MAX_DATA_SAMPLES_BYTES,
    MAX_DATA_SCHEMA_BYTES,
    MAX_DATA_SCHEMA_DEPTH,
    MAX_DESCRIPTION_CHARS,
    MAX_HOSTS,
    MAX_NAME_CHARS,
    did_you_mean,
    error_item,
    has_surrogate,
    printable,
)

__all__ = ["SCOPES", "SCOPE_DESCRIPTIONS", "SCOPE_DOMAINS"]

MANIFEST_FILENAME = "manifest.json"
_MANIFEST_KEYS = (
    "name",
    "entry",
    "scopes",
    "hosts",
    "data_schema",
    "data_migration",
    "data_samples",
    "description",
)

# --------------------------------------------------------------------------- scopes

_DOMAIN_NOUNS: dict[str, str] = {
    "profile": "your profile (name, age and preferences)",
    "diet": "your diet log",
    "hydration": "your water intake log",
    "fitness": "your workouts and activity",
    "health": "your general health records",
    "health.injuries": "your injury records",
    "health.medications": "your medication list",
    "sleep": "your sleep log",
    "mood": "your mood entries",
    "journal": "your journal entries",
    "finance": "your budget and spending records",
    "family": "your family members' details",
    "calendar": "your calendar",
    "location": "your saved places and location",
    "study": "your study plans and progress",
    "hobby": "your hobby projects",
    "travel": "your trips and travel plans",
    "photos": "your photos",
    "contacts": "your contacts",
    "home": "your home inventory and chores",
    "pets": "your pets' records",
    "music": "your music library and playlists",
}
SCOPE_DOMAINS: tuple[str, ...] = tuple(_DOMAIN_NOUNS)
SCOPE_DESCRIPTIONS: dict[str, str] = {}
for _domain, _noun in _DOMAIN_NOUNS.items():
    SCOPE_DESCRIPTIONS[f"{_domain}.read"] = f"reads {_noun}"
    SCOPE_DESCRIPTIONS[f"{_domain}.write"] = f"adds to and changes {_noun}"
SCOPES: frozenset[str] = frozenset(SCOPE_DESCRIPTIONS)

# Labels deliberately exclude IP literals and single-label names such as
# "localhost": a published app may only name public DNS hosts. The TLD must be
# alphabetic or punycode.
_HOST_RE = re.compile(
    r"(?=.{1,253}\Z)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})\Z"
)

# --------------------------------------------------------------------------- manifest


def _host_problem(host: str) -> str | None:
    if "://" in host:
        return "must be a bare hostname, without a scheme like 'https://'"
    if "/" in host:
        return "must be a bare hostname, without a path"
    if "@" in host:
        return "must be a bare hostname, without credentials"
    if ":" in host:
        return "must be a bare hostname, without a port"
    if "*" in host:
        return "wildcards are not allowed; list each hostname"
    if not _HOST_RE.match(host):
        return "is not a valid public DNS hostname (like 'api.example.com')"
    return None


def _bounded_json(value: object, key: str, kind: type, max_bytes: int) -> tuple[Any, str | None]:
    """A detached copy of a manifest's JSON value (tuples become lists), or why it is refused:
    not an object (``kind`` Mapping) or a list, not plain JSON, too large or too deep."""
    if not isinstance(value, kind):
        wanted = "a JSON object" if kind is Mapping else "a list"
        if key == "data_schema":
            wanted += " (a JSON Schema)"
        return None, f"{key} must be {wanted}"
    try:
        text = json.dumps(
            value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
        size = len(text.encode("utf-8"))
    except (TypeError, ValueError, RecursionError, UnicodeEncodeError) as exc:
        return None, f"{key} is not plain JSON ({type(exc).__name__})"
    if size > max_bytes:
        return None, f"{key} is {size} bytes (max {max_bytes})"
    if nesting_exceeds(text, MAX_DATA_SCHEMA_DEPTH):
        return None, f"{key} nests more than {MAX_DATA_SCHEMA_DEPTH} levels deep"
    return json.loads(text), None


def _data_move_errors(out: Mapping[str, Any]) -> list[dict]:
    """A migration and its samples describe moving data into this bundle's data_schema: they
    need one, and the samples are records (JSON objects), a bounded few."""
    errors = []
    for key in ("data_migration", "data_samples"):
        if key in out and "data_schema" not in out:
            errors.append(
                error_item(
                    "bad_manifest",
                    f"manifest.{key}",
                    f"{key} describes moving data into the data_schema: declare a data_schema",
                )
            )
    samples = out.get("data_samples", [])
    if len(samples) > MAX_DATA_SAMPLES:
        errors.append(
            error_item(
                "bad_manifest",
                "manifest.data_samples",
                f"{len(samples)} sample records (max {MAX_DATA_SAMPLES})",
            )
        )
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict):
            errors.append(
                error_item(
                    "bad_manifest",
                    f"manifest.data_samples[{i}]",
                    "a sample record must be a JSON object",
                )
            )
    return errors


def normalize_manifest(raw: object, files: Mapping[str, str]) -> tuple[dict[str, Any], list[dict]]:
    errors: list[dict[str, str]] = []
    if not isinstance(raw, Mapping):
        kind = type(raw).__name__
        return {}, [
            error_item("bad_manifest", "manifest", f"manifest must be a JSON object, got {kind}")
        ]

    for key in raw:
        if key not in _MANIFEST_KEYS:
            shown = printable(str(key))
            errors.append(
                error_item(
                    "bad_manifest",
                    f"manifest.{shown}",
                    f"unknown manifest key '{shown}'{did_you_mean(str(key), _MANIFEST_KEYS)}",
                )
            )

    out: dict[str, Any] = {}

    name = raw.get("name")
    if name is None:
        errors.append(error_item("bad_manifest", "manifest.name", "name is required"))
    elif not isinstance(name, str):
        errors.append(error_item("bad_manifest", "manifest.name", "name must be a string"))
    else:
        name = name.strip()
        if not 1 <= len(name) <= MAX_NAME_CHARS:
            errors.append(
                error_item(
                    "bad_manifest",
                    "manifest.name",
                    f"name must be 1 to {MAX_NAME_CHARS} characters, got {len(name)}",
                )
            )
        elif has_surrogate(name) or any(
            unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name
        ):
            errors.append(
                error_item("bad_manifest", "manifest.name", "name contains control characters")
            )
        else:
            out["name"] = name

    entry = raw.get("entry")
    if entry is None:
        errors.append(error_item("bad_manifest", "manifest.entry", "entry is required"))
    elif not isinstance(entry, str):
        errors.append(error_item("bad_manifest", "manifest.entry", "entry must be a string path"))
    else:
        if entry not in files:
            errors.append(
                error_item(
                    "missing_entry",
                    "manifest.entry",
                    f"entry '{printable(entry)}' is not one of the bundle's files"
                    f"{did_you_mean(entry, files)}",
                )
            )
        out["entry"] = entry

    scopes = raw.get("scopes")
    if scopes is None:
        scopes = []
    if not isinstance(scopes, list):
        errors.append(
            error_item("bad_manifest", "manifest.scopes", "scopes must be a list of strings")
        )
        scopes = []
    clean_scopes: set[str] = set()
    for i, scope in enumerate(scopes):
        loc = f"manifest.scopes[{i}]"
        if not isinstance(scope, str):
            errors.append(error_item("bad_manifest", loc, "scope must be a string"))
        elif scope not in SCOPES:
            errors.append(
                error_item(
                    "unknown_scope",
                    loc,
                    f"unknown scope '{printable(scope)}'{did_you_mean(scope, SCOPES)}",
                )
            )
        else:
            clean_scopes.add(scope)
    out["scopes"] = sorted(clean_scopes)

    hosts = raw.get("hosts")
    if hosts is None:
        hosts = []
    if not isinstance(hosts, list):
        errors.append(
            error_item("bad_manifest", "manifest.hosts", "hosts must be a list of hostnames")
        )
        hosts = []
    clean_hosts: set[str] = set()
    for i, host in enumerate(hosts):
        loc = f"manifest.hosts[{i}]"
        if not isinstance(host, str):
            errors.append(error_item("bad_host", loc, "host must be a string"))
            continue
        lowered = host.lower()
        problem = _host_problem(lowered)
        if problem:
            errors.append(error_item("bad_host", loc, f"'{printable(host)}' {problem}"))
        else:
            clean_hosts.add(lowered)
    if len(clean_hosts) > MAX_HOSTS:
        errors.append(
            error_item(
                "too_many_hosts",
                "manifest.hosts",
                f"{len(clean_hosts)} hosts listed (max {MAX_HOSTS})",
            )
        )
    out["hosts"] = sorted(clean_hosts)

    description = raw.get("description")
    if description is not None:
        if not isinstance(description, str):
            errors.append(
                error_item("bad_manifest", "manifest.description", "description must be a string")
            )
        else:
            description = description.strip()
            if len(description) > MAX_DESCRIPTION_CHARS:
                errors.append(
                    error_item(
                        "bad_manifest",
                        "manifest.description",
                        f"description is {len(description)} characters "
                        f"(max {MAX_DESCRIPTION_CHARS})",
                    )
                )
            elif description:
                out["description"] = description

    for key, max_bytes, kind in (
        ("data_schema", MAX_DATA_SCHEMA_BYTES, Mapping),
        ("data_migration", MAX_DATA_MIGRATION_BYTES, Mapping),
        ("data_samples", MAX_DATA_SAMPLES_BYTES, list),
    ):
        if raw.get(key) is not None:
            value, problem = _bounded_json(raw[key], key, kind, max_bytes)
            if problem is not None:
                errors.append(error_item("bad_manifest", f"manifest.{key}", problem))
            else:
                out[key] = value
    errors += _data_move_errors(out)
    unstorable = first_unstorable(out, "manifest")
    if unstorable is not None:
        errors.append(error_item("bad_manifest", *unstorable))
    return out, errors
