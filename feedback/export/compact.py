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
import operator
from dataclasses import dataclass, field
from itertools import accumulate, compress

import orjson

CONTEXT_LINES = 3
BUDGET = 1_800  # characters of the manifest line and file lines per completion
ALWAYS_SHOWN = ("name", "description")


@dataclass(slots=True)
class BundleFile:
    """A file's lines, with what every view of it asks again and again worked out once."""

    lines: list[str]
    # ends[i]: characters of lines[0..i], each counted with its newline, as the budget counts
    # them: how many lines from ``start`` fit is one bisection, not a walk.
    ends: list[int]
    _members: frozenset[str] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, text: str) -> BundleFile:
        lines = text.splitlines()
        return cls(lines, list(accumulate(len(line) + 1 for line in lines)))

    @property
    def members(self) -> frozenset[str]:
        """The file's distinct lines (built on first use, then shared by every pair)."""
        if self._members is None:
            self._members = frozenset(self.lines)
        return self._members

    def cost(self, start: int, end: int) -> int:
        """What lines ``start``..``end - 1`` cost the budget."""
        if end <= start:
            return 0
        return self.ends[end - 1] - (self.ends[start - 1] if start else 0)


@dataclass(slots=True)
class ParsedBundle:
    """A completion (the bundle's canonical JSON) read once: its manifest and files. An export
    parses each version once and builds every view it appears in from this."""

    manifest: dict
    files: dict[str, BundleFile]
    size: int  # characters of the completion it was read from


def parse(completion: str) -> ParsedBundle:
    bundle = orjson.loads(completion)
    files = {path: BundleFile.of(text) for path, text in bundle["files"].items()}
    return ParsedBundle(bundle["manifest"], files, len(completion))


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

    def take(self, file: BundleFile, start: int, end: int) -> tuple[list[str], int]:
        """As many of ``file``'s lines ``start``..``end - 1`` as fit, and how many did not."""
        base = file.ends[start - 1] if start else 0
        fit = bisect.bisect_right(file.ends, base + self.left, start, end)  # ≥ start
        self.left -= file.cost(start, fit)
        return file.lines[start:fit], end - fit


def _unshared(mine: BundleFile, other: BundleFile | None) -> list[int]:
    """Indices of ``mine``'s lines that ``other`` does not have anywhere. (Not a line diff: a
    line moved within the file counts as shared. A diff's longest-common-subsequence search
    cost about a millisecond per pair of bundles; this is one set.)"""
    if other is None:
        return list(range(len(mine.lines)))
    # compress/map keep the per-line loop in C: views are built for every exported pair.
    absent = map(operator.not_, map(other.members.__contains__, mine.lines))
    return list(compress(range(len(mine.lines)), absent))


def _changed_view(path: str, mine: BundleFile, unshared: list[int], budget: _Budget) -> list[str]:
    """A file's ``unshared`` lines, each with ``CONTEXT_LINES`` lines around it (overlapping
    stretches merged); the runs of shared lines between them as markers. Stops at the budget,
    counting the unshared lines it did not reach."""
    n = len(mine.lines)
    out = [f"--- {path} ({_lines(n)}; changed) ---"]
    # With no unshared line (only lines taken out), the file's last lines are the context.
    anchors = unshared or [n - 1]
    # Anchors whose context touches the previous one's join its stretch: a stretch ends where
    # the next anchor is further than both contexts (found in C, as in _unshared).
    gaps = map(operator.sub, anchors[1:], anchors)
    ends = list(compress(range(1, len(anchors)), map((2 * CONTEXT_LINES + 1).__lt__, gaps)))
    position = 0
    for first, stop in zip([0, *ends], [*ends, len(anchors)], strict=True):
        start = max(position, anchors[first] - CONTEXT_LINES)
        end = min(n, anchors[stop - 1] + CONTEXT_LINES + 1)
        if start > position:
            out.append(f"⋯ {_lines(start - position)} as in the other version ⋯")
        shown, left_out = budget.take(mine, start, end)
        out += shown
        if left_out:
            missed = len(unshared) - bisect.bisect_left(unshared, start + len(shown))
            out.append(f"⋯ {_lines(missed, 'more changed')} not shown ⋯")
            return out
        position = end
    if position < n:
        out.append(f"⋯ {_lines(n - position)} as in the other version ⋯")
    return out


def _head_view(path: str, file: BundleFile, budget: _Budget, files_left: int) -> list[str]:
    """A file's first lines, within its share of what is left of the budget."""
    share = _Budget(budget.left // max(files_left, 1))
    shown, left_out = share.take(file, 0, len(file.lines))
    budget.left -= file.cost(0, len(shown))
    out = [f"--- {path} ({_lines(len(file.lines))}) ---", *shown]
    if left_out:
        out.append(f"⋯ {_lines(left_out, 'more')} ⋯")
    return out


Changes = dict[str, list[int]]  # path → this side's lines the other side does not have


def _view(mine: ParsedBundle, other: ParsedBundle | None, changes: Changes | None) -> str:
    """One side's view: against the other side (its manifest and files, and this side's
    unshared lines per file that differs), or alone (a root)."""
    out = [_manifest_line(mine.manifest, other.manifest if other else None)]
    budget = _Budget(max(BUDGET - len(out[0]), 0))
    paths = sorted(mine.files)
    for index, path in enumerate(paths):
        file = mine.files[path]
        if other is None:
            out += _head_view(path, file, budget, len(paths) - index)
        elif path in changes:
            out += _changed_view(path, file, changes[path], budget)
        else:
            out.append(f"--- {path} ({_lines(len(file.lines))}; as in the other version) ---")
    if other is not None:
        gone = sorted(set(other.files) - set(mine.files))
        out += [f"--- {path}: not in this version ---" for path in gone]
    return "\n".join(out)


def _changes(mine: ParsedBundle, theirs: ParsedBundle) -> Changes:
    """Per file of ``mine`` that ``theirs`` does not have alike, its unshared lines."""
    changes = {}
    for path, file in mine.files.items():
        other = theirs.files.get(path)
        if other is None or file.lines != other.lines:
            changes[path] = _unshared(file, other)
    return changes


def pair_views(chosen: ParsedBundle, rejected: ParsedBundle) -> tuple[str, str]:
    """Both sides of a pair, each showing where it differs from the other."""
    return (
        _view(chosen, rejected, _changes(chosen, rejected)),
        _view(rejected, chosen, _changes(rejected, chosen)),
    )


def version_view(bundle: ParsedBundle, parent: ParsedBundle | None) -> str:
    """One version: its change against its parent, or (``parent`` None) the head of each of
    its files."""
    if parent is None:
        return _view(bundle, None, None)
    return _view(bundle, parent, _changes(bundle, parent))


def compact_pair(chosen: str, rejected: str) -> tuple[str, str]:
    """:func:`pair_views` of two completions."""
    return pair_views(parse(chosen), parse(rejected))


def compact_version(completion: str, parent: str | None) -> str:
    """:func:`version_view` of a completion and its parent's (or None)."""
    return version_view(parse(completion), parse(parent) if parent is not None else None)
