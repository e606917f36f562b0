r"""Fork suggestions: which existing sub-agents a coding agent should start from.

A request ("a meal planner for a family of four, one child allergic to peanuts") is matched
against the catalog by :mod:`evolution.text_index` (relevance r, a cosine in [0, 1]); the
candidates are then ordered by

    score = r · (1 + w_q · tanh(L / 2) + w_e · sd · [young] + w_l · [same script as locale])

    L  = mean − 1.64 · sd       the ranking's one-sided 95% lower bound of quality (its
                                 "display" score, in standard rating units; see
                                 evolution.ranking), so a base climbs by being good and by
                                 being known to be good;
    tanh(L / 2) = 2σ(L) − 1     squashes L into (−1, 1): quality can scale relevance by at
                                 most ±w_q, so it reorders relevant bases and never lifts an
                                 irrelevant one;
    sd · [young]                 exploration: a young fork (its own ratings worth under 10
                                 typical ones) gets a bonus in proportion to how little is
                                 known, so new branches get tried as bases too;
    [same script]                a base written in the user's writing system (zh, ja, ko or
                                 Latin, from the locale) saves the coding agent a translation.

    w_q = 0.5, w_e = 0.35, w_l = 0.1. With them a sub-agent nobody has rated (mean 0, sd 1,
    young: the ranking's prior) scores 1 + 0.5 · tanh(−0.82) + 0.35 ≈ 1.01 times its
    relevance — the same as an established sub-agent of exactly average quality — so a new
    branch is neither buried nor promoted over a proven good one (mean 1, sd 0.1: ×1.20).

Only candidates at least half as relevant as the best one are ranked (``RELEVANCE_FLOOR``): a
loved sub-agent about something else must not displace the one the request is about. The
order is deterministic (ties by id), so a coding agent that asks twice gets the same answer;
exploration is the bonus above, not a random draw.

Also here: what changed in a candidate's forks that its users liked better
(:func:`improving_changes`), from comparisons made by :func:`compare_bundles`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from evolution.text_index import Match

QUALITY_WEIGHT = 0.5
EXPLORATION_WEIGHT = 0.35
LOCALE_WEIGHT = 0.1
LOWER_BOUND_Z = 1.64
RELEVANCE_FLOOR = 0.5


@dataclass(frozen=True)
class Quality:
    """The ranking's belief about a sub-agent (a ``subagent_score`` row)."""

    mean: float = 0.0
    sd: float = 1.0
    young: bool = True
    rating_count: int = 0
    ranked: bool = False  # False: no ranking row yet, the prior above stands in

    @property
    def lower_bound(self) -> float:
        return self.mean - LOWER_BOUND_Z * self.sd


UNRANKED = Quality()


def suggestion_score(relevance: float, quality: Quality, same_script: bool = False) -> float:
    """The formula of the module docstring."""
    factor = (
        1.0
        + QUALITY_WEIGHT * math.tanh(quality.lower_bound / 2.0)
        + (EXPLORATION_WEIGHT * quality.sd if quality.young else 0.0)
        + (LOCALE_WEIGHT if same_script else 0.0)
    )
    return relevance * factor


@dataclass(frozen=True)
class RankedSuggestion:
    subagent_id: int
    relevance: float
    quality: Quality
    score: float


def rank_suggestions(
    matches: Sequence[Match],
    qualities: Mapping[int, Quality],
    *,
    k: int,
    locale_script: str | None = None,
    relevance_floor: float = RELEVANCE_FLOOR,
) -> list[RankedSuggestion]:
    """The ``k`` best bases among ``matches`` (any order), best first."""
    if not matches:
        return []
    best = max(m.relevance for m in matches)
    ranked = []
    for match in matches:
        if match.relevance < relevance_floor * best:
            continue
        quality = qualities.get(match.subagent_id, UNRANKED)
        same_script = locale_script is not None and match.script == locale_script
        score = suggestion_score(match.relevance, quality, same_script)
        ranked.append(RankedSuggestion(match.subagent_id, match.relevance, quality, score))
    ranked.sort(key=lambda s: (-s.score, s.subagent_id))
    return ranked[:k]


# ---------------------------------------------------------------------------- fork changes


@dataclass(frozen=True)
class BundleChange:
    """What a fork changed against the version it was forked from."""

    scopes_added: tuple[str, ...] = ()
    scopes_removed: tuple[str, ...] = ()
    hosts_added: tuple[str, ...] = ()
    hosts_removed: tuple[str, ...] = ()
    files_added: tuple[str, ...] = ()
    files_changed: tuple[str, ...] = ()
    files_removed: tuple[str, ...] = ()


def compare_bundles(
    parent_manifest: Mapping,
    parent_files: Mapping[str, str],
    child_manifest: Mapping,
    child_files: Mapping[str, str],
) -> BundleChange:
    """Permissions, hosts and file paths that a fork added, removed or changed (no line
    diffs: a coding agent deciding what to copy needs the shape of the change)."""

    def listed(manifest: Mapping, key: str) -> set[str]:
        return set(manifest.get(key) or ())

    def delta(key: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        before, after = listed(parent_manifest, key), listed(child_manifest, key)
        return tuple(sorted(after - before)), tuple(sorted(before - after))

    scopes_added, scopes_removed = delta("scopes")
    hosts_added, hosts_removed = delta("hosts")
    shared = child_files.keys() & parent_files.keys()
    return BundleChange(
        scopes_added=scopes_added,
        scopes_removed=scopes_removed,
        hosts_added=hosts_added,
        hosts_removed=hosts_removed,
        files_added=tuple(sorted(set(child_files) - set(parent_files))),
        files_changed=tuple(sorted(p for p in shared if child_files[p] != parent_files[p])),
        files_removed=tuple(sorted(set(parent_files) - set(child_files))),
    )


@dataclass(frozen=True)
class ForkOutcome:
    """A fork of a candidate, with its ranking and what it changed."""

    subagent_id: int
    title: str
    quality: Quality
    request: str = ""
    changelog: str = ""
    change: BundleChange = field(default_factory=BundleChange)


@dataclass(frozen=True)
class Improvement:
    fork: ForkOutcome
    improvement: float  # E[θ_fork] − E[θ_parent], standard rating units
    p_better: float  # P(θ_fork > θ_parent), treating the two beliefs as independent
    summary: str


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summarize_change(fork: ForkOutcome) -> str:
    """One line: what was asked, the changelog, permissions and files."""
    change = fork.change
    parts = []
    if fork.request:
        parts.append(f'asked "{_clip(fork.request, 140)}"')
    if fork.changelog:
        parts.append(f"changelog: {_clip(fork.changelog, 140)}")
    for sign, label, names in (
        ("+", "scope", change.scopes_added),
        ("−", "scope", change.scopes_removed),
        ("+", "host", change.hosts_added),
        ("−", "host", change.hosts_removed),
    ):
        if names:
            parts.append(f"{sign}{label} {', '.join(names)}")
    files = [
        *(f"+{p}" for p in change.files_added),
        *(f"~{p}" for p in change.files_changed),
        *(f"−{p}" for p in change.files_removed),
    ]
    if files:
        shown = ", ".join(files[:6]) + (f" (+{len(files) - 6} more)" if len(files) > 6 else "")
        parts.append(f"files {shown}")
    return "; ".join(parts) or "no visible change"


def improving_changes(
    parent: Quality, forks: Iterable[ForkOutcome], *, limit: int = 3, min_ratings: int = 1
) -> list[Improvement]:
    """Forks rated better than their parent, most improved first.

    A fork needs ratings of its own (``min_ratings``): without them its mean is only the
    lineage prior (the parent's belief plus the typical fork step) and says nothing about
    what its change did."""
    found = []
    for fork in forks:
        if fork.quality.rating_count < min_ratings:
            continue
        gain = fork.quality.mean - parent.mean
        if gain <= 0:
            continue
        spread = math.hypot(fork.quality.sd, parent.sd)
        p_better = 0.5 * (1.0 + math.erf(gain / (spread * math.sqrt(2.0)))) if spread else 1.0
        found.append(Improvement(fork, gain, p_better, summarize_change(fork)))
    found.sort(key=lambda i: (-i.improvement, i.fork.subagent_id))
    return found[:limit]
