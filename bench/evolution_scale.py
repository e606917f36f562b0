"""How the ranking scales: a full recompute at 100,000 and 1,000,000 sub-agents.

For each size a fresh child process builds a synthetic catalog (10% roots; each fork's parent
an older sub-agent, older ones likelier, so trees are wide with a long tail of depth), 5 ratings
per sub-agent from n/2 raters with a few harsh and a few lenient ones, and 5 distinct
(sub-agent, user, day) usage rows per sub-agent over 180 days; then times what one run of
``sprig rank`` computes (``market.ranking.services.compute``: forest, rater fit, lineage
posterior, branch values with 64 joint draws, best descendants, usage and trending) and reads
its peak RSS.

Baselines in the same run:
* the simplest ranking there is, a mean rating per sub-agent (one ``np.bincount``): how many
  times that the real thing costs;
* one piece of the pass, "best score anywhere in each subtree", done as the textbook graph
  walk with networkx (a DFS per node over ``nx.descendants``; the 100k size only, it is
  quadratic in depth) against the forest arrays' level-by-level ``reduce_up``.

The fork-suggestion figures of ``bench/suggestion_latency.py`` (p50/p99 of ``POST /suggestions``
in-process and over HTTP at 100,000 sub-agents) are appended when it is importable.

    python bench/evolution_scale.py [--quick] [--sizes 100000,1000000] [--seed S]

Targets: 1M recompute under 5 s, near-linear growth (time ratio / size ratio near 1). The last
line is JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_SECONDS_1M = 5.0
RATINGS_PER_SUBAGENT = 5
USAGE_ROWS_PER_SUBAGENT = 5


def synthetic_inputs(n: int, seed: int):
    """A RankingInputs like market.ranking.services.load_inputs returns, with no database."""
    from evolution.ranking import Ratings
    from evolution.tree import Forest
    from market.ranking.services import RankingInputs, numbered_by_level

    rng = np.random.default_rng(seed)
    n_roots = max(1, n // 10)
    ids = np.arange(1, n + 1, dtype=np.int64)
    index = np.arange(n)
    # Parent: an older sub-agent, the older the likelier (u² skews toward the start).
    parent_index = np.floor(index * rng.random(n) ** 2).astype(np.int64)
    parents = np.where(index < n_roots, -1, ids[parent_index])
    forest = Forest.from_parents(ids, parents)

    quality = rng.normal(0, 1, n)
    n_users = max(2, n // 2)
    m = RATINGS_PER_SUBAGENT * n
    items = np.floor(n * rng.random(m) ** 1.5).astype(np.int64)
    users = rng.integers(0, n_users, m)
    leniency = rng.normal(0, 0.5, n_users)
    score = quality[items] + leniency[users] + rng.normal(0, 0.7, m)
    stars = 1 + np.searchsorted(np.array([-1.3, -0.5, 0.2, 1.0]), score)
    ratings = Ratings(
        user_idx=users,
        item_idx=items,
        value=stars.astype(np.float64),
        is_thumb=np.zeros(m, dtype=bool),
        age_days=rng.uniform(0, 120, m),
    )
    u = USAGE_ROWS_PER_SUBAGENT * n
    # Numbered level by level, as load_inputs numbers what it reads.
    return numbered_by_level(
        RankingInputs(
            forest=forest,
            eligible=rng.random(n) < 0.95,
            item_age_days=rng.uniform(0, 400, n),
            ratings=ratings,
            user_ids=np.arange(n_users, dtype=np.int64),
            usage_item=np.floor(n * rng.random(u) ** 1.5).astype(np.int64),
            usage_user=rng.integers(0, n_users, u),
            usage_age=rng.integers(0, 180, u).astype(np.float64),
            watermark={},
        )
    )


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_size(n: int, seed: int, with_networkx: bool, queue) -> None:
    """Runs in a child process, so its peak RSS is this size's alone."""
    from market.ranking.services import compute

    compute(synthetic_inputs(200, seed), {}, seed=seed)  # first-call costs are not the pass's
    started = time.perf_counter()
    inputs = synthetic_inputs(n, seed)
    build = time.perf_counter() - started
    rss_inputs = _peak_rss_mib()

    started = time.perf_counter()
    scores = compute(inputs, {}, seed=seed)
    seconds = time.perf_counter() - started
    warm = dict(zip(inputs.user_ids.tolist(), scores.baseline.user_offset.tolist(), strict=True))
    started = time.perf_counter()
    compute(inputs, warm, seed=seed)
    warm_seconds = time.perf_counter() - started

    started = time.perf_counter()
    counts = np.bincount(inputs.ratings.item_idx, minlength=n)
    sums = np.bincount(inputs.ratings.item_idx, inputs.ratings.value, minlength=n)
    mean_rating = np.divide(sums, counts, out=np.zeros(n), where=counts > 0)
    mean_seconds = time.perf_counter() - started

    forest = inputs.forest
    started = time.perf_counter()
    subtree_best = forest.reduce_up(scores.display, "max")
    arrays_seconds = time.perf_counter() - started
    result = {
        "n": n,
        "ratings": int(inputs.ratings.item_idx.size),
        "usage_rows": int(inputs.usage_item.size),
        "levels": int(forest.n_levels),
        "build_inputs_s": round(build, 3),
        "recompute_s": round(seconds, 3),
        "warm_recompute_s": round(warm_seconds, 3),
        "mean_rating_s": round(mean_seconds, 4),
        "peak_rss_mib": round(_peak_rss_mib(), 1),
        "inputs_rss_mib": round(rss_inputs, 1),
        "subtree_max_arrays_s": round(arrays_seconds, 4),
        "checks": {
            "finite_means": bool(np.isfinite(scores.mean).all()),
            "branch_value_at_least_mean": bool(np.all(scores.branch_value >= scores.mean - 1e-9)),
            "spearman_vs_mean_rating": _spearman(scores.mean, mean_rating, counts > 0),
        },
    }
    if with_networkx:
        result.update(_networkx_subtree_max(forest, scores.display, subtree_best))
    queue.put(result)


def _spearman(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return round(float(spearmanr(a[mask], b[mask]).statistic), 3)


def _networkx_subtree_max(forest, values: np.ndarray, expected: np.ndarray) -> dict:
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(forest.n))
    children = np.flatnonzero(forest.parent >= 0)
    graph.add_edges_from(zip(forest.parent[children].tolist(), children.tolist(), strict=True))
    started = time.perf_counter()
    # The textbook way: post-order DFS from each root, each node the max of itself and children.
    best = values.copy()
    for root in np.flatnonzero(forest.parent < 0).tolist():
        for node in nx.dfs_postorder_nodes(graph, root):
            for child in graph.successors(node):
                if best[child] > best[node]:
                    best[node] = best[child]
    seconds = time.perf_counter() - started
    return {"subtree_max_networkx_s": round(seconds, 4), "networkx_agrees": bool(
        np.allclose(best, expected)
    )}  # fmt: skip


def run_size(n: int, seed: int, with_networkx: bool) -> dict:
    context = mp.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=measure_size, args=(n, seed, with_networkx, queue))
    child.start()
    result = queue.get()
    child.join()
    return result


def suggestion_figures(quick: bool) -> dict | None:
    try:
        from bench.suggestion_latency import measure
    except ImportError:
        return None
    return measure(n_subagents=100_000, quick=quick)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k and 200k sub-agents")
    parser.add_argument("--sizes", default=None, help="comma-separated sub-agent counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-suggestions", action="store_true")
    args = parser.parse_args()
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else ([20_000, 200_000] if args.quick else [100_000, 1_000_000])
    )
    code = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    print(f"evolution scale bench ({code}): full ranking recompute, one process per size\n")
    results = [run_size(n, args.seed, with_networkx=(i == 0)) for i, n in enumerate(sizes)]

    header = (
        f"{'sub-agents':>11} {'ratings':>10} {'levels':>6} {'recompute s':>11} "
        f"{'warm s':>7} {'peak RSS MiB':>12} {'x mean-rating':>13} {'ρ vs mean':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r['n']:>11,} {r['ratings']:>10,} {r['levels']:>6} {r['recompute_s']:>11.2f} "
            f"{r['warm_recompute_s']:>7.2f} {r['peak_rss_mib']:>12.0f} "
            f"{r['recompute_s'] / max(r['mean_rating_s'], 1e-6):>13.0f} "
            f"{r['checks']['spearman_vs_mean_rating']:>9.2f}"
        )
    small, large = results[0], results[-1]
    size_ratio = large["n"] / small["n"]
    time_ratio = large["recompute_s"] / small["recompute_s"]
    growth = time_ratio / size_ratio
    print(
        f"\ngrowth: {size_ratio:.0f}x the sub-agents took {time_ratio:.1f}x the time "
        f"(per sub-agent {growth:.2f}x; 1.0 = linear)"
    )
    if "subtree_max_networkx_s" in small:
        arrays_ms = small["subtree_max_arrays_s"] * 1000
        networkx_ms = small["subtree_max_networkx_s"] * 1000
        print(
            f"subtree max at {small['n']:,}: forest arrays {arrays_ms:.1f} ms, networkx DFS "
            f"{networkx_ms:.0f} ms ({networkx_ms / max(arrays_ms, 1e-3):.0f}x; "
            f"same answer: {small['networkx_agrees']})"
        )
    million = next((r for r in results if r["n"] >= 1_000_000), None)
    target_met = None
    if million is not None:
        target_met = million["recompute_s"] < TARGET_SECONDS_1M
        print(
            f"target: 1M recompute under {TARGET_SECONDS_1M:.0f} s -> "
            f"{'MET' if target_met else 'NOT MET'} ({million['recompute_s']:.2f} s, "
            f"peak RSS {million['peak_rss_mib']:.0f} MiB)"
        )
    suggestions = None if args.no_suggestions else suggestion_figures(args.quick)
    checks_passed = all(
        r["checks"]["finite_means"] and r["checks"]["branch_value_at_least_mean"] for r in results
    ) and all(r.get("networkx_agrees", True) for r in results)
    print(f"checks: {'all passed' if checks_passed else 'FAILED'}")
    print(
        json.dumps(
            {
                "bench": "evolution_scale",
                "code": code,
                "sizes": results,
                "growth_per_subagent": round(growth, 3),
                "target_1m_seconds": TARGET_SECONDS_1M,
                "target_met": target_met,
                "suggestions": suggestions,
                "checks_passed": checks_passed,
            }
        )
    )


if __name__ == "__main__":
    main()
