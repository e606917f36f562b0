"""What changed between two versions of a bundle: unified diffs per file, manifest changes."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from evolution import data_schema

# Lines as git knows them (only "\n" ends one; str.splitlines also breaks on \r, \x0c,
# U+2028...), the same lines the upstream merges work on.
from evolution.merge import split_lines
from market.catalog.bundles import Bundle
from market.catalog.bundles.limits import MAX_DIFF_BYTES, MAX_DIFF_TOTAL_BYTES, utf8_len

__all__ = ["diff_bundles"]


def _file_diff(path: str, old: str, new: str, budget: int) -> tuple[str, bool, int, int]:
    out: list[str] = []
    used = 0
    truncated = False
    added = removed = 0
    lines = difflib.unified_diff(
        split_lines(old), split_lines(new), fromfile=f"a/{path}", tofile=f"b/{path}", n=3
    )
    for i, line in enumerate(lines):
        # The first two lines are the ---/+++ headers; counting by prefix alone
        # would miscount an added line that itself starts with "++".
        if i >= 2 and line.startswith("+"):
            added += 1
        elif i >= 2 and line.startswith("-"):
            removed += 1
        if truncated:
            continue
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        size = utf8_len(line)
        if used + size > budget:
            truncated = True
            continue
        out.append(line)
        used += size
    return "".join(out), truncated, added, removed


def diff_bundles(old: Bundle | None, new: Bundle) -> dict[str, Any]:
    """Describe what changed from ``old`` to ``new`` (``old=None``: a root, all added)."""
    old_files = old.files if old is not None else {}
    old_manifest = old.manifest if old is not None else {}
    entries: list[dict[str, Any]] = []
    stats = {
        "files_added": 0,
        "files_removed": 0,
        "files_modified": 0,
        "lines_added": 0,
        "lines_removed": 0,
    }
    remaining = MAX_DIFF_TOTAL_BYTES
    for path in sorted(set(old_files) | set(new.files)):
        before, after = old_files.get(path), new.files.get(path)
        if before == after:
            continue
        if before is None:
            status = "added"
        elif after is None:
            status = "removed"
        else:
            status = "modified"
        stats[f"files_{status}"] += 1
        text, truncated, added, removed = _file_diff(
            path, before or "", after or "", min(MAX_DIFF_BYTES, remaining)
        )
        remaining -= utf8_len(text)
        stats["lines_added"] += added
        stats["lines_removed"] += removed
        entries.append({"path": path, "status": status, "diff": text, "truncated": truncated})

    def listed(manifest: Mapping[str, Any], key: str) -> set[str]:
        return set(manifest.get(key, ()))

    manifest = {
        "scopes_added": sorted(listed(new.manifest, "scopes") - listed(old_manifest, "scopes")),
        "scopes_removed": sorted(listed(old_manifest, "scopes") - listed(new.manifest, "scopes")),
        "hosts_added": sorted(listed(new.manifest, "hosts") - listed(old_manifest, "hosts")),
        "hosts_removed": sorted(listed(old_manifest, "hosts") - listed(new.manifest, "hosts")),
        "entry_changed": old_manifest.get("entry") != new.manifest.get("entry"),
        "name_changed": old_manifest.get("name") != new.manifest.get("name"),
        "description_changed": old_manifest.get("description") != new.manifest.get("description"),
        "data_schema_changed": old_manifest.get("data_schema") != new.manifest.get("data_schema"),
    }
    return {
        "files": entries,
        "manifest": manifest,
        "stats": stats,
        "data_schema_change": _schema_change(old_manifest, new.manifest),
    }


def _schema_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any] | None:
    """How the stored-data schema changed (``evolution.data_schema.classify_change``); None
    when a side declares none, or holds one that is not a valid JSON Schema."""
    if old.get("data_schema") is None or new.get("data_schema") is None:
        return None
    try:
        change = data_schema.classify_change(old["data_schema"], new["data_schema"])
    except ValueError:
        return None
    return {
        "kind": change.kind,
        "fields": [
            {"name": f.name, "change": f.change, "detail": f.detail, "kind": f.kind}
            for f in change.fields
        ],
    }
