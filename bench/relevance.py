"""Retrieval quality on labelled requests: Sprig's fork suggestions against BM25 and against the
retrieval code as it was at commit 09fe485, in the same run, on the demo community.

Loads the demo community (seed 7) into a fresh SQLite file, maps every listed sub-agent to its
root family (the key of ``market/demo/assets/roots/NN-<key>.json``), and runs every labelled
request (``bench/data/relevance_requests.toml``) through

* ``bm25`` (and ``bm25+gloss``, each request with its English gloss): BM25 (``bm25s``,
  Lucene's variant) over each listing's title ×3, tags ×2, summary ×2 and story (the text
  index's field weights), Latin text as lower-cased words without English stopwords,
  Chinese, Japanese and Korean runs as single characters and character pairs; the sub-agents
  with a positive score, best first;
* ``today``: ``evolution/text_index.py`` and ``evolution/suggest.py`` from commit 09fe485,
  loaded from git under other names, indexing the same listings the service indexes and
  ordering them with that commit's score formula and the ranking's qualities (skipped when
  git or the commit is not there);
* ``sprig``: the app's suggestion service as the code stands (``SuggestionService.suggest``),
  as a person types a request (``sprig``) and as a coding agent sends it, with its English
  gloss (``sprig+gloss``: the suggestion API's ``gloss`` field, which the MCP tool asks for);
* ``sprig-browse``: the home page's search (``/?q=``), its first page.

Metrics (``bench/relevance_metrics.py``): Recall@5, nDCG@5 and MRR with each family counted
once, on the requests where something fits, per language, on the cross-language requests,
on all, and per split; then how well each system abstains where nothing fits. The last line
is JSON.

With ``--fit`` it instead fits what ``evolution/suggest.py`` calibrates on data — the
logistic ``FitModel`` (P(a candidate fits) from its relevance, word relevance, coverage and
script), the ``AbstainModel`` (P(something fits) from the likeliest candidate) and the
verdict's ``SOMETHING_FITS_AT`` threshold — on the ``tune`` split only, and prints the
constants to paste there; the holdout split is never read.

The issue's targets are checked for fork suggestions as a coding agent asks for them
(``sprig+gloss`` against ``bm25+gloss``: the same text for both), and shown for the request
alone (``sprig`` against ``bm25``).

    python bench/relevance.py [--quick] [--requests PATH] [--json-out PATH]
                              [--dump PATH]
    python bench/relevance.py --fit
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.relevance_metrics import (  # noqa: E402
    LANGUAGES,
    SPLITS,
    AbstainScore,
    LabelError,
    Request,
    abstain_score,
    abstained,
    mean_metrics,
    only_listed_families,
    parse_requests,
    request_metrics,
)

REQUESTS = ROOT / "bench" / "data" / "relevance_requests.toml"
ROOTS = ROOT / "market" / "demo" / "assets" / "roots"
DEMO_SEED = 7
TODAY_COMMIT = "09fe485"
TODAY_CANDIDATES = 100  # that commit's market.suggestions.services.CANDIDATES
DEPTH = 10  # results kept per request: MRR looks this deep
# Each field repeated as often as the text index weighs it, so BM25 sees the same emphasis.
BM25_FIELD_REPEATS = {"title": 3, "tags": 2, "summary": 2, "story": 1}
DENSE_SCRIPT_START = 0x2E80  # CJK radicals onwards: kana, ideographs, hangul

TARGET_RECALL_ALL = 0.85
TARGET_RECALL_CROSS = 0.75
TARGET_ABSTAIN_PRECISION = 0.8
TARGET_ABSTAIN_RECALL = 0.6
# (system, the BM25 run given the same text): the first is the headline.
TARGETED = (("sprig+gloss", "bm25+gloss"), ("sprig", "bm25"))


@dataclass(frozen=True)
class Listing:
    """A listed sub-agent as the suggestion service reads it."""

    id: int
    title: str
    summary: str
    story: str
    tags: tuple[str, ...]
    category: str
    fork_request: str
    manifest: dict


@dataclass
class Answer:
    """One system's answer to one request: sub-agent ids best first, its verdict if it has
    one, and its scores where it exposes them."""

    ids: list[int]
    verdict: str | None = None
    scores: list[float] | None = None


System = Callable[[Request], Answer]


# ---------------------------------------------------------------------------- the catalog


def root_families() -> dict[str, str]:
    """Root title → family key, from the demo's root files."""
    families = {}
    for path in sorted(ROOTS.glob("*.json")):
        root = json.loads(path.read_text(encoding="utf-8"))
        families[root["title"]] = root["key"]
    return families


def load_demo_app(directory: Path):
    from market.app import create_app
    from market.demo.loader import load_demo
    from market.platform.migrate import upgrade
    from market.platform.state import app_state

    url = f"sqlite:///{directory / 'relevance.db'}"
    upgrade(url)
    app = create_app(
        {
            "database_url": url,
            "secret_key": "bench",
            "read_cache_seconds": 0,
            "testing": True,
            # Every labelled request is searched from one client: no rate limit on that.
            "rate_limit_search": "",
        }
    )
    load_demo(app_state(app).engine, seed=DEMO_SEED)
    return app


def read_catalog(engine) -> tuple[list[Listing], dict[int, str]]:
    """The listed sub-agents (as the suggestion service selects them) and each one's root
    family key, found by following ``parent_id`` up to a root whose title is a root file's."""
    from sqlmodel import Session, func, select

    from market.catalog.models import SubAgent, Version
    from market.identity.access import publicly_listed_clause
    from market.ranking.models import SubAgentScore

    titles = root_families()
    with Session(engine) as session:
        if not session.exec(select(func.count()).select_from(SubAgentScore)).one():
            raise SystemExit("the demo left no subagent_score rows: quality is unknown")
        rows = session.exec(
            select(
                SubAgent.id,
                SubAgent.title,
                SubAgent.summary,
                SubAgent.story,
                SubAgent.tags,
                SubAgent.category,
                SubAgent.fork_request_text,
                Version.manifest,
            )
            .join(Version, Version.id == SubAgent.latest_version_id)
            .where(publicly_listed_clause())
            .order_by(SubAgent.id)
        ).all()
        tree = dict(session.exec(select(SubAgent.id, SubAgent.parent_id)).all())
        title_of = dict(session.exec(select(SubAgent.id, SubAgent.title)).all())
    listings = [
        Listing(
            id=row.id,
            title=row.title,
            summary=row.summary or "",
            story=row.story or "",
            tags=tuple(row.tags or ()),
            category=row.category,
            fork_request=row.fork_request_text or "",
            manifest=row.manifest or {},
        )
        for row in rows
    ]
    family_of = {}
    for listing in listings:
        node = listing.id
        while tree[node] is not None:
            node = tree[node]
        family = titles.get(title_of[node])
        if family is None:
            raise SystemExit(
                f"sub-agent {listing.id} descends from {title_of[node]!r}, not a demo root"
            )
        family_of[listing.id] = family
    return listings, family_of


# ---------------------------------------------------------------------------- bm25


_WORD = re.compile(r"\w+")


def bm25_tokens(text: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Lower-cased words outside CJK runs (stopwords dropped); inside a run of Chinese,
    Japanese or Korean characters, every character and every pair of neighbours."""
    text = unicodedata.normalize("NFKC", text).lower()
    tokens = []
    for word in _WORD.findall(text):
        for dense, part in _script_runs(word):
            if not dense:
                if part not in stopwords:
                    tokens.append(part)
                continue
            tokens.extend(part)
            tokens.extend(part[i : i + 2] for i in range(len(part) - 1))
    return tokens


def _script_runs(word: str) -> list[tuple[bool, str]]:
    """A word cut where it switches between CJK characters and others ("7日" → "7", "日")."""
    runs: list[tuple[bool, str]] = []
    for char in word:
        dense = ord(char) >= DENSE_SCRIPT_START
        if runs and runs[-1][0] == dense:
            runs[-1] = (dense, runs[-1][1] + char)
        else:
            runs.append((dense, char))
    return runs


def bm25_system(listings: Sequence[Listing], *, with_gloss: bool) -> System:
    import bm25s
    from bm25s.stopwords import STOPWORDS_EN

    stopwords = frozenset(STOPWORDS_EN)
    corpus = []
    for listing in listings:
        fields = {
            "title": listing.title,
            "tags": " ".join(listing.tags),
            "summary": listing.summary,
            "story": listing.story,
        }
        text = " ".join(" ".join([fields[name]] * n) for name, n in BM25_FIELD_REPEATS.items())
        corpus.append(bm25_tokens(text, stopwords))
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    ids = [listing.id for listing in listings]

    def answer(request: Request) -> Answer:
        text = f"{request.text} {request.gloss}" if with_gloss and request.gloss else request.text
        query = [t for t in bm25_tokens(text, stopwords) if t in retriever.vocab_dict]
        if not query:
            return Answer([])
        scores = retriever.get_scores(query)
        order = sorted(
            (i for i in range(len(ids)) if scores[i] > 0), key=lambda i: (-scores[i], ids[i])
        )[:DEPTH]
        return Answer([ids[i] for i in order], scores=[round(float(scores[i]), 4) for i in order])

    return answer


# ---------------------------------------------------------------------------- today


def load_module_from_git(commit: str, path: str, name: str, replacements: dict[str, str]):
    """``path`` as it was at ``commit``, imported as module ``name`` with the given source
    replacements (its imports of its siblings, renamed). None when git cannot show it."""
    try:
        source = subprocess.run(
            ["git", "show", f"{commit}:{path}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for old, new in replacements.items():
        if old not in source:
            raise SystemExit(f"{commit}:{path} no longer contains {old!r}")
        source = source.replace(old, new)
    if re.search(r"^\s*(from|import) (evolution|market|feedback)\b", source, re.MULTILINE):
        raise SystemExit(f"{commit}:{path} imports today's code: rename that import too")
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)  # noqa: S102 - our history
    return module


def today_system(listings: Sequence[Listing], engine) -> System | None:
    from sqlmodel import Session, select

    from market.ranking.models import SubAgentScore

    text_index = load_module_from_git(
        TODAY_COMMIT, "evolution/text_index.py", "_relevance_today_text_index", {}
    )
    suggest = load_module_from_git(
        TODAY_COMMIT,
        "evolution/suggest.py",
        "_relevance_today_suggest",
        {"from evolution.text_index import": "from _relevance_today_text_index import"},
    )
    if text_index is None or suggest is None:
        return None
    # The documents as market/suggestions/services.py at that commit made them (_document).
    index = text_index.SuggestionIndex(
        text_index.SubAgentDocument(
            subagent_id=listing.id,
            title=listing.title,
            summary=listing.summary,
            story=listing.story,
            tags=listing.tags,
            category=listing.category,
            fork_request=listing.fork_request,
            description=str(listing.manifest.get("description") or ""),
            permissions=tuple(str(s) for s in listing.manifest.get("scopes") or ()),
        )
        for listing in listings
    )
    with Session(engine) as session:
        qualities = {
            row.subagent_id: suggest.Quality(
                float(row.quality), float(row.quality_sd), bool(row.young), row.rating_count, True
            )
            for row in session.exec(select(SubAgentScore))
        }

    def answer(request: Request) -> Answer:
        # What that commit's SuggestionService.suggest did: candidates, then the formula.
        matches = index.search(request.text, limit=TODAY_CANDIDATES)
        ranked = suggest.rank_suggestions(
            matches, qualities, k=DEPTH, locale_script=text_index.locale_script(request.lang)
        )
        return Answer([s.subagent_id for s in ranked], scores=[round(s.score, 4) for s in ranked])

    return answer


# ---------------------------------------------------------------------------- the app


def sprig_system(app, *, with_gloss: bool) -> System:
    from sqlmodel import Session

    from market.platform.state import app_state
    from market.suggestions.services import SuggestionRequest

    state = app_state(app)

    def answer(request: Request) -> Answer:
        gloss = request.gloss if with_gloss else None
        with Session(state.engine) as session:
            result = state.suggestions.suggest(
                session,
                SuggestionRequest(text=request.text, locale=request.lang, k=DEPTH, gloss=gloss),
            )
        return Answer(
            [item.subagent_id for item in result.items],
            verdict=result.verdict,
            scores=[round(item.score, 4) for item in result.items],
        )

    return answer


def browse_system(app) -> System:
    from sqlmodel import Session

    from market.catalog import queries
    from market.catalog.search import matcher_for
    from market.catalog.views import MAX_QUERY_CHARS, PAGE_SIZE
    from market.identity.tokens import ANONYMOUS
    from market.platform.state import app_state

    engine = app_state(app).engine

    def answer(request: Request) -> Answer:
        if len(request.text) > MAX_QUERY_CHARS:
            return Answer([])  # the page answers 400: the person sees no results
        with Session(engine) as session:
            page = queries.browse(
                session,
                ANONYMOUS,
                q=request.text,
                category=None,
                tag=None,
                sort=None,
                limit=PAGE_SIZE,
                cursor=None,
                matcher=matcher_for(app, session),
            )
        return Answer([card.id for card in page.items][:DEPTH])

    return answer


# ---------------------------------------------------------------------------- fitting

FIT_CANDIDATES = 30  # per request: the candidates a verdict or a top five can come from
FIT_C = 10.0  # inverse L2 strength: mild, the features are few and well scaled


def fit_calibration(app, requests: Sequence[Request], family_of: dict[int, str]) -> None:
    """Fit ``FitModel`` on the tune split's candidates and ``AbstainModel`` with its threshold on
    its requests (each asked as a person writes it and, with its gloss, as a coding agent
    sends it), and print the constants."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from evolution.scripts import script_of
    from evolution.suggest import AbstainModel, FitModel, best_candidate

    tune = [r for r in requests if r.split == "tune"]
    index = app_state_index(app)
    features, labels, asked = [], [], []
    for request in tune:
        script = script_of(request.text)
        queries = [(request.text, False)]
        if request.gloss:
            queries.append((f"{request.text}\n{request.gloss}", True))
        for query, glossed in queries:
            matches = index.search(query, limit=FIT_CANDIDATES)
            features.extend(
                [m.relevance, m.word_relevance, m.coverage, float(m.script != script)]
                for m in matches
            )
            labels.extend(request.fits.get(family_of.get(m.subagent_id), 0) >= 1 for m in matches)
            asked.append((request, matches, script, glossed or request.lang == "en"))
    model = LogisticRegression(C=FIT_C).fit(np.array(features), np.array(labels))
    fitted = FitModel(float(model.intercept_[0]), *(float(c) for c in model.coef_[0]))
    best = [best_candidate(matches, script, fitted) for _, matches, script, _ in asked]
    has_fit = np.array([request.has_fit for request, *_ in asked])
    # Abstaining is fitted, and its threshold chosen, on the asks a coding agent makes (with
    # the gloss): the verdict is its answer. Threshold: abstain precision >= 0.8 at the
    # highest recall; failing that, the best F0.5.
    agent = [i for i, (*_, as_agent) in enumerate(asked) if as_agent]
    abstain = LogisticRegression(C=FIT_C).fit(np.array([best[i] for i in agent]), has_fit[agent])
    abstain_model = AbstainModel(float(abstain.intercept_[0]), *map(float, abstain.coef_[0]))
    something = np.array([abstain_model.probability(*best[i]) for i in agent])
    nofit = ~has_fit[agent]
    choices = []
    for threshold in np.arange(0.05, 0.96, 0.01):
        says_none = something < threshold
        hits = int((says_none & nofit).sum())
        precision = hits / max(1, int(says_none.sum()))
        recall = hits / max(1, int(nofit.sum()))
        f = 1.25 * precision * recall / (0.25 * precision + recall) if hits else 0.0
        choices.append(
            (precision >= 0.8, recall if precision >= 0.8 else f, threshold, precision, recall)
        )
    _, _, threshold, precision, recall = max(choices)
    print(f"fitted on {len(tune)} tune requests ({len(asked)} asks, {len(labels)} candidates):")
    print(
        f"FIT_MODEL = FitModel(bias={fitted.bias:.2f}, relevance={fitted.relevance:.2f}, "
        f"words={fitted.words:.2f}, coverage={fitted.coverage:.2f}, "
        f"cross_script={fitted.cross_script:.2f})"
    )
    print(
        f"ABSTAIN_MODEL = AbstainModel(bias={abstain_model.bias:.2f}, "
        f"fit={abstain_model.fit:.2f}, coverage={abstain_model.coverage:.2f})"
    )
    print(
        f"SOMETHING_FITS_AT = {threshold:.2f}  # on the tune split as a coding agent asks: "
        f"abstain precision {precision:.2f}, recall {recall:.2f}"
    )


def app_state_index(app):
    from sqlmodel import Session

    from market.platform.state import app_state

    service = app_state(app).suggestions
    with Session(app_state(app).engine) as session:
        service.catch_up(session)
    return service.index


# ---------------------------------------------------------------------------- judging


def slices(requests: Sequence[Request]) -> dict[str, list[Request]]:
    chosen = {"all": list(requests), "cross": [r for r in requests if r.cross]}
    for language in LANGUAGES:
        chosen[language] = [r for r in requests if r.lang == language]
    return chosen


def judge(
    requests: Sequence[Request],
    answers: dict[str, dict[str, Answer]],
    family_of: dict[int, str],
) -> dict:
    """{"systems": {system: {slice: means}}, "abstain": {system: score}} over ``requests``."""
    figures: dict = {"systems": {}, "abstain": {}}
    for system, by_request in answers.items():
        per_request = {}
        for request in requests:
            if request.has_fit:
                families = [family_of.get(i) for i in by_request[request.id].ids]
                per_request[request.id] = request_metrics(families, request.fits)
        figures["systems"][system] = {
            name: mean_metrics([per_request[r.id] for r in chosen if r.has_fit])
            for name, chosen in slices(requests).items()
        }
        score = abstain_score(
            (r, abstained(by_request[r.id].verdict, by_request[r.id].ids)) for r in requests
        )
        figures["abstain"][system] = _abstain_figures(score, [by_request[r.id] for r in requests])
    return figures


def _abstain_figures(score: AbstainScore, answers: Sequence[Answer]) -> dict:
    figures = score.as_dict()
    verdicts = [a.verdict for a in answers if a.verdict is not None]
    if verdicts:
        figures["verdicts"] = {v: verdicts.count(v) for v in sorted(set(verdicts))}
    return figures


def targets(figures: dict, system: str, baseline: str) -> list[tuple[str, bool | None, str]]:
    """(target, met, what was measured) for the issue's targets, on ``system`` against
    ``baseline`` (BM25 given the same text)."""
    systems = figures["systems"]
    mine = systems.get(system, {})
    found = []
    overall = mine.get("all", {}).get("recall_at_5")
    cross = mine.get("cross", {}).get("recall_at_5")
    found.append(
        (f"R@5 >= {TARGET_RECALL_ALL} overall", _at_least(overall, TARGET_RECALL_ALL), _f(overall))
    )
    found.append(
        (
            f"R@5 >= {TARGET_RECALL_CROSS} cross-language",
            _at_least(cross, TARGET_RECALL_CROSS),
            _f(cross),
        )
    )
    if baseline in systems:
        # Strictly above, except where both are perfect (nothing can be above 1.0).
        below = [
            name
            for name, bm25 in systems[baseline].items()
            if bm25["n"] and bm25["recall_at_5"] >= mine[name]["recall_at_5"] < 1.0
        ]
        found.append(
            (
                f"R@5 above {baseline} on every slice",
                not below,
                "not above on: " + ", ".join(below) if below else "all",
            )
        )
    abstain = figures["abstain"].get(system, {})
    precision, recall = abstain.get("precision"), abstain.get("recall")
    met = None
    if recall is not None:
        met = (precision or 0.0) >= TARGET_ABSTAIN_PRECISION and recall >= TARGET_ABSTAIN_RECALL
    found.append(
        (
            f"abstain precision >= {TARGET_ABSTAIN_PRECISION} at recall >= {TARGET_ABSTAIN_RECALL}",
            met,
            f"precision {_f(precision)}, recall {_f(recall)}",
        )
    )
    return found


def _at_least(value: float | None, target: float) -> bool | None:
    return None if value is None else value >= target


def _f(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


# ---------------------------------------------------------------------------- printing


def print_tables(figures: dict, systems: Sequence[str]) -> None:
    header = f"{'slice':<8} {'system':<13} {'R@5':>6} {'nDCG@5':>7} {'MRR':>6} {'n':>4}"
    print(header)
    print("-" * len(header))
    names = list(figures["systems"][systems[0]])
    for name in [*names, *SPLITS]:
        for system in systems:
            source = figures["splits"][name] if name in SPLITS else figures
            row = source["systems"][system]["all" if name in SPLITS else name]
            if not row["n"]:
                continue
            print(
                f"{name:<8} {system:<13} {_f(row['recall_at_5']):>6} "
                f"{_f(row['ndcg_at_5']):>7} {_f(row['mrr']):>6} {row['n']:>4}"
            )
    print()
    header = (
        f"{'abstain':<13} {'abstained':>9} {'precision':>9} {'recall':>7} {'no-fit':>6} "
        f"{'wrong':>10}  verdicts"
    )
    print(header)
    print("-" * len(header))
    for system in systems:
        a = figures["abstain"][system]
        wrong = f"{a['wrong_abstains']}/{a['with_grade_2_fit']}"
        verdicts = " ".join(f"{k}={v}" for k, v in a.get("verdicts", {}).items()) or "(none)"
        print(
            f"{system:<13} {a['abstained']:>9} {_f(a['precision']):>9} {_f(a['recall']):>7} "
            f"{a['no_fit']:>6} {wrong:>10}  {verdicts}"
        )
    print("(wrong: requests with a grade-2 fit abstained on / requests with a grade-2 fit)\n")


def main() -> None:
    from market.platform.state import app_state

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every third request")
    parser.add_argument("--requests", type=Path, default=REQUESTS, help="the labelled requests")
    parser.add_argument("--json-out", type=Path, help="also write the JSON figures here")
    parser.add_argument("--dump", type=Path, help="per-request results as JSON lines")
    parser.add_argument(
        "--fit", action="store_true", help="fit the calibration on the tune split and print it"
    )
    args = parser.parse_args()
    if not args.requests.is_file():
        parser.error(f"no labelled requests at {args.requests}")
    try:
        requests = parse_requests(
            args.requests.read_text(encoding="utf-8"), root_families().values()
        )
    except LabelError as error:
        parser.error(f"{args.requests}: {error}")
    if args.quick:
        requests = requests[::3]

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sprig-relevance-") as directory:
        app = load_demo_app(Path(directory))
        engine = app_state(app).engine
        load_seconds = time.perf_counter() - started
        listings, family_of = read_catalog(engine)
        requests, unlisted = only_listed_families(requests, family_of.values())
        if args.fit:
            fit_calibration(app, requests, family_of)
            return
        systems: dict[str, System] = {
            "bm25": bm25_system(listings, with_gloss=False),
            "bm25+gloss": bm25_system(listings, with_gloss=True),
        }
        today = today_system(listings, engine)
        if today is None:
            print(f"today: git cannot show commit {TODAY_COMMIT} here; column skipped")
        else:
            systems["today"] = today
        systems["sprig"] = sprig_system(app, with_gloss=False)
        systems["sprig+gloss"] = sprig_system(app, with_gloss=True)
        systems["sprig-browse"] = browse_system(app)
        answers = {
            name: {request.id: system(request) for request in requests}
            for name, system in systems.items()
        }
        engine.dispose()
        app_state(app).read_engine.dispose()

    figures = {
        "bench": "relevance",
        "requests": len(requests),
        "quick": args.quick,
        "listed_subagents": len(listings),
        "families": len(set(family_of.values())),
        "unlisted_labels": unlisted,
        **judge(requests, answers, family_of),
        "splits": {
            split: judge([r for r in requests if r.split == split], answers, family_of)
            for split in SPLITS
        },
    }
    met = {system: targets(figures, system, baseline) for system, baseline in TARGETED}
    figures["targets"] = {
        system: {name: {"met": ok, "measured": value} for name, ok, value in found}
        for system, found in met.items()
    }
    figures["skipped"] = [] if "today" in systems else ["today"]
    figures["seconds"] = round(time.perf_counter() - started, 1)

    print(
        f"\nrelevance bench: {len(requests)} requests "
        f"({sum(r.has_fit for r in requests)} with fits), {len(listings)} listed sub-agents of "
        f"{figures['families']} families, demo loaded in {load_seconds:.0f}s; family counted "
        f"once, k = 5\n"
    )
    for request_id, families in unlisted.items():
        print(f"{request_id}: not judged on {', '.join(families)} (no listed sub-agent)")
    if unlisted:
        print()
    print_tables(figures, list(systems))
    for system, found in met.items():
        print(f"\ntargets, {system}{' (headline)' if system == TARGETED[0][0] else ''}:")
        for name, ok, measured in found:
            verdict = "n/a " if ok is None else ("PASS" if ok else "MISS")
            print(f"{verdict} {name}: {measured}")
    if args.dump:
        write_dump(args.dump, requests, answers, family_of)
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(figures, ensure_ascii=False))


def write_dump(path: Path, requests, answers, family_of) -> None:
    """One JSON line per (request, system): the top five, their families and grades."""
    with path.open("w", encoding="utf-8") as out:
        for request in requests:
            for system, by_request in answers.items():
                answer = by_request[request.id]
                families = [family_of.get(i) for i in answer.ids]
                line = {
                    "request": request.id,
                    "lang": request.lang,
                    "split": request.split,
                    "cross": request.cross,
                    "text": request.text,
                    "fits": dict(request.fits),
                    "system": system,
                    "verdict": answer.verdict,
                    "abstained": abstained(answer.verdict, answer.ids),
                    "ids": answer.ids[:5],
                    "families": families[:5],
                    "grades": [request.fits.get(f, 0) if f else 0 for f in families[:5]],
                    "scores": answer.scores[:5] if answer.scores is not None else None,
                }
                if request.has_fit:
                    metrics = request_metrics(families, request.fits)
                    line.update({name: round(value, 4) for name, value in metrics.items()})
                out.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
