"""Compact completions: a version's answer cut to what tells it apart, for trainers whose
context is a few thousand tokens.

A full completion is the whole bundle (canonical JSON of manifest and files, 13–21k characters
in the demo community): a trainer at TRL's default ``max_length`` of 1,024 tokens drops or cuts
nearly all of it. The compact view keeps what a preference or a label is about:

* a pair: each side shows only the lines where it differs from the other side, with
  ``CONTEXT_LINES`` lines around each change; the lines both sides share are replaced by a
  marker saying how many. Files both sides have alike are named, not shown.
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

import difflib

import orjson

CONTEXT_LINES = 3
BUDGET = 1_800  # characters of the manifest line and file lines per completion
ALWAYS_SHOWN = ("name", "description")


def _bundle(completion: str) -> tuple[dict, dict[str, str]]:
    """A completion's manifest and files (the bundle's canonical JSON)."""
    bundle = orjson.loads(completion)
    return bundle["manifest"], bundle["files"]


def _lines(count: int, more: bool = False) -> str:
    return f"{count} {'more ' if more else ''}line{'' if count == 1 else 's'}"


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


def _changed_view(path: str, mine: list[str], other: list[str], budget: _Budget) -> list[str]:
    """A file's lines that differ from ``other`` with their context, the shared stretches as
    markers."""
    keep = [False] * len(mine)
    matcher = difflib.SequenceMatcher(None, other, mine, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            for j in range(max(0, j1 - CONTEXT_LINES), min(len(mine), j2 + CONTEXT_LINES)):
                keep[j] = True
    if not any(keep):  # only deletions at the end: show the last lines as the context
        for j in range(max(0, len(mine) - CONTEXT_LINES), len(mine)):
            keep[j] = True
    out = [f"--- {path} ({_lines(len(mine))}; changed) ---"]
    j = 0
    while j < len(mine):
        end = j
        while end < len(mine) and keep[end] == keep[j]:
            end += 1
        if keep[j]:
            shown, left_out = budget.take(mine[j:end])
            out += shown
            if left_out:
                out.append(f"⋯ {_lines(left_out + sum(keep[end:]), more=True)} not shown ⋯")
                return out
        else:
            out.append(f"⋯ {_lines(end - j)} as in the other version ⋯")
        j = end
    return out


def _head_view(path: str, lines: list[str], budget: _Budget, files_left: int) -> list[str]:
    """A file's first lines, within its share of what is left of the budget."""
    share = _Budget(budget.left // max(files_left, 1))
    shown, left_out = share.take(lines)
    budget.left -= sum(len(line) + 1 for line in shown)
    out = [f"--- {path} ({_lines(len(lines))}) ---", *shown]
    if left_out:
        out.append(f"⋯ {_lines(left_out, more=True)} ⋯")
    return out


def _view(manifest: dict, files: dict[str, str], other: tuple[dict, dict[str, str]] | None) -> str:
    out = [_manifest_line(manifest, other[0] if other else None)]
    budget = _Budget(max(BUDGET - len(out[0]), 0))
    paths = sorted(files)
    for index, path in enumerate(paths):
        lines = files[path].splitlines()
        if other is None:
            out += _head_view(path, lines, budget, len(paths) - index)
        elif path not in other[1]:
            out += _changed_view(path, lines, [], budget)
        elif files[path] == other[1][path]:
            out.append(f"--- {path} ({_lines(len(lines))}; as in the other version) ---")
        else:
            out += _changed_view(path, lines, other[1][path].splitlines(), budget)
    if other is not None:
        gone = sorted(set(other[1]) - set(files))
        out += [f"--- {path}: not in this version ---" for path in gone]
    return "\n".join(out)


def compact_pair(chosen: str, rejected: str) -> tuple[str, str]:
    """Both sides of a pair, each showing where it differs from the other."""
    a, b = _bundle(chosen), _bundle(rejected)
    return _view(*a, b), _view(*b, a)


def compact_version(completion: str, parent: str | None) -> str:
    """One version: its change against its parent's completion, or (``parent`` None) the head
    of each of its files."""
    return _view(*_bundle(completion), _bundle(parent) if parent is not None else None)
