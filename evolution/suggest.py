r"""Fork suggestions: which existing sub-agents a coding agent should start from, and
whether any fits at all.

A request ("a meal planner for a family of four, one child allergic to peanuts") is matched
against the catalog by :mod:`evolution.text_index` (relevance r = λ·cos(n-grams) + (1 − λ)·
cos(words), and the word half w alone). Each candidate then gets

    p = σ(b₀ + b_r · r + b_w · w + b_c · c + b_x · [written in another script than the request])

the probability that it fits (``FitModel``: a logistic regression fitted on the labelled
requests of ``bench/data/relevance_requests.toml`` by ``bench/relevance.py --fit``). c is the
share of the request's words the listing contains (a match on one common word, "记录", is
a weak one however close the cosine); the cross-script term lets a weaker match through a
dictionary count for what it is. p is what
is calibrated: the verdict and the floor read it, not the raw cosine, whose scale differs
between scripts and query lengths.

    verdict = "none"  when P(something fits) < ``SOMETHING_FITS_AT``, and no items —
                      write it from scratch;
              "fits"  otherwise, when the best p ≥ ``FITS_AT`` — fork one of these;
              "weak"  otherwise — related bases, a partial start.

P(something fits) (``AbstainModel``) reads the most likely candidate's p and how much of the
request it covers; it is fitted on requests, with its threshold chosen for abstain precision
≥ 0.8 at the highest recall (a wrong "none" makes a coding agent rewrite what exists).

Unless the verdict is "none", the candidates with p ≥ ``LIST_FLOOR`` (a low bar: a partial
start is still worth seeing once the verdict has said how good the best is) are ordered by one
score of relevance and quality,

    score = p · (1 + w_q · tanh(L / 2) + w_e · sd · [young])

    L  = mean − 1.64 · sd       the ranking's one-sided 95% lower bound of quality (its
                                 "display" score, in standard rating units; see
                                 evolution.ranking), so a base climbs by being good and by
                                 being known to be good;
    tanh(L / 2) = 2σ(L) − 1     squashes L into (−1, 1): quality scales the fit probability by
                                 at most ±w_q, so it reorders likely fits and never lifts an
                                 unlikely one over a likely one by much;
    sd · [young]                 exploration: a young fork (its own ratings worth under 10
                                 typical ones) gets a bonus in proportion to how little is
                                 known, so new branches get tried as bases too.

Suggestions then show **families, not clones**: the best-scored member of each fork tree
(the one in the viewer's writing system when it scores within ``LOCALE_MARGIN`` of the best,
since it saves a translation), families in score order; further members of a family only
after every family above the floor has its place. A page of five near-identical forks
tells a coding agent less than five different starting points. The order is deterministic
(ties by id), so a coding agent that asks twice gets the same answer.

Also here: what changed in a candidate's forks that its users liked better
(:func:`improving_changes`), from comparisons made by :func:`compare_bundles`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from evolution.text_index import Match

QUALITY_WEIGHT = 0.25
EXPLORATION_WEIGHT = 0.35
LOWER_BOUND_Z = 1.64
LOCALE_MARGIN = 0.15
VERDICTS = ("fits", "weak", "none")


@dataclass(frozen=True)
class FitModel:
    """P(fits) = σ(bias + relevance · r + words · w + coverage · c + cross_script · [other
    script])."""

    bias: float
    relevance: float
    words: float
    coverage: float
    cross_script: float

    def probability(self, match: Match, query_script: str) -> float:
        logit = (
            self.bias
            + self.relevance * match.relevance
            + self.words * match.word_relevance
            + self.coverage * match.coverage
            + (self.cross_script if match.script != query_script else 0.0)
        )
        return 1.0 / (1.0 + math.exp(-logit))


@dataclass(frozen=True)
class AbstainModel:
    """P(something in the catalog fits the request) = σ(bias + fit · p + coverage · c), from
    the candidate most likely to fit: a request-level question, so it is fitted on requests
    (those where nothing fits are the positives of abstaining), not on candidates."""

    bias: float
    fit: float
    coverage: float

    def probability(self, best_fit: float, coverage: float) -> float:
        logit = self.bias + self.fit * best_fit + self.coverage * coverage
        return 1.0 / (1.0 + math.exp(-logit))


FIT_MODEL = FitModel(bias=-4.33, relevance=-2.36, words=28.94, coverage=-1.40, cross_script=0.94)
ABSTAIN_MODEL = AbstainModel(bias=-2.45, fit=7.21, coverage=3.19)
FITS_AT = 0.5
SOMETHING_FITS_AT = 0.49
LIST_FLOOR = 0.05


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


def suggestion_score(fit: float, quality: Quality) -> float:
    """The score of the module docstring: the fit probability scaled by quality."""
    factor = (
        1.0
        + QUALITY_WEIGHT * math.tanh(quality.lower_bound / 2.0)
        + (EXPLORATION_WEIGHT * quality.sd if quality.young else 0.0)
    )
    return fit * factor


@dataclass(frozen=True)
class RankedSuggestion:
    subagent_id: int
    relevance: float
    fit: float  # P(fits), calibrated
    quality: Quality
    score: float
    root_id: int = 0
    script: str = "latin"


@dataclass(frozen=True)
class Ranking:
    items: list[RankedSuggestion]
    verdict: str  # one of VERDICTS
    best_fit: float  # the highest P(fits) among the candidates, 0 with none


def verdict_for(best_fit: float, coverage: float) -> str:
    """The verdict of the module docstring, from the most likely candidate."""
    if ABSTAIN_MODEL.probability(best_fit, coverage) < SOMETHING_FITS_AT:
        return "none"
    return "fits" if best_fit >= FITS_AT else "weak"


def best_candidate(
    matches: Sequence[Match], query_script: str, fit_model: FitModel = FIT_MODEL
) -> tuple[float, float]:
    """(p, coverage) of the candidate most likely to fit; (0, 0) without candidates."""
    best = (0.0, 0.0)
    for match in matches:
        fit = fit_model.probability(match, query_script)
        if fit > best[0]:
            best = (fit, match.coverage)
    return best


def rank_matches(
    matches: Sequence[Match],
    qualities: Mapping[int, Quality],
    *,
    query_script: str,
    fit_model: FitModel = FIT_MODEL,
    floor: float | None = None,
) -> list[RankedSuggestion]:
    """Every candidate whose P(fits) reaches ``floor`` (``LIST_FLOOR``), by score (ties:
    lower id first)."""
    floor = LIST_FLOOR if floor is None else floor
    ranked = []
    for match in matches:
        fit = fit_model.probability(match, query_script)
        if fit < floor:
            continue
        quality = qualities.get(match.subagent_id, UNRANKED)
        ranked.append(
            RankedSuggestion(
                match.subagent_id,
                match.relevance,
                fit,
                quality,
                suggestion_score(fit, quality),
                match.root_id or match.subagent_id,
                match.script,
            )
        )
    ranked.sort(key=lambda s: (-s.score, s.subagent_id))
    return ranked


def spread_families(
    ranked: Sequence[RankedSuggestion], *, k: int, locale_script: str | None = None
) -> list[RankedSuggestion]:
    """The first ``k`` of ``ranked`` (best first) with one member per family before any
    family's second: each family shown by its best member, or by its best member in the
    viewer's script when that scores within ``LOCALE_MARGIN`` of the best."""
    families: dict[int, list[RankedSuggestion]] = {}
    for item in ranked:
        families.setdefault(item.root_id, []).append(item)
    leaders, rest = [], []
    for members in families.values():
        leader = members[0]
        if locale_script is not None and leader.script != locale_script:
            for member in members[1:]:
                if member.script == locale_script and member.score >= leader.score * (
                    1 - LOCALE_MARGIN
                ):
                    leader = member
                    break
        leaders.append(leader)
        rest.extend(m for m in members if m is not leader)
    # Families in the order of their best member; the rest in their own order.
    position = {id(item): i for i, item in enumerate(ranked)}
    leaders.sort(key=lambda s: position[id(families[s.root_id][0])])
    rest.sort(key=lambda s: position[id(s)])
    return (leaders + rest)[:k]


def rank_suggestions(
    matches: Sequence[Match],
    qualities: Mapping[int, Quality],
    *,
    k: int,
    query_script: str,
    locale_script: str | None = None,
    fit_model: FitModel = FIT_MODEL,
) -> Ranking:
    """The ``k`` best bases among ``matches`` (any order), families first, and the verdict."""
    ranked = rank_matches(matches, qualities, query_script=query_script, fit_model=fit_model)
    best_fit, coverage = best_candidate(matches, query_script, fit_model)
    verdict = verdict_for(best_fit, coverage)
    items = [] if verdict == "none" else spread_families(ranked, k=k, locale_script=locale_script)
    return Ranking(items, verdict, best_fit)


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
