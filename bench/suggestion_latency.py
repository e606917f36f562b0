"""Fork-suggestion latency at 100,000 sub-agents: in process and over HTTP, against baselines.

Loads a synthetic catalog into PostgreSQL (``bench/catalog.py``'s forest: titles, summaries,
stories, tags), adds ranking scores for 60% of it and feedback with comments for 2%, then:

* in process: the suggestion index's search plus the score formula (what a request costs
  once the index is built), against a brute-force baseline measured in the same run: the
  exact same relevance computed as one sparse matrix-vector product over every sub-agent
  (no inverted index, no candidate pruning); also the agreement of the two top-5s;
* in process, the whole answer (``SuggestionService.suggest``: index, quality rows, the rows
  re-read for privacy, explanations, themes and improving forks from the database);
* in process, a browse search (``GET /api/v1/subagents?q=`` through the app, without the
  read cache): the same engine, then the page's rows, clone collapsing and the JSON;
* over HTTP: ``POST /api/v1/suggestions`` under gunicorn (2 gthread workers, each with its own
  index), against the catalog's plain search ``GET /api/v1/subagents?q=`` of the same words,
  both without the read cache, in short slices that alternate with the search's
  (``bench/interleave.py``: the median of the slice ratios, its spread, a noise verdict).

    python bench/suggestion_latency.py [--quick] [--subagents N]

``measure()`` is what ``bench/evolution_scale.py`` calls. It DROPS and recreates the schema of
the PostgreSQL it is given (SPRIG_BENCH_DATABASE_URL or SPRIG_TEST_POSTGRES_URL); without one
(as a function or as a script) it runs under scripts/test-services.sh, which starts a
throwaway PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import catalog as catalog_bench  # noqa: E402
from bench import interleave, loadgen  # noqa: E402
from bench.loadgen import percentile  # noqa: E402
from bench.servers import database_url_or_rerun_with_servers  # noqa: E402

TARGET_P99_MS = 10.0  # the suggestion engine in process: index search and the score
TARGET_BROWSE_P99_MS = 60.0  # a browse search in process: the whole request, JSON out
COMMENTS = [
    "please add a reminder in the evening",
    "wants a dark mode, too bright at night",
    "export to csv would help my doctor",
    "love it, use it every day",
    "it is too slow on my old phone",
    "the buttons are confusing",
    "希望可以加提醒",
    "ダークモードがほしいです",
]
TAGS = ["wants reminders", "needs dark mode", "wants export", "love it", "too slow", "confusing"]


def make_queries(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    shapes = [
        "a {topic} {noun} for my {category}",
        "{topic} {noun} with reminders",
        "I want to keep a {noun} of my {topic} every day",
        "{topic} {noun} that my family can share",
        "simple {topic} {noun}",
    ]
    queries = []
    for _ in range(count):
        category = rng.choice(catalog_bench.CATEGORIES)
        queries.append(
            rng.choice(shapes).format(
                topic=rng.choice(catalog_bench.TOPICS[category]),
                noun=rng.choice(catalog_bench.NOUNS),
                category=category,
            )
        )
    return queries


def add_scores_and_feedback(url: str, n: int, n_users: int, seed: int) -> dict:
    """Ranking rows for 60% of the sub-agents, and 20 rated comments on 2% of them."""
    import psycopg
    from sqlalchemy.engine import make_url

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    rng = random.Random(seed)
    now = datetime.now(UTC)
    scored = feedback = 0
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY subagent_score (subagent_id, quality, quality_sd, display, branch_value, "
            "p_descendant_better, fork_gain, trending, active_users, retention, usage_score, "
            "rating_count, young, run_id, computed_at) FROM STDIN"
        ) as copy:
            for subagent_id in range(1, n + 1):
                if rng.random() >= 0.6:
                    continue
                ratings = int(rng.paretovariate(1.3))
                sd = 1.0 / (1.0 + ratings) ** 0.5
                quality = rng.gauss(0, 0.8)
                display = quality - 1.64 * sd
                zeros = (0.0,) * 6  # descendant, fork gain, trending, users, retention, usage
                row = (subagent_id, quality, sd, display, quality, *zeros, ratings)
                copy.write_row((*row, ratings < 10, 1, now))
                scored += 1
        with cur.copy(
            "COPY feedback (user_id, subagent_id, version_id, scale, rating, comment, tags, "
            "created_at, updated_at, updated_day) FROM STDIN"
        ) as copy:
            for subagent_id in rng.sample(range(1, n + 1), max(1, n // 50)):
                for user_id in rng.sample(range(1, n_users + 1), 20):
                    tags = [rng.choice(TAGS)] if rng.random() < 0.5 else []
                    comment = rng.choice(COMMENTS) if rng.random() < 0.7 else None
                    stars = rng.randint(1, 5)
                    row = (user_id, subagent_id, subagent_id, "stars", stars, comment)
                    copy.write_row((*row, json.dumps(tags), now, now, now.date()))
                    feedback += 1
        conn.commit()
        conn.autocommit = True
        conn.execute("ANALYZE")
    return {"scored": scored, "feedback": feedback}


def service_token(url: str) -> str:
    from market.identity.models import User
    from market.identity.tokens import issue_token
    from market.platform.db import make_engine, session_scope

    engine = make_engine(url)
    with session_scope(engine) as session:
        user = User(handle="bench-coder", display_name="Bench coder", kind="service")
        session.add(user)
        session.flush()
        token = issue_token(session, user, ["suggest"], name="bench")
    engine.dispose()
    return token


# ---------------------------------------------------------------------------- in process


def _timed(function, items) -> tuple[list[float], list]:
    latencies, results = [], []
    for item in items:
        started = time.perf_counter()
        results.append(function(item))
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies, results


def in_process(url: str, queries: list[str]) -> dict:
    import numpy as np
    import scipy.sparse as sp
    from sqlmodel import Session, select

    from evolution.scripts import SCRIPTS, script_of
    from evolution.suggest import Quality, rank_suggestions
    from evolution.text_index import N_FEATURES, N_GRAM_FEATURES, NGRAM_SHARE, Match
    from market.app import create_app
    from market.platform.state import app_state
    from market.ranking.models import SubAgentScore
    from market.suggestions.serialize import suggestions_out
    from market.suggestions.services import CANDIDATES, SuggestionRequest, warm_up

    # One client searches thousands of times: the bench measures serving, not the rate limit.
    app = create_app(
        {
            "database_url": url,
            "secret_key": "bench",
            "read_cache_seconds": 0,
            "rate_limit_search": "",
        }
    )
    engine = app_state(app).engine
    service = app_state(app).suggestions
    started = time.perf_counter()
    warm_up(app).join()  # as a gunicorn worker starts
    index = service.index
    build_seconds = time.perf_counter() - started
    with Session(engine) as session:
        qualities = {
            row.subagent_id: Quality(
                row.quality, row.quality_sd, row.young, row.rating_count, True, row.active_users
            )
            for row in session.exec(select(SubAgentScore))
        }

    def indexed(query: str):
        matches = index.search(query, limit=CANDIDATES)
        return rank_suggestions(matches, qualities, k=5, query_script=script_of(query))

    # Baseline: the same relevance, by brute force over every row.
    rows = sp.vstack([s.postings.tocsr() for s in index._segments], format="csr")
    ids = index._ids.view.copy()
    scripts = index._script.view

    roots = index._root.view

    def exact_relevances(query: str) -> list[float]:
        relevance = exact(query)[0]
        top = np.sort(relevance[np.argpartition(-relevance, CANDIDATES)[:CANDIDATES]])[::-1]
        return [float(r) for r in top if r > 0]

    def exact(query: str):
        """(relevance, word cosine, coverage) of every row, by sparse products."""
        features, weights = index.query_vector(query)
        is_word = features >= N_GRAM_FEATURES

        def product(values, columns):
            vector = sp.csr_matrix((values, columns, [0, len(columns)]), shape=(1, N_FEATURES))
            return (rows @ vector.T).toarray().ravel()

        relevance = product(weights, features)
        words = product(weights[is_word], features[is_word]) / (1 - NGRAM_SHARE)
        squares = weights[is_word] ** 2
        present = rows[:, features[is_word]].sign()
        coverage = present @ (squares / (squares.sum() or 1.0))
        return relevance, words, np.asarray(coverage).ravel()

    def brute_force(query: str):
        relevance, words, coverage = exact(query)
        top = np.argpartition(-relevance, CANDIDATES)[:CANDIDATES]
        matches = [
            Match(
                int(ids[i]),
                float(relevance[i]),
                SCRIPTS[int(scripts[i])],
                int(roots[i]),
                float(words[i]),
                float(coverage[i]),
            )
            for i in top
            if relevance[i] > 0
        ]
        return rank_suggestions(matches, qualities, k=5, query_script=script_of(query))

    for query in queries[:20]:  # warm caches and allocators
        indexed(query)
        brute_force(query)
    index_ms, _ = _timed(indexed, queries)
    brute_ms, brute_results = _timed(brute_force, queries[: max(50, len(queries) // 5)])
    # How many of the brute force's best relevances the index's candidates reach (ties make
    # comparing ids meaningless: thousands of synthetic "Water Tracker"s score the same).
    recall = []
    for query in queries[: len(brute_results)]:
        found = sorted((m.relevance for m in index.search(query, limit=CANDIDATES)), reverse=True)
        best = exact_relevances(query)
        hits = sum(f >= b - 1e-6 for f, b in zip(found, best, strict=False))
        recall.append(hits / max(1, len(best)))
    with Session(engine) as session:
        suggestions_out(service.suggest(session, SuggestionRequest(text=queries[0])))
        full_ms, _ = _timed(
            lambda q: suggestions_out(service.suggest(session, SuggestionRequest(text=q, k=5))),
            queries[:200],
        )
    client = app.test_client()

    def browse(query: str) -> None:
        response = client.get("/api/v1/subagents", query_string={"q": query})
        assert response.status_code == 200, response.status_code

    browse(queries[0])
    browse_ms, _ = _timed(browse, queries[:200])
    engine.dispose()
    app_state(app).read_engine.dispose()
    return {
        "build_seconds": round(build_seconds, 2),
        "indexed": len(index),
        "postings": index.postings,
        "index_mb": round((index.postings * 8 + 8 * (1 << 21)) / 1e6, 1),
        "index": index_ms,
        "brute_force": brute_ms,
        "service": full_ms,
        "browse": browse_ms,
        "relevance_recall": round(statistics.mean(recall), 4),
    }


# ---------------------------------------------------------------------------- over HTTP


def drive(port, requests, *, clients, duration, headers) -> tuple[list[float], int]:
    result = loadgen.run(
        "http",
        "127.0.0.1",
        port,
        requests,
        clients=clients,
        duration=duration,
        headers=headers,
        timeout=30,
    )
    return result.latencies_ms, result.errors


def over_http(
    url: str,
    queries: list[str],
    *,
    workers: int,
    clients: int,
    seconds: float,
    slice_seconds: float,
    noise_threshold: float,
):
    """``POST /suggestions`` in short slices alternating with the catalog search of the same
    words (``bench/interleave.py``): the search is the baseline."""
    token = service_token(url)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    suggestions = [
        loadgen.Request("/api/v1/suggestions", "POST", json.dumps({"request": q, "k": 5}))
        for q in queries
    ]
    # The catalog's search ANDs its words: give it the request's topic and noun.
    vocabulary = set(catalog_bench.NOUNS) | {w for ws in catalog_bench.TOPICS.values() for w in ws}
    search = [
        "/api/v1/subagents?q=" + "+".join(w for w in q.split() if w in vocabulary) for q in queries
    ]
    port = catalog_bench.free_port()
    server = catalog_bench.start_gunicorn(url, port, workers, 8, cache_seconds=0)
    try:
        # Each worker builds its own index on its first request; keep asking until every
        # worker has answered (no slow request left in a round).
        started = time.perf_counter()
        while time.perf_counter() - started < 300:
            warm, _ = drive(port, suggestions, clients=2 * workers, duration=1.0, headers=headers)
            if warm and max(warm) < 1000:
                break
            print(f"warming: {len(warm)} answers, slowest {max(warm or [0]):.0f} ms", flush=True)
        warm_seconds = time.perf_counter() - started
        workloads = {"http_search": search, "http": suggestions}
        with interleave.SlicedClients(
            "127.0.0.1", port, workloads, clients=clients, headers=headers, timeout=30
        ) as pool:
            runs = interleave.interleave(
                pool.run_slice,
                "http_search",
                ["http"],
                rounds=interleave.rounds_for(seconds, slice_seconds),
                slice_seconds=slice_seconds,
                threshold=noise_threshold,
            )
    finally:
        catalog_bench.stop_gunicorn(server)
    return runs, warm_seconds


# ---------------------------------------------------------------------------- the figures


def measure(
    n_subagents: int = 100_000,
    queries: int | None = None,
    quick: bool = False,
    *,
    database_url: str | None = None,
    http: bool = True,
    workers: int = 2,
    clients: int = 4,
    seconds: float | None = None,
    seed: int = 1,
    slice_seconds: float | None = None,
    noise_threshold: float = interleave.NOISE_THRESHOLD,
) -> dict:
    """Build the catalog, measure, and return the figures (latencies in milliseconds)."""
    url = (
        database_url
        or os.environ.get("SPRIG_BENCH_DATABASE_URL")
        or os.environ.get("SPRIG_TEST_POSTGRES_URL")
    )
    if not url:
        return _measure_under_test_services(
            n_subagents,
            queries,
            quick,
            http=http,
            workers=workers,
            clients=clients,
            seconds=seconds,
            slice_seconds=slice_seconds,
            noise_threshold=noise_threshold,
        )
    queries = queries or (200 if quick else 1000)
    seconds = seconds or (2.0 if quick else 10.0)
    slice_seconds = slice_seconds or (
        interleave.QUICK_SLICE_SECONDS if quick else interleave.FULL_SLICE_SECONDS
    )
    forest = catalog_bench.load_forest(url, n_subagents, seed)
    extra = add_scores_and_feedback(url, n_subagents, forest["users"], seed)
    texts = make_queries(queries, seed)
    local = in_process(url, texts)
    figures: dict = {
        "bench": "suggestion_latency",
        "subagents": n_subagents,
        "queries": queries,
        "scored": extra["scored"],
        "feedback": extra["feedback"],
        "index_build_seconds": local["build_seconds"],
        "index_postings": local["postings"],
        "index_mb": local["index_mb"],
        "relevance_recall_at_100": local["relevance_recall"],
        "target_p99_ms": TARGET_P99_MS,
        "target_browse_p99_ms": TARGET_BROWSE_P99_MS,
    }
    rows = {
        "in_process": local["index"],
        "in_process_brute_force": local["brute_force"],
        "in_process_full_answer": local["service"],
        "in_process_browse": local["browse"],
    }
    for name, latencies in rows.items():
        figures[name] = {
            "p50_ms": round(statistics.median(latencies), 3),
            "p99_ms": round(percentile(latencies, 99), 3),
            "samples": len(latencies),
        }
    if http:
        runs, warm_seconds = over_http(
            url,
            texts,
            workers=workers,
            clients=clients,
            seconds=seconds,
            slice_seconds=slice_seconds,
            noise_threshold=noise_threshold,
        )
        figures["http_warmup_seconds"] = round(warm_seconds, 1)
        figures.update(
            {
                "workers": workers,
                "clients": clients,
                "seconds": seconds,
                "slice_seconds": slice_seconds,
                "noise_threshold": noise_threshold,
            }
        )
        for name, run in runs.items():
            # p50/p99 pooled over the slices; for POST /suggestions also the median of its
            # slice ratios to the search around it (throughput, and p50 as p50_ratio).
            figures[name] = {**run.figures(), "samples": len(run.latencies_ms)}
        figures["http_noisy"] = runs["http"].throughput.noisy
    figures["in_process_speedup_p50"] = round(
        figures["in_process_brute_force"]["p50_ms"] / figures["in_process"]["p50_ms"], 2
    )
    figures["in_process_p99_met"] = figures["in_process"]["p99_ms"] <= TARGET_P99_MS
    figures["browse_p99_met"] = figures["in_process_browse"]["p99_ms"] < TARGET_BROWSE_P99_MS
    return figures


def _measure_under_test_services(
    n, queries, quick, *, http, workers, clients, seconds, slice_seconds, noise_threshold
) -> dict:
    """No PostgreSQL configured: run this script under scripts/test-services.sh (a throwaway
    server, stopped afterwards) and read its last line."""
    command = [
        str(ROOT / "scripts" / "test-services.sh"),
        sys.executable,
        str(Path(__file__).resolve()),
        "--subagents",
        str(n),
        "--workers",
        str(workers),
        "--clients",
        str(clients),
    ]
    command += ["--quick"] if quick else []
    command += ["--no-http"] if not http else []
    command += ["--queries", str(queries)] if queries else []
    command += ["--seconds", str(seconds)] if seconds else []
    command += ["--slice-seconds", str(slice_seconds)] if slice_seconds else []
    command += ["--noise-threshold", str(noise_threshold)]
    finished = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(finished.stdout.strip().splitlines()[-1])


def print_table(figures: dict) -> None:
    print(
        f"\nsuggestion latency: {figures['subagents']:,} sub-agents "
        f"({figures['scored']:,} ranked, {figures['feedback']:,} ratings), "
        f"{figures['queries']} queries; index built in {figures['index_build_seconds']} s, "
        f"{figures['index_postings']:,} postings (~{figures['index_mb']} MB)\n"
    )
    header = f"{'path':<40} {'p50 ms':>8} {'p99 ms':>8} {'n':>7} {'p50 / baseline':>16}"
    print(header)
    print("-" * len(header))
    pairs = {
        "in_process": "in_process_brute_force",
        "in_process_full_answer": "in_process_brute_force",
        "http": "http_search",
    }
    labels = {
        "in_process": "index + score (in process)",
        "in_process_brute_force": "brute-force scan (baseline)",
        "in_process_full_answer": "whole answer, with DB (in process)",
        "in_process_browse": "browse search, whole request (in proc)",
        "http": "POST /suggestions (gunicorn)",
        "http_search": "GET /subagents?q= (baseline)",
    }
    for name, label in labels.items():
        if name not in figures:
            continue
        row = figures[name]
        base = figures.get(pairs.get(name, ""), {}).get("p50_ms")
        ratio = f"{row['p50_ms'] / base:>15.2f}x" if base else f"{'—':>16}"
        if "p50_ratio" in row:  # interleaved slices: the median of the slices' ratios
            ratio = f"{row['p50_ratio']:>15.2f}x"
        print(
            f"{label:<40} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f} {row['samples']:>7} {ratio}"
        )
    if "http" in figures:
        http = figures["http"]
        print(
            f"\nover HTTP: {http['slices']} slices of {figures['slice_seconds']:g}s, each between "
            f"two of the search; p50 / baseline is the median of the slices' p50 ratios (spread "
            f"{http['p50_ratio_spread']:.0%}); throughput {http['ratio']:.2f}x the search's "
            f"(q1..q3 {http['ratio_q1']:.2f}..{http['ratio_q3']:.2f}, spread {http['spread']:.0%}, "
            f"baseline step {http['baseline_step']:.0%}): "
            + ("too noisy to judge" if http["noisy"] else "steady")
        )
    print(
        f"\nrecall of the brute force's 100 best relevances: "
        f"{figures['relevance_recall_at_100']:.1%}; "
        f"in-process p99 target {TARGET_P99_MS:.0f} ms: "
        f"{'met' if figures['in_process_p99_met'] else 'MISSED'}; browse search p99 target "
        f"{TARGET_BROWSE_P99_MS:.0f} ms: {'met' if figures['browse_p99_met'] else 'MISSED'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 sub-agents, under a minute")
    parser.add_argument("--subagents", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=None, help="per HTTP endpoint")
    parser.add_argument("--no-http", action="store_true")
    interleave.add_arguments(parser)
    args = parser.parse_args()
    url = database_url_or_rerun_with_servers()
    n = args.subagents or (10_000 if args.quick else 100_000)
    figures = measure(
        n,
        args.queries,
        args.quick,
        database_url=url,
        http=not args.no_http,
        workers=args.workers,
        clients=args.clients,
        seconds=args.seconds,
        slice_seconds=args.slice_seconds,
        noise_threshold=args.noise_threshold,
    )
    print_table(figures)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
