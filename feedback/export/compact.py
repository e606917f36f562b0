"""Compact completions: a version's answer cut to what tells it apart, for trainers whose
context is a few thousand tokens.

A full completion is the whole bundle (canonical JSON of manifest and files, 13–21k characters
in the demo community): a trainer at TRL's default ``max_length`` of 1,024 tokens drops or cuts
nearly all of it. The compact view keeps what a preference or a label is about:

* a pair: each side shows only its lines that the other side does not have, with
  ``CONTEXT_LINES`` lines around each; the runs of lines the other side has too are replaced by
  a marker saying how many. Files both sides have alike are named, not shown.
* a single version: the same view against its parent (the version it revises or was forked
  from), so a fork's compact completion is its change; a root (no parent) shows the head of
  each file.

Each view names the app (``name`` and ``description`` of its manifest) and shows every other
manifest key that differs from the other side (all of them for a root), so the completion says
what it is. The manifest line and the file lines shown share ``BUDGET`` characters per
completion: past it, a marker says how many more lines were left out. The budget is sized so
that a prompt and a compact completion fit TRL's default ``max_length`` of 1,024 tokens (by
``feedback.export.lengths``' estimate, which errs long). The view is plain text, one section per
file.
"""

from __future__ import annotations

import bisect

import orjson

CONTEXT_LINES = 3
BUDGET = 1_800  # characters of the manifest line and file lines per completion
ALWAYS_SHOWN = ("name", "description")


def _bundle(completion: str) -> tuple[dict, dict[str, str]]:
    """A completion's manifest and files (the bundle's canonical JSON)."""
    bundle = orjson.loads(completion)
    return bundle["manifest"], bundle["files"]


def _lines(count: int, adjective: str = "") -> str:
    """ "1 line", "3 more lines" (``adjective`` "more")."""
    return f"{count} {adjective + ' ' if adjective else ''}line{'' if count == 1 else 's'}"


def _manifest_line(manifest: dict, other: dict | None) -> str:
    shown = {
        key: value
        for key, value in manifest.items()
        if key in ALWAYS_SHOWN or other is None or other.get(key) != value
    }
    return "manifest.json: " + orjson.dumps(shown, option=orjson.OPT_SORT_KEYS).decode()


class _Budget:
    """Characters of file lines left for one completion."""

    def __init__(self, characters: int) -> None:
        self.left = characters

    def take(self, lines: list[str]) -> tuple[list[str], int]:
        """As many of ``lines`` as fit, and how many did not."""
        kept = []
        for line in lines:
            cost = len(line) + 1
            if cost > self.left:
                break
            self.left -= cost
            kept.append(line)
        return kept, len(lines) - len(kept)


def _unshared(mine: list[str], other: list[str]) -> list[int]:
    """Indices of ``mine``'s lines that ``other`` does not have anywhere. (Not a line diff: a
    line moved within the file counts as shared. A diff's longest-common-subsequence search
    cost about a millisecond per pair of bundles; this is one set.)"""
    theirs = set(other)
    return [j for j, line in enumerate(mine) if line not in theirs]


def _changed_view(path: str, mine: list[str], unshared: list[int], budget: _Budget) -> list[str]:
    """A file's ``unshared`` lines, each with ``CONTEXT_LINES`` lines around it (overlapping
    stretches merged); the runs of shared lines between them as markers. Stops at the budget,
    counting the unshared lines it did not reach."""
    n = len(mine)
    out = [f"--- {path} ({_lines(n)}; changed) ---"]
    # With no unshared line (only lines taken out), the file's last lines are the context.
    anchors = unshared or [n - 1]
    position = 0
    index = 0
    while index < len(anchors):
        start = max(position, anchors[index] - CONTEXT_LINES)
        last = anchors[index]
        index += 1
        # Anchors whose context touches the previous one's join its stretch.
        while index < len(anchors) and anchors[index] - last <= 2 * CONTEXT_LINES + 1:
            last = anchors[index]
            index += 1
        end = min(n, last + CONTEXT_LINES + 1)
        if start > position:
            out.append(f"⋯ {_lines(start - position)} as in the other version ⋯")
        shown, left_out = budget.take(mine[start:end])
        out += shown
        if left_out:
            missed = len(unshared) - bisect.bisect_left(unshared, start + len(shown))
            out.append(f"⋯ {_lines(missed, 'more changed')} not shown ⋯")
            return out
        position = end
    if position < n:
        out.append(f"⋯ {_lines(n - position)} as in the other version ⋯")
    return out


def _head_view(path: str, lines: list[str], budget: _Budget, files_left: int) -> list[str]:
    """A file's first lines, within its share of what is left of the budget."""
    share = _Budget(budget.left // max(files_left, 1))
    shown, left_out = share.take(lines)
    budget.left -= sum(len(line) + 1 for line in shown)
    out = [f"--- {path} ({_lines(len(lines))}) ---", *shown]
    if left_out:
        out.append(f"⋯ {_lines(left_out, 'more')} ⋯")
    return out


Files = dict[str, list[str]]  # path → lines
Changes = dict[str, list[int]]  # path → this side's lines the other side does not have


def _view(manifest: dict, files: Files, other: tuple[dict, Files, Changes] | None) -> str:
    """One side's view: against the other side (its manifest, files and this side's unshared
    lines per file that differs), or alone (a root)."""
    out = [_manifest_line(manifest, other[0] if other else None)]
    budget = _Budget(max(BUDGET - len(out[0]), 0))
    paths = sorted(files)
    for index, path in enumerate(paths):
        lines = files[path]
        if other is None:
            out += _head_view(path, lines, budget, len(paths) - index)
        elif path in other[2]:
            out += _changed_view(path, lines, other[2][path], budget)
        else:
            out.append(f"--- {path} ({_lines(len(lines))}; as in the other version) ---")
    if other is not None:
        gone = sorted(set(other[1]) - set(files))
        out += [f"--- {path}: not in this version ---" for path in gone]
    return "\n".join(out)


def _lines_of(completion: str) -> tuple[dict, Files]:
    manifest, files = _bundle(completion)
    return manifest, {path: text.splitlines() for path, text in files.items()}


def _changes(mine: Files, theirs: Files) -> Changes:
    """Per file of ``mine`` that ``theirs`` does not have alike, its unshared lines."""
    return {
        path: _unshared(lines, theirs.get(path, []))
        for path, lines in mine.items()
        if lines != theirs.get(path)
    }


def compact_pair(chosen: str, rejected: str) -> tuple[str, str]:
    """Both sides of a pair, each showing where it differs from the other."""
    (a_manifest, a_files), (b_manifest, b_files) = _lines_of(chosen), _lines_of(rejected)
    return (
        _view(a_manifest, a_files, (b_manifest, b_files, _changes(a_files, b_files))),
        _view(b_manifest, b_files, (a_manifest, a_files, _changes(b_files, a_files))),
    )


def compact_version(completion: str, parent: str | None) -> str:
    """One version: its change against its parent's completion, or (``parent`` None) the head
    of each of its files."""
    manifest, files = _lines_of(completion)
    if parent is None:
        return _view(manifest, files, None)
    parent_manifest, parent_files = _lines_of(parent)
    return _view(manifest, files, (parent_manifest, parent_files, _changes(files, parent_files)))
