"""Offering a parent's new version to a fork: a three-way merge of a bundle.

Three snapshots of a bundle, each a manifest (dict) and files (path → text): ``base``, the
parent's version the fork came from; ``upstream``, the parent's new version; ``fork``, the
fork as it is now. The merge applies the parent's change (base → upstream) to the fork and
keeps the fork's own change (base → fork), telling a clean merge from a conflict:

* Files, per path, by who touched it. Nobody, or both the same way: unchanged. Only the fork
  (edited, added or deleted it): kept-fork. Only the parent: taken-from-upstream (an added
  file is added, a deleted one deleted). Both, differently: text merged line by line with
  diff3 semantics (``merge3``); overlapping or adjacent changes conflict, and the conflicted
  text shows both sides between ``<<<<<<< fork`` / ``=======`` / ``>>>>>>> upstream`` (lines
  both sides wrote alike at a conflict's start or end stay outside the markers). A file
  deleted on one side and edited on the other is a conflict whose text is the edited version
  (so nothing is lost); two different files added at one path conflict as a whole.
* The manifest, as data, never as text. ``scopes`` and ``hosts`` are sets: the fork's items,
  minus those the parent dropped, plus those it added (no conflict is possible). Other keys
  (name, entry, description, ...) are three-way values: a conflict when both sides changed one
  differently. ``data_schema`` is merged per JSON Schema ``properties`` entry (each a
  three-way value) with ``required`` as a set, its other keywords three-way values. Where a
  manifest value conflicts the merged manifest keeps the fork's, and the conflict holds all
  three.

Wherever one side left a value (file, manifest key, schema property) as it was in ``base``,
the merge takes the other side's value as is, so an untouched fork merges to exactly the
parent's new version and a no-op parent change leaves the fork exactly as it was.

Lines end at "\\n" only, as git and ``market.catalog.bundles.diff`` count them: a last line
without a newline stays without one unless a side's change gives it one. A conflict region
whose side ends without a newline gets one before the next marker line, so markers stay on
their own lines.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from merge3 import Merge3

__all__ = [
    "FileMerge",
    "FileStatus",
    "ManifestConflict",
    "MergeResult",
    "TextConflict",
    "merge_update",
    "split_lines",
]

FORK_MARKER = "<<<<<<< fork"
MIDDLE_MARKER = "======="
UPSTREAM_MARKER = ">>>>>>> upstream"
SET_KEYS = ("scopes", "hosts")
SCHEMA_KEY = "data_schema"

Snapshot = tuple[Mapping[str, Any], Mapping[str, str]]


class _Absent:
    """A key or file one snapshot does not have (``None`` is a legitimate JSON value)."""

    def __repr__(self) -> str:
        return "ABSENT"

    def __deepcopy__(self, memo: dict) -> _Absent:
        return self  # one marker, compared by identity


ABSENT: Any = _Absent()


class FileStatus(StrEnum):
    UNCHANGED = "unchanged"  # the fork's file already is the upstream's
    TAKEN_FROM_UPSTREAM = "taken-from-upstream"  # only the parent changed it
    KEPT_FORK = "kept-fork"  # only the fork changed it
    MERGED_CLEAN = "merged-clean"  # both changed it, in separate places
    CONFLICT = "conflict"


@dataclass(frozen=True)
class TextConflict:
    """One conflicted region of a text file: the base lines both sides replaced, and what
    each side wrote there apart from the lines both wrote alike at its start and end."""

    base: tuple[str, ...]
    fork: tuple[str, ...]
    upstream: tuple[str, ...]


@dataclass(frozen=True)
class FileMerge:
    path: str
    status: FileStatus
    text: str | None  # the merged text; None when the merged bundle has no such file
    reason: str  # why it conflicted ("" when it did not)
    conflicts: tuple[TextConflict, ...] = ()


@dataclass(frozen=True)
class ManifestConflict:
    """A manifest value both sides changed differently; ``key`` is a dotted path such as
    ``name`` or ``data_schema.properties.amount``. ABSENT marks a value a side removed."""

    key: str
    base: Any
    fork: Any
    upstream: Any
    reason: str = "both sides changed it differently"


@dataclass(frozen=True)
class MergeResult:
    manifest: dict[str, Any]
    files: dict[str, str]
    file_merges: tuple[FileMerge, ...]  # one per path of any snapshot, sorted by path
    manifest_conflicts: tuple[ManifestConflict, ...]
    added_scopes: tuple[str, ...]  # scopes the merged manifest asks for that the fork did not

    @property
    def clean(self) -> bool:
        return not self.manifest_conflicts and all(
            f.status is not FileStatus.CONFLICT for f in self.file_merges
        )

    @property
    def conflicted_paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.file_merges if f.status is FileStatus.CONFLICT)


def merge_update(base: Snapshot, upstream: Snapshot, fork: Snapshot) -> MergeResult:
    """Merge the parent's change ``base`` → ``upstream`` onto ``fork``."""
    base_manifest, base_files = base
    upstream_manifest, upstream_files = upstream
    fork_manifest, fork_files = fork

    file_merges = tuple(
        _merge_file(
            path,
            base_files.get(path, ABSENT),
            upstream_files.get(path, ABSENT),
            fork_files.get(path, ABSENT),
        )
        for path in sorted(set(base_files) | set(upstream_files) | set(fork_files))
    )
    files = {f.path: f.text for f in file_merges if f.text is not None}

    conflicts: list[ManifestConflict] = []
    manifest = _merge_mapping(
        base_manifest, upstream_manifest, fork_manifest, "", conflicts, _merge_manifest_value
    )
    entry = manifest.get("entry")
    entry_conflicted = any(c.key == "entry" for c in conflicts)
    if isinstance(entry, str) and entry not in files and not entry_conflicted:
        conflicts.append(
            ManifestConflict(
                "entry",
                base_manifest.get("entry", ABSENT),
                fork_manifest.get("entry", ABSENT),
                upstream_manifest.get("entry", ABSENT),
                "the merged files have no file at the merged entry",
            )
        )
    fork_scopes = set(fork_manifest.get("scopes", ()))
    added_scopes = tuple(sorted(set(manifest.get("scopes", ())) - fork_scopes))
    return MergeResult(
        manifest=manifest,
        files=files,
        file_merges=file_merges,
        manifest_conflicts=tuple(conflicts),
        added_scopes=added_scopes,
    )


# --------------------------------------------------------------------------- files


def split_lines(text: str) -> list[str]:
    """Lines ending in "\\n", the last one without it when the text has no final newline."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _merge_file(path: str, base: Any, upstream: Any, fork: Any) -> FileMerge:
    def done(status: FileStatus, text: Any, reason: str = "") -> FileMerge:
        return FileMerge(path, status, None if text is ABSENT else text, reason)

    if fork == upstream:
        return done(FileStatus.UNCHANGED, fork)
    if upstream == base:
        return done(FileStatus.KEPT_FORK, fork)
    if fork == base:
        return done(FileStatus.TAKEN_FROM_UPSTREAM, upstream)
    # Both changed it, differently.
    if upstream is ABSENT:
        return done(FileStatus.CONFLICT, fork, "upstream deleted the file; the fork edited it")
    if fork is ABSENT:
        return done(FileStatus.CONFLICT, upstream, "the fork deleted the file; upstream edited it")
    text, conflicts = _merge_text("" if base is ABSENT else base, upstream, fork)
    if not conflicts:
        return FileMerge(path, FileStatus.MERGED_CLEAN, text, "")
    reason = (
        "both added the file, differently"
        if base is ABSENT
        else "both changed the same or adjacent lines"
    )
    return FileMerge(path, FileStatus.CONFLICT, text, reason, tuple(conflicts))


def _merge_text(base: str, upstream: str, fork: str) -> tuple[str, list[TextConflict]]:
    base_lines, upstream_lines, fork_lines = map(split_lines, (base, upstream, fork))
    out: list[str] = []
    conflicts: list[TextConflict] = []
    # merge3 names its sides a and b and shows a first: a is the fork, b the upstream.
    for group in Merge3(base_lines, fork_lines, upstream_lines).merge_groups():
        if group[0] != "conflict":
            out.extend(group[1])
            continue
        _, base_part, fork_part, upstream_part = group
        head, tail = _shared_ends(fork_part, upstream_part)
        fork_own = fork_part[head : len(fork_part) - tail]
        upstream_own = upstream_part[head : len(upstream_part) - tail]
        conflicts.append(TextConflict(tuple(base_part), tuple(fork_own), tuple(upstream_own)))
        out.extend(fork_part[:head])
        out.append(FORK_MARKER + "\n")
        out.extend(_closed(fork_own))
        out.append(MIDDLE_MARKER + "\n")
        out.extend(_closed(upstream_own))
        out.append(UPSTREAM_MARKER + "\n")
        out.extend(fork_part[len(fork_part) - tail :])
    return "".join(out), conflicts


def _shared_ends(fork: Sequence[str], upstream: Sequence[str]) -> tuple[int, int]:
    """How many leading and trailing lines both sides of a conflict wrote alike: they are
    agreed, so they go outside the markers (git's "zealous" diff3 does the same). Two
    forks appending different fields after one edited line conflict on the fields only."""
    shorter = min(len(fork), len(upstream))
    head = 0
    while head < shorter and fork[head] == upstream[head]:
        head += 1
    tail = 0
    while tail < shorter - head and fork[-1 - tail] == upstream[-1 - tail]:
        tail += 1
    return head, tail


def _closed(lines: Sequence[str]) -> list[str]:
    """The lines, the last one given a newline so the marker after it stays on its own line."""
    closed = list(lines)
    if closed and not closed[-1].endswith("\n"):
        closed[-1] += "\n"
    return closed


# --------------------------------------------------------------------------- manifest


def _changed_differently(base: Any, upstream: Any, fork: Any) -> bool:
    return base != upstream and base != fork and upstream != fork


def _three_way(key: str, base: Any, upstream: Any, fork: Any, conflicts: list) -> Any:
    """The value a side changed (the fork's when both did, the same way or not)."""
    if fork == base:
        return upstream
    if _changed_differently(base, upstream, fork):
        conflicts.append(ManifestConflict(key, base, fork, upstream))
    return fork


ValueMerge = Callable[[str, Any, Any, Any, list], Any]


def _merge_mapping(
    base: Any, upstream: Any, fork: Any, prefix: str, conflicts: list, merge_value: ValueMerge
) -> dict[str, Any]:
    """Key by key; a key absent from the result is left out."""
    merged: dict[str, Any] = {}
    for key in dict.fromkeys([*fork, *upstream, *base]):
        value = merge_value(
            prefix + key,
            base.get(key, ABSENT),
            upstream.get(key, ABSENT),
            fork.get(key, ABSENT),
            conflicts,
        )
        if value is not ABSENT:
            merged[key] = value
    return merged


def _merge_manifest_value(key: str, base: Any, upstream: Any, fork: Any, conflicts: list) -> Any:
    if not _changed_differently(base, upstream, fork):
        return _copied(key, base, upstream, fork, conflicts)
    if key in SET_KEYS and all(_is_list_or_absent(v) for v in (base, upstream, fork)):
        return _merge_set(base, upstream, fork)
    if key == SCHEMA_KEY and all(isinstance(v, Mapping) for v in (base, upstream, fork)):
        return _merge_mapping(base, upstream, fork, key + ".", conflicts, _merge_schema_value)
    return _copied(key, base, upstream, fork, conflicts)


def _merge_schema_value(key: str, base: Any, upstream: Any, fork: Any, conflicts: list) -> Any:
    if not _changed_differently(base, upstream, fork):
        return _copied(key, base, upstream, fork, conflicts)
    keyword = key.removeprefix(SCHEMA_KEY + ".")
    if keyword == "properties" and all(
        isinstance(v, Mapping) or v is ABSENT for v in (base, upstream, fork)
    ):
        return _merge_mapping(
            _or_empty(base), _or_empty(upstream), _or_empty(fork), key + ".", conflicts, _copied
        )
    if keyword == "required" and all(_is_list_or_absent(v) for v in (base, upstream, fork)):
        return _merge_set(base, upstream, fork)
    return _copied(key, base, upstream, fork, conflicts)


def _copied(key: str, base: Any, upstream: Any, fork: Any, conflicts: list) -> Any:
    """The three-way value, detached from the snapshots it came from."""
    return copy.deepcopy(_three_way(key, base, upstream, fork, conflicts))


def _merge_set(base: Any, upstream: Any, fork: Any) -> list[Any]:
    """The fork's items (in its order) bar those upstream dropped, then upstream's additions."""
    base, upstream, fork = (_or_empty_list(v) for v in (base, upstream, fork))
    merged: list[Any] = []
    for item in fork:
        if (item in upstream or item not in base) and item not in merged:
            merged.append(item)
    for item in upstream:
        if item not in base and item not in merged:
            merged.append(item)
    return copy.deepcopy(merged)


def _is_list_or_absent(value: Any) -> bool:
    return value is ABSENT or isinstance(value, list)


def _or_empty(value: Any) -> Mapping[str, Any]:
    return {} if value is ABSENT else value


def _or_empty_list(value: Any) -> list[Any]:
    return [] if value is ABSENT else value
