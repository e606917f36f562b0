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
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate

import orjson

CONTEXT_LINES = 3
BUDGET = 1_800  # characters of the manifest line and file lines per completion
ALWAYS_SHOWN = ("name", "description")

# A file's lines against the other side's, one byte a line: 1 where the other side has the line
# somewhere, 0 where it does not (an unshared line). Stretches, counts and positions of unshared
# lines are then searches of bytes, in C. (Lists of unshared line numbers, walked in Python,
# made views cost twice as much.)
SHARED, UNSHARED = 1, 0
# Shared lines enough that the contexts of the unshared lines either side do not touch.
_GAP = bytes([SHARED]) * (2 * CONTEXT_LINES + 1)


def _lines(count: int, adjective: str = "") -> str:
    """ "1 line", "3 more lines" (``adjective`` "more")."""
    return f"{count} {adjective + ' ' if adjective else ''}line{'' if count == 1 else 's'}"


@dataclass(slots=True)
class BundleFile:
    """A file's lines, with what every view of it asks again and again worked out once.

    Tuples of strings and numbers, not lists: the garbage collector stops tracking them, and
    an export keeps thousands of parsed bundles alive while it allocates (its full collections
    took 0.2-0.3 s of the bench's 1M-rating export)."""

    lines: tuple[str, ...]
    # ends[i]: characters of lines[0..i - 1], each counted with its newline, as the budget
    # counts them: how many lines from ``start`` fit is one bisection, not a walk.
    ends: tuple[int, ...]
    header: str  # as a root shows it
    changed_header: str
    alike_header: str  # when the other side has it alike
    _members: frozenset[str] | None = field(default=None, repr=False)
    # The last changed view: the budget left and the mask it was for, what it showed after
    # the header (joined; None for nothing) and the budget it left. (Fields, not a tuple: one
    # object fewer for the garbage collector per view that misses.)
    last_left: int = field(default=-1, repr=False)
    last_mask: bytes = field(default=b"", repr=False)
    last_shown: str | None = field(default=None, repr=False)
    last_left_after: int = field(default=0, repr=False)

    @classmethod
    def of(cls, path: str, text: str) -> BundleFile:
        lines = tuple(text.splitlines())
        count = _lines(len(lines))
        return cls(
            lines,
            tuple(accumulate((len(line) + 1 for line in lines), initial=0)),
            f"--- {path} ({count}) ---",
            f"--- {path} ({count}; changed) ---",
            f"--- {path} ({count}; as in the other version) ---",
        )

    @property
    def members(self) -> frozenset[str]:
        """The file's distinct lines (built on first use, then shared by every pair)."""
        if self._members is None:
            self._members = frozenset(self.lines)
        return self._members

    def fit(self, start: int, end: int, characters: int) -> int:
        """Where lines from ``start`` (up to ``end``) stop fitting in ``characters``."""
        return bisect.bisect_right(self.ends, self.ends[start] + characters, start + 1, end + 1) - 1


@dataclass(slots=True)
class ParsedBundle:
    """A completion (the bundle's canonical JSON) read once: its manifest and files (in path
    order, as every view lists them). An export parses each version once and builds every view
    it appears in from this. Views keep what they would repeat on the bundle (its last manifest
    line, each file's last changed view), so a bundle's views are built on one thread at a time
    (the export builds them all on the thread that writes text rows)."""

    manifest: dict
    files: dict[str, BundleFile]
    size: int  # about the bytes it holds (``parse``), what a cache of them counts
    # The last manifest line and the keys it shows: a version shows the same keys against
    # most others, so the line is serialized once.
    manifest_shown: tuple[str, ...] | None = field(default=None, repr=False)
    manifest_line: str = field(default="", repr=False)


# What a parsed bundle holds besides its characters, in bytes: per line its string object, its
# slot and its end offset, and its share of the distinct lines a comparison builds; per file
# its record and headers; per character of its manifest's JSON, the dicts and strings read
# from it; per bundle its record. Measured with tracemalloc on bundles of 2 files of 20 short
# lines and of 6 files of 70 (tests/unit/test_reward_export_compact.py): the sum is within 20%
# of what they hold, where their characters alone were a seventh and a third of it.
_HELD_PER_LINE, _HELD_PER_FILE, _HELD_PER_MANIFEST_CHAR, _HELD_PER_BUNDLE = 120, 384, 6, 256


def parse(completion: str) -> ParsedBundle:
    bundle = orjson.loads(completion)
    files = {path: BundleFile.of(path, text) for path, text in sorted(bundle["files"].items())}
    lines = sum(len(file.lines) for file in files.values())
    held = (
        len(completion)
        + _HELD_PER_LINE * lines
        + _HELD_PER_FILE * len(files)
        + _HELD_PER_MANIFEST_CHAR * len(orjson.dumps(bundle["manifest"]))
        + _HELD_PER_BUNDLE
    )
    return ParsedBundle(bundle["manifest"], files, held)


def _manifest_line(mine: ParsedBundle, other: ParsedBundle | None) -> str:
    """The app's name and description, and every other key whose value differs from the other
    side's (all of them without one)."""
    manifest = mine.manifest
    if other is None:
        shown = tuple(manifest)
    else:
        theirs = other.manifest
        shown = tuple(
            [
                key
                for key, value in manifest.items()
                if key in ALWAYS_SHOWN or theirs.get(key) != value
            ]
        )
    if mine.manifest_shown != shown:
        values = {key: manifest[key] for key in shown}
        line = "manifest.json: " + orjson.dumps(values, option=orjson.OPT_SORT_KEYS).decode()
        mine.manifest_shown, mine.manifest_line = shown, line
    return mine.manifest_line


def _stretches(mask: bytes) -> Iterator[tuple[int, int]]:
    """(first, last + 1) of each stretch of unshared lines in ``mask``: unshared lines whose
    contexts touch (fewer than ``_GAP`` shared lines between them) are one stretch."""
    first = mask.find(UNSHARED)
    while first >= 0:
        gap = mask.find(_GAP, first)
        if gap < 0:
            yield first, mask.rfind(UNSHARED) + 1
            return
        yield first, mask.rfind(UNSHARED, first, gap) + 1
        first = mask.find(UNSHARED, gap)


def _changed_view(file: BundleFile, other: BundleFile | None, left: int, out: list[str]) -> int:
    """Appends to ``out`` a file's unshared lines (against ``other``, the other side's file of
    that path, if any), each with ``CONTEXT_LINES`` lines around it (overlapping stretches
    merged); the runs of shared lines between them as markers. Stops at the budget (``left``
    characters), counting the unshared lines it did not reach. Returns what is left."""
    out.append(file.changed_header)
    if other is None:
        mask = bytes(len(file.lines))
    else:
        mask = bytes(map(other.members.__contains__, file.lines))
    # What is shown depends only on the mask and the budget left. A version's file is often
    # as far from every other side it meets (a rewritten file, a template's lines), and
    # then its views repeat: the last one is kept.
    if file.last_left == left and file.last_mask == mask:
        if file.last_shown is not None:
            out.append(file.last_shown)
        return file.last_left_after
    begin = len(out)
    after = _unshared_lines(file, mask, left, out)
    file.last_left, file.last_mask, file.last_left_after = left, mask, after
    file.last_shown = "\n".join(out[begin:]) if len(out) > begin else None
    return after


def _unshared_lines(file: BundleFile, mask: bytes, left: int, out: list[str]) -> int:
    """The body of :func:`_changed_view`, for the unshared lines of ``mask``."""
    lines, n = file.lines, len(file.lines)
    # With no unshared line (only lines taken out), the file's last lines are the context.
    stretches = _stretches(mask) if UNSHARED in mask else [(n - 1, n)]
    position = 0
    for first, stop in stretches:
        start = max(position, first - CONTEXT_LINES)
        end = min(n, stop + CONTEXT_LINES)
        if start > position:
            out.append(f"⋯ {_lines(start - position)} as in the other version ⋯")
        fit = file.fit(start, end, left)
        left -= file.ends[fit] - file.ends[start]
        out += lines[start:fit]
        if fit < end:
            out.append(f"⋯ {_lines(mask.count(UNSHARED, fit), 'more changed')} not shown ⋯")
            return left
        position = end
    if position < n:
        out.append(f"⋯ {_lines(n - position)} as in the other version ⋯")
    return left


def _head_view(file: BundleFile, left: int, files_left: int, out: list[str]) -> int:
    """Appends to ``out`` a file's first lines, within its share of the ``left`` characters of
    the budget. Returns what is left."""
    n = len(file.lines)
    fit = file.fit(0, n, left // max(files_left, 1))
    out.append(file.header)
    out += file.lines[:fit]
    if fit < n:
        out.append(f"⋯ {_lines(n - fit, 'more')} ⋯")
    return left - file.ends[fit]


def _view(mine: ParsedBundle, other: ParsedBundle | None) -> str:
    """One side's view: against the other side (its manifest, and per file of this side: alike
    or changed), or alone (a root)."""
    out = [_manifest_line(mine, other)]
    left = max(BUDGET - len(out[0]), 0)
    if other is None:
        for index, file in enumerate(mine.files.values()):
            left = _head_view(file, left, len(mine.files) - index, out)
        return "\n".join(out)
    theirs = other.files
    for path, file in mine.files.items():
        their = theirs.get(path)
        if their is not None and file.lines == their.lines:
            out.append(file.alike_header)
        else:
            left = _changed_view(file, their, left, out)
    if not mine.files.keys() >= theirs.keys():
        gone = sorted(theirs.keys() - mine.files.keys())
        out += [f"--- {path}: not in this version ---" for path in gone]
    return "\n".join(out)


def pair_views(chosen: ParsedBundle, rejected: ParsedBundle) -> tuple[str, str]:
    """Both sides of a pair, each showing where it differs from the other."""
    return _view(chosen, rejected), _view(rejected, chosen)


def version_view(bundle: ParsedBundle, parent: ParsedBundle | None) -> str:
    """One version: its change against its parent, or (``parent`` None) the head of each of
    its files."""
    return _view(bundle, parent)


def compact_pair(chosen: str, rejected: str) -> tuple[str, str]:
    """:func:`pair_views` of two completions."""
    return pair_views(parse(chosen), parse(rejected))


def compact_version(completion: str, parent: str | None) -> str:
    """:func:`version_view` of a completion and its parent's (or None)."""
    return version_view(parse(completion), parse(parent) if parent is not None else None)
