"""A simulated Sprig community with known truth: which policy finds and shows the best branches?

The world: roots in categories with latent quality q ~ N(0, 1) and an evolvability e; each fork
gives q_child = q_parent + e_parent + δ with δ a tweak, an improvement or a break; users with a
leniency b, a discrimination a and a taste per category w, active following a Zipf law. Each
session shows one user a slate of sub-agents; the user's utility for one of them is
s = a·(q + w_category) + b + ε; the user rates it with probability σ(−1 + 0.8|s|)
(missing not at random: people rate what they love or hate), in stars (s cut at ±0.5, ±1.5) or
thumbs (s > 0), uses it with probability σ(s) and, having used it, is still using it a week
later with probability σ(q + 0.3b − 1).

A policy decides (a) which sub-agents each session shows and (b) which sub-agent the coding agent
forks next; it sees only what Sprig would see (ratings, uses, retention, the fork tree), never q.
Policies: Sprig's (rater debiasing + lineage posterior + Thompson with a young-fork share),
random, most-used, mean rating, Wilson lower bound and Bayesian average. The non-Sprig policies
show their top items and fork their top item, as those schemes are used elsewhere; with
--baseline-young-share they also get a share of slots for young forks (filled at random).

Every policy of a seed meets the same users, roots, session order, noise and fork mutations
(common random numbers); only its own choices differ. With --forking community the parent of
each fork is drawn uniformly by the world instead, the same for every policy, so all policies
face the same catalog and only what they show differs.

Figures, per policy, mean ± sd over seeds:
* regret: Σ_t (q*_t − mean q of the slate shown at session t), q*_t the best sub-agent existing
  at t in the policy's own catalog. What users lost by being shown something else than the best.
* vs common: the same with q*_t the best sub-agent any policy's catalog held at t (same seed).
  Under policy forking each policy grows its own catalog, and "regret" alone rewards a policy
  whose forks never improve on anything; this one is comparable across policies.
* top regret: Σ_t (q*_t − q of the policy's single top pick at t), own catalog.
* found at: the first session from which the policy's top pick stays within 0.1 of q* at every
  refit until the end (the run length if it never settles), median over seeds [seeds found].
* lag: each time a better sub-agent appears (q* rises), the sessions until the top pick is within
  0.1 of that new q*; median/mean over all such records, and how many were never matched.
* on top: share of refits at which the top pick is within 0.1 of q*.
* ρ all: Spearman correlation of the policy's quality estimate with q, all sub-agents, at the
  end; ρ young: the same over young forks (< 10 ratings) at ten moments of the run, averaged
  (moments with fewer than 5 young forks are skipped; "nan": never 5).
* pairs: over the last fifth of sessions, the share of slates where one user rated both items
  differently on one scale and the policy's estimate (fitted before the session) ordered them
  the same way.
* final q*: quality of the best sub-agent in the policy's catalog at the end; q shown: mean q of
  what the policy showed.
Then the estimators alone: every policy's estimate fitted on one shared log (uniformly random
exposure and forking), Spearman over all sub-agents and over young forks; and a sanity case, the
same without leniency spread and with ratings missing at random, where every estimator should
order sub-agents about equally well.

    python bench/evolution_sim.py [--quick] [--seeds N] [--users N] [--roots N] [--forks N]
        [--sessions N] [--leniency-sd X] [--broken-share X] [--no-mnar] [--jobs N] ...

The last line is JSON with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sim_policies import POLICIES, RandomPolicy, make_policy, rating_counts  # noqa: E402
from bench.sim_world import YOUNG_RATINGS, Draws, Log, World, WorldParams, draw_world  # noqa: E402
from evolution.ranking import Ratings, rank  # noqa: E402
from evolution.tree import Forest  # noqa: E402

FOUND_WITHIN = 0.1
YOUNG_CHECKS = 10  # times in a run at which the young forks' ordering is scored


# --------------------------------------------------------------------------- one run
def run(params: WorldParams, seed: int, policy_name: str, draws: Draws | None = None) -> dict:
    draws = draws if draws is not None else draw_world(params, seed)
    world = World(params, draws)
    policy = make_policy(policy_name, seed, params)
    boundaries = np.r_[0, draws.fork_at, params.sessions]
    regret = top_regret = 0.0
    best_by_session = np.zeros(params.sessions)
    shown_by_session = np.zeros(params.sessions)
    young_rhos: list[float] = []
    next_young_check = params.sessions // YOUNG_CHECKS
    checkpoints: list[tuple[int, float, float]] = []  # (session, q*, q of the top pick)
    pair_hits = pair_total = 0
    held_out_from = int(params.sessions * 0.8)
    started = time.perf_counter()
    for b in range(boundaries.size - 1):
        start, stop = int(boundaries[b]), int(boundaries[b + 1])
        if b > 0:
            if params.forking == "community":
                parent = int(draws.fork_parent_u[b - 1] * world.n)
            else:
                parent = policy.pick_parent()
            world.fork(parent, start)
        policy.refit(world.log)
        if stop <= start:
            continue
        best = world.quality[: world.n].max()
        pick = policy.top_pick()
        checkpoints.append((start, float(best), float(world.quality[pick])))
        slates = policy.choose(stop - start, params.slate)
        valid = slates >= 0
        q = np.where(valid, world.quality[np.maximum(slates, 0)], np.nan)
        slate_mean = np.nanmean(q, axis=1)
        regret += float(np.sum(best - slate_mean))
        best_by_session[start:stop] = best
        shown_by_session[start:stop] = slate_mean
        if start >= next_young_check:
            # Young forks now (few ratings yet): how well does the estimate order them?
            next_young_check += params.sessions // YOUNG_CHECKS
            is_fork = world.log.parent[: world.n] >= 0
            young_now = (rating_counts(world.log) < YOUNG_RATINGS) & is_fork
            if young_now.sum() >= 5:
                young_rhos.append(
                    _spearman(world.quality[: world.n][young_now], policy.estimate()[young_now])
                )
        top_regret += (stop - start) * float(best - world.quality[pick])
        before = world.log.n_ratings
        world.play(start, slates)
        if stop > held_out_from:
            hits, total = _pair_accuracy(world.log, before, policy.estimate(), held_out_from)
            pair_hits += hits
            pair_total += total

    n = world.n
    estimate = policy.estimate()[:n]
    quality = world.quality[:n]
    found_at, lags, censored = _finding(checkpoints, params.sessions)
    return {
        "policy": policy_name,
        "seed": seed,
        "regret": regret,
        "top_regret": top_regret,
        "found_at": found_at,
        "found": found_at < params.sessions,
        "lags": lags,
        "lag_censored": censored,
        "on_top_share": float(
            np.mean([q_top >= best - FOUND_WITHIN for _, best, q_top in checkpoints])
        ),
        "spearman_all": _spearman(quality, estimate),
        "spearman_young": float(np.nanmean(young_rhos)) if young_rhos else float("nan"),
        "pair_accuracy": pair_hits / pair_total if pair_total else float("nan"),
        "final_best": float(quality.max()),
        "mean_shown": float(shown_by_session.mean()),
        "best_by_session": best_by_session,
        "shown_by_session": shown_by_session,
        "ratings": int(world.log.n_ratings),
        "seconds": time.perf_counter() - started,
    }


def _finding(
    checkpoints: list[tuple[int, float, float]], horizon: int
) -> tuple[int, list[int], int]:
    """Time to find the best branch, two ways (checkpoints are the refits, before each batch).

    * found at: the first checkpoint from which on the top pick is within FOUND_WITHIN of q* at
      every later checkpoint (``horizon`` if that never happens).
    * lags: for every new record (a checkpoint where q* rose, i.e. a better sub-agent appeared),
      sessions until the first checkpoint whose top pick is within FOUND_WITHIN of that record's
      q*; a record never matched counts the sessions to the end and is counted as censored."""
    found_at = horizon
    for at, best, q_top in reversed(checkpoints):
        if q_top < best - FOUND_WITHIN:
            break
        found_at = at
    lags, censored, previous_best = [], 0, -np.inf
    for i, (at, best, _) in enumerate(checkpoints):
        if best <= previous_best:
            continue
        previous_best = best
        match = next((c for c in checkpoints[i:] if c[2] >= best - FOUND_WITHIN), None)
        if match is None:
            censored += 1
            lags.append(horizon - at)
        else:
            lags.append(match[0] - at)
    return found_at, lags, censored


def _pair_accuracy(log: Log, before: int, estimate: np.ndarray, since: int) -> tuple[int, int]:
    """Slates in which one user rated both shown items, on one scale, differently: does the
    estimate (fitted before those sessions) order them as the user did?"""
    new = slice(before, log.n_ratings)
    at, user = log.rating_at[new], log.rating_user[new]
    keep = at >= since
    at, user = at[keep], user[keep]
    item, value = log.rating_item[new][keep], log.rating_value[new][keep]
    thumb = log.rating_thumb[new][keep]
    key = at * 1_000_003 + user
    order = np.argsort(key, kind="stable")
    key, item, value, thumb = key[order], item[order], value[order], thumb[order]
    same = np.flatnonzero(key[1:] == key[:-1])
    differ = same[(value[same] != value[same + 1]) & (thumb[same] == thumb[same + 1])]
    if differ.size == 0:
        return 0, 0
    user_prefers_first = value[differ] > value[differ + 1]
    estimate_prefers_first = estimate[item[differ]] > estimate[item[differ + 1]]
    return int(np.sum(user_prefers_first == estimate_prefers_first)), int(differ.size)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 3 or np.ptp(b) == 0 or np.ptp(a) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def offline_estimates(params: WorldParams, seed: int, names: list[str]) -> dict[str, dict]:
    """Every policy's quality estimate fitted on one shared log, collected by showing sub-agents
    uniformly at random and forking uniformly at random: the estimators compared on identical
    data, free of each policy's own exposure choices."""
    shared = WorldParams(**{**asdict(params), "forking": "community"})
    draws = draw_world(shared, seed)
    world = World(shared, draws)
    show = RandomPolicy(seed, 0.0)
    boundaries = np.r_[0, draws.fork_at, shared.sessions]
    for b in range(boundaries.size - 1):
        start, stop = int(boundaries[b]), int(boundaries[b + 1])
        if b > 0:
            world.fork(int(draws.fork_parent_u[b - 1] * world.n), start)
        show.refit(world.log)
        if stop > start:
            world.play(start, show.choose(stop - start, shared.slate))
    quality = world.quality[: world.n]
    young = (rating_counts(world.log) < YOUNG_RATINGS) & (world.log.parent[: world.n] >= 0)
    out = {}
    for name in names:
        policy = make_policy(name, seed, shared)
        policy.refit(world.log)
        estimate = policy.estimate()[: world.n]
        out[name] = {
            "offline_spearman_all": _spearman(quality, estimate),
            "offline_spearman_young": _spearman(quality[young], estimate[young]),
            "offline_young_count": int(young.sum()),
        }
    return out


def run_seed(args: tuple[WorldParams, int, list[str]]) -> list[dict]:
    params, seed, names = args
    draws = draw_world(params, seed)
    rows = [run(params, seed, name, draws) for name in names]
    # One yardstick for all policies of the seed: the best sub-agent that any of their catalogs
    # held at each session. Under policy forking each policy grows its own catalog, and regret
    # against its own best would reward a policy for forking badly.
    common_best = np.max([r.pop("best_by_session") for r in rows], axis=0)
    offline = offline_estimates(params, seed, names)
    for r in rows:
        r["common_regret"] = float(np.sum(common_best - r.pop("shown_by_session")))
        r.update(offline[r["policy"]])
    return rows


def run_offline_seed(args: tuple[WorldParams, int, list[str]]) -> list[dict]:
    params, seed, names = args
    return [
        {"policy": name, "seed": seed, **values}
        for name, values in offline_estimates(params, seed, names).items()
    ]


# --------------------------------------------------------------------------- report
def summarize(results: list[dict], params: WorldParams) -> dict:
    out: dict[str, dict] = {}
    for name in dict.fromkeys(r["policy"] for r in results):
        rows = [r for r in results if r["policy"] == name]

        def stat(key: str, rows=rows) -> tuple[float, float]:
            values = np.array([r.get(key, np.nan) for r in rows], dtype=float)
            values = values[np.isfinite(values)]
            if values.size == 0:
                return float("nan"), float("nan")
            return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0

        out[name] = {
            key: stat(key)
            for key in (
                "regret",
                "common_regret",
                "top_regret",
                "spearman_all",
                "spearman_young",
                "pair_accuracy",
                "final_best",
                "mean_shown",
                "seconds",
                "offline_spearman_all",
                "offline_spearman_young",
                "offline_young_count",
            )
        }
        out[name]["seeds"] = len(rows)
        if "lags" not in rows[0]:
            continue
        out[name]["found_at_median"] = float(np.median([r["found_at"] for r in rows]))
        out[name]["found_seeds"] = int(sum(r["found"] for r in rows))
        all_lags = [lag for r in rows for lag in r["lags"]]
        out[name]["lag_median"] = float(np.median(all_lags)) if all_lags else float("nan")
        out[name]["lag_mean"] = float(np.mean(all_lags)) if all_lags else float("nan")
        out[name]["records"] = len(all_lags)
        out[name]["records_never_found"] = int(sum(r["lag_censored"] for r in rows))
        out[name]["on_top_share"] = stat("on_top_share")
    return out


def print_table(summary: dict, params: WorldParams, title: str) -> None:
    print(f"\n{title}")
    header = (
        f"{'policy':<12} {'regret':>14} {'vs common':>14} {'top regret':>14} {'found at':>13} "
        f"{'lag med/mean':>13} "
        f"{'never':>7} {'on top':>6} {'ρ all':>10} {'ρ young':>10} {'pairs':>5} "
        f"{'final q*':>10} {'q shown':>10}"
    )
    print(header)
    print("-" * len(header))

    def pm(value: tuple[float, float], digits: int = 0) -> str:
        return f"{value[0]:.{digits}f}±{value[1]:.{digits}f}"

    for name, s in summary.items():
        found = f"{s['found_at_median']:.0f} [{s['found_seeds']}/{s['seeds']}]"
        lag = f"{s['lag_median']:.0f}/{s['lag_mean']:.0f}"
        never = f"{s['records_never_found']}/{s['records']}"
        print(
            f"{name:<12} {pm(s['regret']):>14} {pm(s['common_regret']):>14} "
            f"{pm(s['top_regret']):>14} {found:>13} {lag:>13} "
            f"{never:>7} {s['on_top_share'][0]:>6.2f} {pm(s['spearman_all'], 2):>10} "
            f"{pm(s['spearman_young'], 2):>10} {s['pair_accuracy'][0]:>5.2f} "
            f"{pm(s['final_best'], 2):>10} {pm(s['mean_shown'], 2):>10}"
        )


def print_offline_table(summary: dict, title: str) -> None:
    print(f"\n{title}")
    header = f"{'estimator':<12} {'ρ all':>12} {'ρ young':>12} {'young forks':>12}"
    print(header)
    print("-" * len(header))
    for name, s in summary.items():
        rho_all, rho_young = s["offline_spearman_all"], s["offline_spearman_young"]
        print(
            f"{name:<12} {rho_all[0]:>7.2f}±{rho_all[1]:.2f} "
            f"{rho_young[0]:>7.2f}±{rho_young[1]:.2f} {s['offline_young_count'][0]:>12.1f}"
        )


def targets(summary: dict) -> dict:
    """The targets: Sprig's regret at most half the best baseline's (on each regret), and
    its quality estimate's Spearman clearly (here: by at least 0.05) above the mean rating's."""
    baselines = {k: v for k, v in summary.items() if k != "sprig"}
    out: dict = {}
    for key in ("regret", "common_regret"):
        best_name = min(baselines, key=lambda k: baselines[k][key][0])
        ratio = summary["sprig"][key][0] / baselines[best_name][key][0]
        out[key] = {"best_baseline": best_name, "ratio": ratio, "met": bool(ratio <= 0.5)}
    gap = summary["sprig"]["spearman_all"][0] - summary["mean-rating"]["spearman_all"][0]
    out["spearman_gap_over_mean_rating"] = gap
    out["spearman_met"] = bool(gap >= 0.05)
    return out


def evaluate(
    params: WorldParams, seeds: list[int], names: list[str], jobs: int, *, offline_only=False
) -> dict:
    tasks = [(params, seed, names) for seed in seeds]
    work = run_offline_seed if offline_only else run_seed
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            per_seed = list(pool.map(work, tasks))
    else:
        per_seed = [work(t) for t in tasks]
    return summarize([r for rows in per_seed for r in rows], params)


def scale_check(n_nodes: int, seed: int = 0) -> dict:
    """Time and peak memory of building a forest of ``n_nodes`` and one full ``rank`` pass on it
    (with 3 ratings and 5 usage events per node on average), on synthetic data."""
    import resource
    import tracemalloc

    from evolution.ranking import lineage_posterior, usage_stats

    rng = np.random.default_rng(seed)
    n_roots = max(1, n_nodes // 50)
    # Forks attach to an earlier node, favouring recent ones a little: a few deep, bushy lines.
    position = np.arange(n_nodes)
    parent = np.where(
        position < n_roots, -1, (position * rng.random(n_nodes) ** 0.5).astype(np.int64)
    )
    ids = rng.permutation(n_nodes).astype(np.int64) * 3 + 1000
    parent_ids = np.where(parent >= 0, ids[np.maximum(parent, 0)], -1)
    n_users = max(10, n_nodes // 5)
    n_ratings, n_events = 3 * n_nodes, 5 * n_nodes
    ratings = Ratings(
        user_idx=rng.integers(0, n_users, n_ratings),
        item_idx=rng.integers(0, n_nodes, n_ratings),
        value=rng.integers(1, 6, n_ratings).astype(float),
        is_thumb=rng.random(n_ratings) < 0.5,
        age_days=rng.random(n_ratings) * 90,
    )
    ratings = Ratings(
        user_idx=ratings.user_idx,
        item_idx=ratings.item_idx,
        value=np.where(ratings.is_thumb, ratings.value > 3, ratings.value),
        is_thumb=ratings.is_thumb,
        age_days=ratings.age_days,
    )
    events = (
        rng.integers(0, n_nodes, n_events),
        rng.integers(0, n_users, n_events),
        rng.random(n_events) * 60,
    )
    input_bytes = sum(a.nbytes for a in (*vars(ratings).values(), *events))

    tracemalloc.start()
    started = time.perf_counter()
    forest = Forest.from_parents(ids, parent_ids)
    built = time.perf_counter()
    _, build_peak = tracemalloc.get_traced_memory()
    usage = usage_stats(*events, n_nodes)
    used = time.perf_counter()
    scores = rank(forest, ratings, n_users=n_users, usage=usage)
    ranked = time.perf_counter()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Incremental: one tree's worth of change, lineage passes for that root only.
    touched = forest.root[rng.integers(0, n_nodes, 1)]
    again = time.perf_counter()
    rank(forest, ratings, n_users=n_users, usage=usage, previous=scores, roots=touched)
    incremental = time.perf_counter() - again
    # The bare tree passes.
    again = time.perf_counter()
    forest.reduce_up(scores.mean, "max")
    reduce_max = time.perf_counter() - again
    again = time.perf_counter()
    lineage_posterior(
        forest,
        scores.baseline.item_evidence,
        scores.baseline.item_precision,
        prior_mean=scores.prior.prior_mean,
        prior_var=scores.prior.prior_var,
        drift_mean=scores.prior.drift_mean,
        drift_var=scores.prior.drift_var,
    )
    posterior_only = time.perf_counter() - again
    return {
        "nodes": n_nodes,
        "levels": forest.n_levels,
        "ratings": n_ratings,
        "usage_events": n_events,
        "build_forest_s": built - started,
        "usage_stats_s": used - built,
        "rank_s": ranked - used,
        "total_s": ranked - started,
        "incremental_one_root_s": incremental,
        "reduce_up_max_s": reduce_max,
        "lineage_posterior_s": posterior_only,
        "build_forest_peak_mib": build_peak / 2**20,
        "tracemalloc_peak_mib": peak / 2**20,
        "input_arrays_mib": input_bytes / 2**20,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# The world's parameters that are flags (``--leniency-sd`` sets ``leniency_sd``), in order.
WORLD_FLAGS = {
    "users": int,
    "roots": int,
    "categories": int,
    "forks": int,
    "sessions": int,
    "days": float,
    "slate": int,
    "leniency_sd": float,
    "discrimination_sd": float,
    "taste_sd": float,
    "evolvability_sd": float,
    "improve_share": float,
    "broken_share": float,
    "zipf": float,
    "thumb_share": float,
    "young_share": float,
}


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds, 8,000 sessions, 80 forks")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--first-seed", type=int, default=0)
    for name, kind in WORLD_FLAGS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=None)
    parser.add_argument(
        "--baseline-young-share",
        type=float,
        default=None,
        help="give the baselines young-fork slots too (filled at random); default 0",
    )
    parser.add_argument("--no-mnar", action="store_true", help="ratings missing at random")
    parser.add_argument(
        "--forking",
        choices=["policy", "community"],
        default=None,
        help="who picks the parent of each fork (default: the policy under test)",
    )
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--no-sanity", action="store_true", help="skip the sanity case")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (one per seed)")
    parser.add_argument(
        "--scale",
        type=int,
        default=None,
        metavar="NODES",
        help="only measure building a forest of NODES and one full rank pass, then exit",
    )
    return parser.parse_args(argv)


def print_targets(t: dict) -> None:
    for key, label in (("regret", "regret"), ("common_regret", "regret vs common q*")):
        print(
            f"{label}: sprig / best baseline ({t[key]['best_baseline']}) = "
            f"{t[key]['ratio']:.2f} (target ≤ 0.5: {'met' if t[key]['met'] else 'MISSED'})"
        )
    print(
        f"Spearman (all): sprig − mean rating = {t['spearman_gap_over_mean_rating']:+.2f} "
        f"(target ≥ +0.05: {'met' if t['spearman_met'] else 'MISSED'})"
    )


def main(argv: list[str] | None = None) -> dict:
    args = parse_arguments(argv)
    if args.scale is not None:
        measured = scale_check(args.scale)
        for key, value in measured.items():
            print(f"{key:>24}: {value:.3f}" if isinstance(value, float) else f"{key:>24}: {value}")
        print(json.dumps(measured))
        return measured

    overrides = {
        name: getattr(args, name)
        for name in (*WORLD_FLAGS, "baseline_young_share", "forking")
        if getattr(args, name) is not None
    }
    base = {"sessions": 8_000, "forks": 80, "users": 600} if args.quick else {}
    params = WorldParams(**{**base, **overrides, "mnar": not args.no_mnar})
    n_seeds = args.seeds if args.seeds is not None else (3 if args.quick else 10)
    seeds = list(range(args.first_seed, args.first_seed + n_seeds))
    names = [n for n in args.policies.split(",") if n]

    started = time.perf_counter()
    summary = evaluate(params, seeds, names, args.jobs)
    print(f"world: {json.dumps(asdict(params))}")
    print_table(summary, params, f"{len(seeds)} seeds, {params.sessions} sessions, mean±sd")
    result: dict = {"params": asdict(params), "seeds": seeds, "policies": summary}
    if "sprig" in summary and "mean-rating" in summary and len(summary) > 1:
        result["targets"] = targets(summary)
        print_targets(result["targets"])
    print_offline_table(
        summary, "the estimators on one shared log (uniformly random exposure and forking)"
    )
    if not args.no_sanity:
        # The sanity case: without leniency spread and with ratings missing at random,
        # every estimator should order sub-agents about equally well.
        sanity = WorldParams(**{**asdict(params), "leniency_sd": 0.0, "mnar": False})
        sanity_summary = evaluate(sanity, seeds, names, args.jobs, offline_only=True)
        print_offline_table(
            sanity_summary, "sanity: the same, leniency-sd 0 and ratings missing at random"
        )
        result["sanity"] = sanity_summary
    print(
        f"\nfound at: first session from which the top pick stays within {FOUND_WITHIN} of q* at"
        f" every refit [seeds where that happened]; lag: sessions from a new best sub-agent"
        f" appearing to the top pick being within {FOUND_WITHIN} of it (median/mean over all"
        f" such records); never: records never matched; on top: share of refits with the top"
        f" pick within {FOUND_WITHIN} of q*"
    )
    print(f"elapsed {time.perf_counter() - started:.1f}s")
    print(json.dumps(_jsonable(result)))
    return result


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


if __name__ == "__main__":
    main()
