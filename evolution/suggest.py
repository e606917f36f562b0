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

    score = min(logit(p), 5) + c + 2 · [names it]
            + w_q · tanh(L / 2) + w_e · sd · [young] + w_u · ln(1 + active users)

    min(logit(p), 5)             the fit's log-odds, up to p = 0.993: below, a likelier fit
                                 ranks higher; above, both surely fit and closer wording says
                                 little ("Water tracker that …" in a fork's summary echoes a
                                 request more than the original's own story does);
    c                            the share of the request's words the listing covers: "allergic
                                 to peanuts" is covered by the peanut-free planner, not by the
                                 no-shellfish one, though both surely fit "a meal planner";
    [names it]                   the request is the listing's title: who types "Water Tracker"
                                 means the Water Tracker;
    L  = mean − 1.64 · sd       the ranking's one-sided 95% lower bound of quality (its
                                 "display" score, in standard rating units; see
                                 evolution.ranking), so a base climbs by being good and by
                                 being known to be good; tanh(L / 2) = 2σ(L) − 1 squashes it
                                 into (−1, 1), so quality moves the odds by a factor of at most
                                 e^±w_q (w_q = 0.5: ×1.6) and never lifts an unlikely fit;
    sd · [young]                 exploration: a young fork (its own ratings worth under 10
                                 typical ones) gets a bonus in proportion to how little is
                                 known, so new branches get tried as bases too (w_e = 0.35);
    ln(1 + active users)         use: the ranking's decayed count of distinct users (w_u = 0.2:
                                 a hundred users are worth e^0.92 ≈ 2.5 times the odds).

The weights were chosen on the tune split (``bench/relevance.py``): Recall@5 and nDCG@5 hardly
move between 0.5 and 1 for w_q, with the cap at 2–5 or none, and with w_u up to 0.2; they
degrade at w_q = 2 and w_u = 0.4, where quality and use start to beat relevance. Within a
family the labels cannot tell branches apart; the cap, coverage and name terms are there
for that, and the functional tests show them.

Suggestions then show **families, not clones**: each fork tree is led by its best-scored
member (or by its member in the viewer's writing system when that scores within
``LOCALE_MARGIN`` of the best, since it saves a translation), and its j-th further member
ranks as if it scored ``FAMILY_STEP`` · j lower: a page of five near-identical forks tells
a coding agent less than five different starting points, but a second branch that fits far
better than another family's best still shows before it. The order is deterministic (ties by
id), so a coding agent that asks twice gets the same answer.

Also here: what changed in a candidate's forks that its users liked better
(:func:`improving_changes`), from comparisons made by :func:`compare_bundles`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from evolution.text_index import Match

QUALITY_WEIGHT = 0.5  # log-odds, like the rest of the score
EXPLORATION_WEIGHT = 0.35
USAGE_WEIGHT = 0.2
FIT_CAP = 5.0
COVERAGE_WEIGHT = 1.0
NAME_WEIGHT = 2.0
LOWER_BOUND_Z = 1.64
LOCALE_MARGIN = 0.5  # log-odds
FAMILY_STEP = 2.0  # log-odds
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


FIT_MODEL = FitModel(bias=-4.32, relevance=-0.10, words=25.71, coverage=-1.21, cross_script=0.65)
ABSTAIN_MODEL = AbstainModel(bias=-2.29, fit=7.13, coverage=2.88)
FITS_AT = 0.5
SOMETHING_FITS_AT = 0.51
LIST_FLOOR = 0.05


@dataclass(frozen=True)
class Quality:
    """The ranking's belief about a sub-agent (a ``subagent_score`` row)."""

    mean: float = 0.0
    sd: float = 1.0
    young: bool = True
    rating_count: int = 0
    ranked: bool = False  # False: no ranking row yet, the prior above stands in
    active_users: float = 0.0  # distinct users, each decayed by a 30-day half-life

    @property
    def lower_bound(self) -> float:
        return self.mean - LOWER_BOUND_Z * self.sd


UNRANKED = Quality()


def suggestion_score(
    fit: float, quality: Quality, coverage: float = 1.0, names_it: bool = False
) -> float:
    """The score of the module docstring."""
    fit = min(max(fit, 1e-9), 1.0 - 1e-9)
    return (
        min(math.log(fit / (1.0 - fit)), FIT_CAP)
        + COVERAGE_WEIGHT * coverage
        + (NAME_WEIGHT if names_it else 0.0)
        + QUALITY_WEIGHT * math.tanh(quality.lower_bound / 2.0)
        + (EXPLORATION_WEIGHT * quality.sd if quality.young else 0.0)
        + USAGE_WEIGHT * math.log1p(quality.active_users)
    )


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


def fits_of(
    matches: Sequence[Match], query_script: str, fit_model: FitModel = FIT_MODEL
) -> list[float]:
    """P(fits) of each match, in order: computed once, read by the list and the verdict."""
    return [fit_model.probability(match, query_script) for match in matches]


def best_candidate(
    matches: Sequence[Match],
    query_script: str,
    fit_model: FitModel = FIT_MODEL,
    fits: Sequence[float] | None = None,
) -> tuple[float, float]:
    """(p, coverage) of the candidate most likely to fit; (0, 0) without candidates.
    ``fits``: the matches' probabilities, when already computed (``fits_of``)."""
    if fits is None:
        fits = fits_of(matches, query_script, fit_model)
    best = (0.0, 0.0)
    for match, fit in zip(matches, fits, strict=True):
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
    fits: Sequence[float] | None = None,
) -> list[RankedSuggestion]:
    """Every candidate whose P(fits) reaches ``floor`` (``LIST_FLOOR``), by score (ties:
    lower id first). ``fits``: the matches' probabilities, when already computed."""
    floor = LIST_FLOOR if floor is None else floor
    if fits is None:
        fits = fits_of(matches, query_script, fit_model)
    ranked = []
    for match, fit in zip(matches, fits, strict=True):
        if fit < floor:
            continue
        quality = qualities.get(match.subagent_id, UNRANKED)
        ranked.append(
            RankedSuggestion(
                match.subagent_id,
                match.relevance,
                fit,
                quality,
                suggestion_score(fit, quality, match.coverage, match.names_it),
                match.root_id or match.subagent_id,
                match.script,
            )
        )
    ranked.sort(key=lambda s: (-s.score, s.subagent_id))
    return ranked


def spread_families(
    ranked: Sequence[RankedSuggestion], *, k: int, locale_script: str | None = None
) -> list[RankedSuggestion]:
    """The first ``k`` of ``ranked`` (best first) with each family's further members held
    back: the j-th after a family's leader ranks as if its score were ``FAMILY_STEP`` · j
    lower. The leader is the family's best, or its best in the viewer's script when that
    scores within ``LOCALE_MARGIN`` of the best."""
    families: dict[int, list[RankedSuggestion]] = {}
    for item in ranked:
        families.setdefault(item.root_id, []).append(item)
    position = {id(item): i for i, item in enumerate(ranked)}
    placed = []
    for members in families.values():
        leader = members[0]
        if locale_script is not None and leader.script != locale_script:
            leader = next(
                (
                    m
                    for m in members[1:]
                    if m.script == locale_script and m.score >= leader.score - LOCALE_MARGIN
                ),
                leader,
            )
        others = [m for m in members if m is not leader]
        placed.append((leader.score, position[id(leader)], leader))
        for j, member in enumerate(others, start=1):
            placed.append((member.score - FAMILY_STEP * j, position[id(member)], member))
    placed.sort(key=lambda entry: (-entry[0], entry[1]))
    return [item for _, _, item in placed[:k]]


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
    fits = fits_of(matches, query_script, fit_model)
    ranked = rank_matches(
        matches, qualities, query_script=query_script, fit_model=fit_model, fits=fits
    )
    best_fit, coverage = best_candidate(matches, query_script, fit_model, fits)
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
