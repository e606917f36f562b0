"""Near-identical listings in a list: show one card per tool, and spread the lineages.

A fork that only switches units or adds a reminder is, to someone scanning a list, the same
tool as the listing it came from; twenty of them on a page hide everything else. ``collapse``
groups such clones under their best-placed member, and ``spread_lineages`` keeps one family
from filling a page.

Two listings are clones when they are of the same fork family (same root), written in the same
script, and either their titles name the same tool or their texts are nearly the same:

* The tool a title names is the title before its qualifier ("Water Tracker — oz",
  "喝水记录（中文版）", "シンプル家計簿・CSV出力"), folded (NFKC, case, punctuation). Forks
  that change a setting keep the tool's name and qualify it; a fork that became another tool
  takes another name ("Guitar Practice Timer" from a piano timer).
* Text: title and summary as sets of character trigrams, Jaccard ≥ ``TEXT_JACCARD``. On the
  demo community, the most similar listings of one family that name different tools reach
  0.68 (Whisky Journal and Sake Journal, whose summaries share a template), so 0.75 only joins
  texts that say the same thing under different names.

A translation is in another script, so never a clone of the original, but two identical
translations are clones of each other. Latin-script translations (Spanish) name another tool
and share few trigrams with the English: they stay apart too.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Generic, Protocol, TypeVar

from evolution.text_index import script_of

TEXT_JACCARD = 0.75

# What starts a title's qualifier: a spaced dash, an opening bracket, a colon, a bar, or the
# Japanese middle dot. A hyphen inside a word ("Check-in") is not one.
_QUALIFIER = re.compile(r"\s+[—–-]\s+|[(（\[【:：|｜・]")
_NOT_WORD = re.compile(r"[\W_]+")


class Listing(Protocol):
    @property
    def root_id(self) -> Hashable: ...

    @property
    def title(self) -> str: ...

    @property
    def summary(self) -> str: ...


L = TypeVar("L", bound=Listing)


@dataclass
class Group(Generic[L]):
    """A card of a collapsed list: the representative, shown where it stood, and its clones
    that followed it in the list (``members``, in their order)."""

    representative: L
    members: list[L] = field(default_factory=list)


class _Signature:
    """What comparing a listing needs; its text's trigrams are read only when a comparison
    gets that far (``_texts_alike``)."""

    __slots__ = ("family", "script", "text", "tool")

    def __init__(self, item: Listing):
        self.family = item.root_id
        self.text, self.script, self.tool = _described(item.title, item.summary)


def tool_name(title: str) -> str:
    """The tool a title names: the text before its qualifier, folded for comparison."""
    folded = unicodedata.normalize("NFKC", title).casefold().strip()
    head = _QUALIFIER.split(folded, maxsplit=1)[0]
    return _NOT_WORD.sub("", head) or _NOT_WORD.sub("", folded)


def trigrams(text: str) -> frozenset[str]:
    folded = _NOT_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    if len(folded) < 3:
        return frozenset([folded]) if folded else frozenset()
    return frozenset(folded[i : i + 3] for i in range(len(folded) - 2))


# Lists show the same listings request after request: their text, script and tool name are
# kept for this many listings, so collapsing a page of 300 reads mostly from here.
@lru_cache(maxsize=50_000)
def _described(title: str, summary: str) -> tuple[str, str, str]:
    text = f"{title} {summary}"
    return text, script_of(text), tool_name(title)


# A text's trigram set is about 5 KB (50,000 of them held 260 MB) and is read only for a pair of
# texts not decided yet (``_texts_alike`` keeps the answers). Building one costs about 30 us:
# over 200,000 listings in diverse search lists (bench/collapse.py) 16,384 sets collapse as fast
# as 50,000 did without the kept answers, in a third of the memory; 4,096 were 15% slower.
@lru_cache(maxsize=16_384)
def _cached_trigrams(text: str) -> frozenset[str]:
    return trigrams(text)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return shared / union if union else 1.0


# Most comparisons of a list are between listings of one family that name different tools, and
# the same listings meet again in the next search's list: the answer for a pair of texts is
# kept (about 10 MB full, and the texts it holds). Warm, a list of 300 collapses 4-5x faster.
@lru_cache(maxsize=65_536)
def _texts_alike(first: str, second: str) -> bool:
    a, b = _cached_trigrams(first), _cached_trigrams(second)
    small, large = sorted((len(a), len(b)))
    # |A ∩ B| ≤ |smaller| and |A ∪ B| ≥ |larger|: sizes this far apart cannot reach the bar.
    if small < TEXT_JACCARD * large:
        return False
    return _jaccard(a, b) >= TEXT_JACCARD


def _clones(a: _Signature, b: _Signature) -> bool:
    if a.family != b.family or a.script != b.script:
        return False
    if a.tool == b.tool:
        return True
    # One order for a pair, so that (b, a) finds what (a, b) left.
    return _texts_alike(a.text, b.text) if a.text <= b.text else _texts_alike(b.text, a.text)


def are_clones(a: Listing, b: Listing) -> bool:
    return _clones(_Signature(a), _Signature(b))


def collapse(items: Sequence[L]) -> list[Group[L]]:
    """Groups of clones, in the order of their first member (``items`` come best first).

    Each item joins the first group whose representative it is a clone of, so a group is
    anchored on what it shows, and a chain of small changes never drifts into another tool.
    """
    return _collapse(items, None)[0]


def first_groups(items: Sequence[L], count: int) -> tuple[list[Group[L]], bool]:
    """The first ``count`` groups of ``collapse(items)``, members and all, and whether it has
    more: what a page of a list that is not reordered afterwards shows.

    An item tries the groups in their order, so no group after the first ``count`` can take
    an item from them: they are formed alone, and an item that is a clone of none of them is
    compared no further. In a search whose matches crowd into one family of many tools, each
    item is then compared with at most ``count`` of that family's groups, not with all."""
    return _collapse(items, count)


def _collapse(items: Sequence[L], count: int | None) -> tuple[list[Group[L]], bool]:
    groups: list[Group[L]] = []
    by_family: dict[Hashable, list[tuple[_Signature, Group[L]]]] = {}
    more = False
    for item in items:
        signature = _Signature(item)
        candidates = by_family.setdefault(signature.family, [])
        for shown, group in candidates:
            if _clones(signature, shown):
                group.members.append(item)
                break
        else:
            if count is not None and len(groups) >= count:
                more = True
                continue
            group = Group(representative=item)
            groups.append(group)
            candidates.append((signature, group))
    return groups, more


def spread_lineages(groups: Sequence[Group[L]], *, window: int, per_lineage: int) -> list[Group[L]]:
    """``groups`` reordered so that any ``window`` consecutive ones hold at most
    ``per_lineage`` of one family, as long as another family is left to show.

    Position by position, the first remaining group whose family is under its share of the
    previous ``window - 1`` places is taken; when only families at their share remain, the
    first remaining one is. The others wait, in their order, for the next places. The result
    depends only on ``groups``, so pages cut from it by offset neither repeat nor skip.
    """
    remaining = list(groups)
    recent: deque[Hashable] = deque()
    in_window: Counter[Hashable] = Counter()
    spread: list[Group[L]] = []
    while remaining:
        index = next(
            (
                i
                for i, group in enumerate(remaining)
                if in_window[group.representative.root_id] < per_lineage
            ),
            0,
        )
        group = remaining.pop(index)
        spread.append(group)
        family = group.representative.root_id
        recent.append(family)
        in_window[family] += 1
        if len(recent) >= window:
            in_window[recent.popleft()] -= 1
    return spread
