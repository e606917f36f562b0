"""The relevance benchmark's labelled requests and its metrics, pure (no app, no database).

A result list is judged by the root FAMILY of each sub-agent in it, and a family counts once:
the first time it appears. A later sub-agent of the same family gains nothing, so a page of
five near-identical forks of one family scores like a page with that family once and four
misses — a list must offer different families to score well.

    Recall@k  = |fitting families (grade ≥ 1) among the first k| / min(k, |fitting families|)
    nDCG@k    = Σ_i gain_i / log2(i + 1) over the first k, gain = 2^grade − 1 for a family's
                first appearance and 0 otherwise, divided by the same sum for the labels'
                best order
    RR        = 1 / the rank of the first result of a fitting family within the first
                ``depth`` (10), 0 if there is none; MRR is its mean

These are only defined for requests where something fits. Requests where nothing fits score
the abstain verdict instead: a system abstains when it says "none" (a system with a verdict)
or returns nothing (one without).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

LANGUAGES = ("en", "zh", "ja", "ko", "es")
SPLITS = ("tune", "holdout")
GRADES = (1, 2)  # related, fits
VERDICTS = ("fits", "weak", "none")
K = 5
RR_DEPTH = 10


@dataclass(frozen=True)
class Request:
    """One labelled request: ``fits`` maps a root family key to its grade (1 or 2)."""

    id: str
    lang: str
    text: str
    split: str
    fits: Mapping[str, int] = field(default_factory=dict)
    gloss: str | None = None
    cross: bool = False

    @property
    def has_fit(self) -> bool:
        return bool(self.fits)


class LabelError(ValueError):
    """The labelled file is malformed: which request, and what is wrong with it."""


def parse_requests(text: str, families: Iterable[str] | None = None) -> list[Request]:
    """The ``[[request]]`` tables of a labels file, checked; ``families`` (when given) are the
    root family keys a label may name."""
    known = set(families) if families is not None else None
    try:
        tables = tomllib.loads(text).get("request", [])
    except tomllib.TOMLDecodeError as error:
        raise LabelError(f"not valid TOML: {error}") from None
    requests, seen = [], set()
    for position, table in enumerate(tables, start=1):
        name = table.get("id") or f"request #{position}"
        missing = [key for key in ("id", "lang", "text", "split", "fits") if key not in table]
        if missing:
            raise LabelError(f"{name}: missing {', '.join(missing)}")
        if name in seen:
            raise LabelError(f"{name}: the id is used twice")
        seen.add(name)
        if table["lang"] not in LANGUAGES:
            raise LabelError(f"{name}: lang {table['lang']!r} is not one of {LANGUAGES}")
        if table["split"] not in SPLITS:
            raise LabelError(f"{name}: split {table['split']!r} is not one of {SPLITS}")
        if not str(table["text"]).strip():
            raise LabelError(f"{name}: the text is empty")
        fits = dict(table["fits"])
        for family, grade in fits.items():
            if grade not in GRADES:
                raise LabelError(f"{name}: grade {grade!r} of {family} is not 1 or 2")
            if known is not None and family not in known:
                raise LabelError(f"{name}: {family} is not a root family of the demo")
        requests.append(
            Request(
                id=name,
                lang=table["lang"],
                text=table["text"],
                split=table["split"],
                fits=fits,
                gloss=table.get("gloss"),
                cross=bool(table.get("cross", False)),
            )
        )
    if not requests:
        raise LabelError("no [[request]] tables")
    return requests


def only_listed_families(
    requests: Sequence[Request], listed: Iterable[str]
) -> tuple[list[Request], dict[str, list[str]]]:
    """The requests with every label of a family that has no listed sub-agent removed (no
    system can return it, so it would cap every score below 1), and what was removed by
    request id. A request left with no label is one where nothing listed fits."""
    listed = set(listed)
    kept, removed = [], {}
    for request in requests:
        unlisted = sorted(set(request.fits) - listed)
        if unlisted:
            removed[request.id] = unlisted
            fits = {f: g for f, g in request.fits.items() if f in listed}
            request = dataclasses.replace(request, fits=fits)
        kept.append(request)
    return kept, removed


# ---------------------------------------------------------------------------- rankings


def first_appearances(families: Sequence[str | None]) -> list[str | None]:
    """The families in order with every repeat (and every unknown) replaced by None."""
    seen: set[str] = set()
    once: list[str | None] = []
    for family in families:
        if family is None or family in seen:
            once.append(None)
        else:
            seen.add(family)
            once.append(family)
    return once


def recall_at(families: Sequence[str | None], fits: Mapping[str, int], k: int = K) -> float:
    wanted = {family for family, grade in fits.items() if grade >= 1}
    found = {family for family in first_appearances(families[:k]) if family in wanted}
    return len(found) / min(k, len(wanted))


def ndcg_at(families: Sequence[str | None], fits: Mapping[str, int], k: int = K) -> float:
    gains = [
        2 ** fits.get(family, 0) - 1 if family else 0 for family in first_appearances(families)
    ]
    ideal = sorted((2**grade - 1 for grade in fits.values()), reverse=True)
    return _dcg(gains[:k]) / _dcg(ideal[:k])


def _dcg(gains: Sequence[float]) -> float:
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def reciprocal_rank(
    families: Sequence[str | None], fits: Mapping[str, int], depth: int = RR_DEPTH
) -> float:
    for rank, family in enumerate(families[:depth], start=1):
        if family is not None and fits.get(family, 0) >= 1:
            return 1.0 / rank
    return 0.0


def request_metrics(families: Sequence[str | None], fits: Mapping[str, int]) -> dict[str, float]:
    """Recall@5, nDCG@5 and RR of one ranking of a request that has fits."""
    return {
        "recall_at_5": recall_at(families, fits),
        "ndcg_at_5": ndcg_at(families, fits),
        "rr": reciprocal_rank(families, fits),
    }


def mean_metrics(per_request: Sequence[Mapping[str, float]]) -> dict[str, float | int | None]:
    """The means over requests (None for an empty slice), and n."""
    if not per_request:
        return {"recall_at_5": None, "ndcg_at_5": None, "mrr": None, "n": 0}
    n = len(per_request)
    return {
        "recall_at_5": round(sum(m["recall_at_5"] for m in per_request) / n, 4),
        "ndcg_at_5": round(sum(m["ndcg_at_5"] for m in per_request) / n, 4),
        "mrr": round(sum(m["rr"] for m in per_request) / n, 4),
        "n": n,
    }


# ---------------------------------------------------------------------------- abstaining


def abstained(verdict: str | None, ids: Sequence[int]) -> bool:
    """A system with a verdict abstains by saying "none"; one without, by returning nothing."""
    if verdict is not None:
        return verdict == "none"
    return not ids


@dataclass(frozen=True)
class AbstainScore:
    abstained: int
    correct: int  # abstained where nothing fits
    no_fit: int  # requests where nothing fits
    wrong: int  # abstained where a grade-2 fit exists
    with_fit: int  # requests with a grade-2 fit

    @property
    def precision(self) -> float | None:
        return self.correct / self.abstained if self.abstained else None

    @property
    def recall(self) -> float | None:
        return self.correct / self.no_fit if self.no_fit else None

    @property
    def wrong_rate(self) -> float | None:
        return self.wrong / self.with_fit if self.with_fit else None

    def as_dict(self) -> dict[str, float | int | None]:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 4)

        return {
            "abstained": self.abstained,
            "precision": rounded(self.precision),
            "recall": rounded(self.recall),
            "no_fit": self.no_fit,
            "wrong_abstains": self.wrong,
            "wrong_abstain_rate": rounded(self.wrong_rate),
            "with_grade_2_fit": self.with_fit,
        }


def abstain_score(outcomes: Iterable[tuple[Request, bool]]) -> AbstainScore:
    """Precision and recall of abstaining over (request, abstained) pairs: precision is the
    share of abstentions where nothing fits, recall the share of no-fit requests abstained
    on; also how many requests with a grade-2 fit were wrongly abstained on."""
    abstentions = correct = no_fit = wrong = with_fit = 0
    for request, did_abstain in outcomes:
        perfect = any(grade == 2 for grade in request.fits.values())
        abstentions += did_abstain
        no_fit += not request.has_fit
        correct += did_abstain and not request.has_fit
        with_fit += perfect
        wrong += did_abstain and perfect
    return AbstainScore(abstentions, correct, no_fit, wrong, with_fit)
