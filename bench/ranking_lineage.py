"""Full ranking runs against lineage runs at 1,000,000 sub-agents, 1% of families changed.

One synthetic catalog (``bench/evolution_scale.py``'s: 10% roots, wide trees with a long tail
of depth, 5 ratings and 5 usage days per sub-agent), then, in the same process and run:

* full, cold: what the first run computes (``market.ranking.services.compute``: rater fit from
  scratch, lineage posterior with its censored rounds, branch values, usage, trending);
* full, warm: what the daily full run computes (rater fit warm-started from stored offsets);
* then 1% of the root families (and every sub-agent in them) get new ratings and a new fork,
  and a lineage run scores just those families with the full run's stored fit
  (``compute(..., fit=...)`` over what ``load_inputs(..., roots)`` would read);
* and, as its check, the whole catalog scored with that same fit: the lineage run's figures
  must equal its figures for the changed families bit for bit. How far a fresh refit would
  move them (the global fit drifting with the new 1%) is printed too;
* the personal taste fit a full run makes after its scores are committed
  (``market.ranking.services.taste_of`` on the warm run): weekly, λ chosen on a tenth of the
  ratings set aside; daily in between, λ kept (20, the middle of the path, whatever was
  chosen: the cost of its sweeps does not depend on it) and at most ``PATH_SWEEPS`` sweeps.
  The run starts them from random factors, where a deployment starts from the last ones and
  may stop sooner: the daily figure is an upper bound.

Only the computation is timed here, not the database's reads and writes (a lineage run reads
and writes the changed families' rows only, by ``root_id``; a full run everything).

    python bench/ranking_lineage.py [--quick] [--subagents N] [--changed 0.01] [--seed S]

Target: the full run at 1M under 5 s. Ratios are against the full warm run of the same
process. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_FULL_SECONDS_1M = 5.0
NEW_RATINGS_PER_CHANGED_SUBAGENT = 2


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def with_changes(inputs, roots: np.ndarray, seed: int):
    """``inputs`` plus, in the families of ``roots``, a new fork of each root and two new
    ratings of every sub-agent (the new fork included)."""
    from evolution.ranking import Ratings
    from evolution.tree import Forest
    from market.ranking.services import RankingInputs, numbered_by_level

    rng = np.random.default_rng(seed)
    forest = inputs.forest
    new_ids = forest.ids.max() + 1 + np.arange(roots.size)
    ids = np.r_[forest.ids, new_ids]
    parent_ids = np.r_[
        np.where(forest.parent >= 0, forest.ids[np.maximum(forest.parent, 0)], -1),
        forest.ids[roots],
    ]
    grown = Forest.from_parents(ids, parent_ids)
    changed = np.r_[forest.nodes_of_roots(roots), forest.n + np.arange(roots.size)]
    items = np.repeat(changed, NEW_RATINGS_PER_CHANGED_SUBAGENT)
    users = rng.integers(0, inputs.user_ids.size, items.size)
    ratings = inputs.ratings
    return numbered_by_level(
        RankingInputs(
            forest=grown,
            eligible=np.r_[inputs.eligible, np.ones(roots.size, bool)],
            item_age_days=np.r_[inputs.item_age_days, np.zeros(roots.size)],
            ratings=Ratings(
                user_idx=np.r_[ratings.user_idx, users],
                item_idx=np.r_[ratings.item_idx, items],
                value=np.r_[ratings.value, rng.integers(1, 6, items.size).astype(np.float64)],
                is_thumb=np.r_[ratings.is_thumb, np.zeros(items.size, bool)],
                age_days=np.r_[ratings.age_days, np.zeros(items.size)],
            ),
            user_ids=inputs.user_ids,
            usage_item=inputs.usage_item,
            usage_user=inputs.usage_user,
            usage_age=inputs.usage_age,
            watermark={},
        )
    )


def families_only(inputs, roots: np.ndarray):
    """What a lineage run reads for ``roots``: their sub-agents (numbered as load_inputs numbers
    them), their ratings in the catalog's order, their usage days, with the user ids they name;
    and the index in ``inputs`` of each of its sub-agents."""
    from evolution.ranking import Ratings
    from evolution.tree import Forest
    from market.ranking.services import RankingInputs, numbered_by_level

    forest = inputs.forest
    nodes = forest.nodes_of_roots(roots)
    nodes = nodes[np.argsort(forest.ids[nodes])]  # read in id order
    parent = forest.parent[nodes]
    part = Forest.from_parents(
        forest.ids[nodes], np.where(parent >= 0, forest.ids[np.maximum(parent, 0)], -1)
    )
    local = np.full(forest.n, -1)
    local[nodes] = np.arange(nodes.size)
    ratings = inputs.ratings
    keep = local[ratings.item_idx] >= 0
    user_ids, user_idx = np.unique(inputs.user_ids[ratings.user_idx[keep]], return_inverse=True)
    used = local[inputs.usage_item] >= 0
    part_inputs = numbered_by_level(
        RankingInputs(
            forest=part,
            eligible=inputs.eligible[nodes],
            item_age_days=inputs.item_age_days[nodes],
            ratings=Ratings(
                user_idx=user_idx,
                item_idx=local[ratings.item_idx[keep]],
                value=ratings.value[keep],
                is_thumb=ratings.is_thumb[keep],
                age_days=ratings.age_days[keep],
            ),
            user_ids=user_ids,
            usage_item=local[inputs.usage_item[used]],
            usage_user=inputs.usage_user[used],
            usage_age=inputs.usage_age[used],
            watermark={},
            roots=forest.ids[roots].tolist(),
        )
    )
    return part_inputs, forest.index_of(part_inputs.forest.ids)


def figures(scores) -> dict[str, np.ndarray]:
    return {
        "mean": scores.mean,
        "sd": scores.sd,
        "display": scores.display,
        "branch_value": scores.branch_value,
        "fork_gain": scores.fork_gain,
        "p_descendant_better": scores.p_descendant_better,
        "rising": scores.rising,
        "usage_score": scores.usage.score,
        "trending": scores.usage.trending,
    }


def measure(n: int, changed_share: float, seed: int) -> dict:
    from bench.evolution_scale import synthetic_inputs
    from market.ranking.services import StoredFit, compute, taste_of

    compute(synthetic_inputs(300, seed), {}, seed=seed)  # first-call costs are not the runs'
    inputs, build_seconds = timed(lambda: synthetic_inputs(n, seed))
    cold, cold_seconds = timed(lambda: compute(inputs, {}, seed=seed))
    offsets = dict(zip(inputs.user_ids.tolist(), cold.baseline.user_offset.tolist(), strict=True))
    warm, warm_seconds = timed(lambda: compute(inputs, offsets, seed=seed))
    _taste, taste_seconds = timed(lambda: taste_of(inputs, warm))
    _daily, daily_taste_seconds = timed(lambda: taste_of(inputs, warm, reg=20.0))
    stored = StoredFit(fit=replace(warm.fit, user_offset=np.zeros(0)),
                       retention_rate=warm.usage.retention_rate)  # fmt: skip
    offsets = dict(zip(inputs.user_ids.tolist(), warm.baseline.user_offset.tolist(), strict=True))

    rng = np.random.default_rng(seed + 1)
    all_roots = inputs.forest.roots
    roots = np.sort(rng.choice(all_roots, max(1, int(changed_share * all_roots.size)), False))
    changed = with_changes(inputs, roots, seed + 2)
    changed_roots = changed.forest.index_of(inputs.forest.ids[roots])  # numbered anew
    (part, nodes), read_seconds = timed(lambda: families_only(changed, changed_roots))
    lineage, lineage_seconds = timed(lambda: compute(part, offsets, seed=seed, fit=stored))
    pinned, pinned_seconds = timed(lambda: compute(changed, offsets, seed=seed, fit=stored))
    refit = compute(changed, offsets, seed=seed)

    whole, alone = figures(pinned), figures(lineage)
    equal = {
        name: bool(np.array_equal(alone[name], whole[name][nodes], equal_nan=True))
        for name in whole
    }
    best_whole = pinned.best_descendant[nodes]
    best_alone = np.where(
        lineage.best_descendant >= 0, nodes[np.maximum(lineage.best_descendant, 0)], -1
    )
    equal["best_descendant"] = bool(np.array_equal(best_alone, best_whole))
    drift = float(np.max(np.abs(refit.mean[nodes] - lineage.mean)))
    return {
        "n": n,
        "ratings": int(inputs.ratings.item_idx.size),
        "families": int(all_roots.size),
        "changed_families": int(roots.size),
        "changed_subagents": int(nodes.size),
        "build_inputs_s": round(build_seconds, 3),
        "full_cold_s": round(cold_seconds, 3),
        "full_warm_s": round(warm_seconds, 3),
        "taste_weekly_s": round(taste_seconds, 3),
        "taste_daily_s": round(daily_taste_seconds, 3),
        "lineage_read_s": round(read_seconds, 3),
        "lineage_s": round(lineage_seconds, 3),
        "pinned_full_s": round(pinned_seconds, 3),
        "lineage_equals_full_with_same_fit": equal,
        "max_quality_shift_from_refit": round(drift, 6),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 sub-agents")
    parser.add_argument("--subagents", type=int, default=None)
    parser.add_argument("--changed", type=float, default=0.01, help="share of families changed")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    n = args.subagents or (100_000 if args.quick else 1_000_000)
    code = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    print(
        f"ranking lineage bench ({code}): {n:,} sub-agents, "
        f"{args.changed:.0%} of families changed\n"
    )
    r = measure(n, args.changed, args.seed)
    load = os.getloadavg()[0]

    rows = [
        ("full run, cold fit", r["full_cold_s"], r["n"]),
        ("full run, warm fit (daily)", r["full_warm_s"], r["n"]),
        ("taste fit, weekly (choosing λ)", r["taste_weekly_s"], r["n"]),
        ("taste fit, daily (λ kept)", r["taste_daily_s"], r["n"]),
        ("lineage run (changed families)", r["lineage_s"], r["changed_subagents"]),
        ("whole catalog with the same fit", r["pinned_full_s"], r["n"] + r["changed_families"]),
    ]
    header = f"{'run':<34} {'seconds':>8} {'sub-agents':>11} {'x full warm':>11}"
    print(header)
    print("-" * len(header))
    for name, seconds, scored in rows:
        print(f"{name:<34} {seconds:>8.3f} {scored:>11,} {seconds / r['full_warm_s']:>11.3f}")
    print(
        f"\n{r['changed_families']:,} of {r['families']:,} families changed "
        f"({r['changed_subagents']:,} sub-agents); cutting them out of the catalog's arrays "
        f"took {r['lineage_read_s']:.3f} s (a database reads them by root_id instead)"
    )
    equal = r["lineage_equals_full_with_same_fit"]
    checks_passed = all(equal.values())
    print(
        "lineage run equals the whole catalog scored with the same fit, every figure: "
        f"{'yes' if checks_passed else 'NO: ' + ', '.join(k for k, v in equal.items() if not v)}"
    )
    print(
        f"a fresh refit would move those families' quality by at most "
        f"{r['max_quality_shift_from_refit']:.2g} (rating sd units) until the next full run"
    )
    target_met = None
    if n >= 1_000_000:
        target_met = r["full_warm_s"] < TARGET_FULL_SECONDS_1M
        print(
            f"target: full run at 1M under {TARGET_FULL_SECONDS_1M:.0f} s -> "
            f"{'MET' if target_met else 'NOT MET'} ({r['full_warm_s']:.2f} s warm, "
            f"{r['full_cold_s']:.2f} s cold)"
        )
    cpus = os.cpu_count() or 1
    if load > cpus:
        print(
            f"load average {load:.1f} on {cpus} CPUs: other processes competed, figures are noisy"
        )
    print(f"checks: {'all passed' if checks_passed else 'FAILED'}")
    print(
        json.dumps(
            {
                "bench": "ranking_lineage",
                "code": code,
                **r,
                "lineage_over_full_warm": round(r["lineage_s"] / r["full_warm_s"], 4),
                "target_full_seconds_1m": TARGET_FULL_SECONDS_1M,
                "target_met": target_met,
                "loadavg_1m": round(load, 2),
                "checks_passed": checks_passed,
            }
        )
    )


if __name__ == "__main__":
    main()
