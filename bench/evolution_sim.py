"""A simulated Sprig community with known truth: which policy finds and shows the best branches?

The world: roots in categories with latent quality q ~ N(0, 1) and an evolvability e; each fork
gives q_child = q_parent + e_parent + δ with δ a tweak, an improvement or a break; users with a
leniency b, a discrimination a and a taste per category w, active following a Zipf law. Each
session shows one user a slate of sub-agents; the user's utility for one of them is
s = a·(q + w_category) + b + ε; the user rates it with probability σ(−1 + 0.8|s|)
(missing not at random: people rate what they love or hate), in stars (s cut at ±0.5, ±1.5) or
thumbs (s > 0), uses it with probability σ(s) and, having used it, is still using it a week
later with probability σ(q + 0.3b − 1).

Worlds (--world NAME[,NAME...] or --world all; WORLDS): "default" is the world above; each other
breaks one assumption of Sprig's model, the rest of the world unchanged:
* multiplicative: s = e^b·a·(q + w) + ε, leniency scales marks instead of shifting them;
* skewed: b from a mirrored lognormal (same sd, mean 0): many mildly lenient raters, a long tail
  of harsh ones;
* heavy-tails: ε ~ Student t with 2 degrees of freedom;
* top-marks: 30% of users give the top mark (5 stars, thumbs up) whenever they rate;
* bounded: q = 2·tanh(latent/2), so quality stays inside (−2, 2) around the star cut points
  (±0.5, ±1.5) instead of growing without bound as forks improve (q* ≈ 14 in the full run);
* drift: every user's b moves linearly over the run by −1 on average (sd 0.5 over users);
* rare-jumps: forks are 90% neutral (δ ~ N(0, 0.05)), 3% large gains (N(1.5, 0.3)), 7% breaks,
  and no per-branch evolvability;
* popularity: s += 0.5·log(1 + users who used the sub-agent so far), updated between forks
  (herding: people take and rate well what is already popular).
The default world of a seed is drawn exactly as before these existed (tests/unit/
test_bench_sim.py); --users, --leniency-sd ... apply on top of every world.

A policy decides (a) which sub-agents each session shows and (b) which sub-agent the coding agent
forks next; it sees only what Sprig would see (ratings, uses, retention, the fork tree), never q.
Policies, with their exploration ("explores" column):
* sprig: rater debiasing + lineage posterior + Thompson slates (evolution.explore: draws from
  the posterior with its sd halved, SD_SCALE) with young_share (0.15) of slots reserved for
  young forks; forks by a Thompson draw of what a fork of each would be.
* fair baselines, the same exploration budget on raw mean ratings (common scale, no debiasing,
  no lineage): thompson-mean (Normal posterior per item, Thompson slates with the same
  young_share and spread via evolution.explore.thompson_slates, forks the argmax of a
  posterior draw);
  eps-greedy (ε = young_share: that share of slots, and of forks, go to a uniformly drawn item);
  ucb (UCB1 bonus, young_share of slots to its top young forks, forks its top rated item).
* top: random, most-used, mean rating, Wilson lower bound and Bayesian average show and fork
  their top items, as those schemes are used elsewhere (young-fork slots only with
  --baseline-young-share). They spend no exploration budget, so they are not fair comparisons
  for regret; they are kept as the deployed alternatives.

Modes (--mode same-catalog|each-forks|both): every policy of a seed meets the same users, roots,
session order, noise and fork mutations (common random numbers); only its own choices differ.
* same-catalog: the parent of each fork is drawn uniformly by the world, the same for every
  policy, so all face the same catalog and only the ranking and exposure differ.
* each-forks: each policy picks its parents, so the forking strategy is compared too and each
  policy grows its own catalog.

Figures, per policy: mean±sd over seeds; "±—" when fewer than two seeds gave a number, and
"(k nan)" when k seeds gave none (counted, never silently dropped); the JSON keeps every seed's
value (--per-seed prints them):
* regret: Σ_t (q*_t − mean q of the slate shown at session t), q*_t the best sub-agent existing
  at t in the policy's own catalog. What users lost by being shown something else than the best.
* vs common (each-forks): the same with q*_t the best sub-agent any policy's catalog held at t
  (same seed). Own-catalog regret alone rewards a policy whose forks never improve on anything;
  this one is comparable across policies. In same-catalog it equals regret.
* top regret: Σ_t (q*_t − q of the policy's single top pick at t), own catalog.
* on top: share of refits at which the top pick is within 0.1 of q*.
* ρ all: Spearman correlation of the policy's quality estimate with q, all sub-agents, at the
  end; ρ young: the same over young forks (< 10 ratings) at ten moments of the run, averaged
  (moments with fewer than 5 young forks are skipped; nan: never 5, as happens to a policy that
  rates its young forks quickly). These depend on what the policy chose to expose.
* final q*: quality of the best sub-agent in the policy's catalog at the end; q shown: mean q of
  what the policy showed. (found at, lag: in the JSON, see _finding.)
Then the estimators alone, per world: every policy's estimate fitted on one shared log
(uniformly random exposure and forking), Spearman over all sub-agents and over young forks; and
held-out pairs, which replace the old online "pairs" column (it counted only the pairs a policy
happened to expose, so each policy was scored on different pairs): every estimator is fitted on
the shared log's first 80% of sessions and scored on the same pairs from the rest (one user
rated both items of a slate differently, on one scale): the share it orders as the user did.
Under them, bayes-oracle (bench/sim_oracle.py): the exact posterior mean of each young fork's
quality given everything no estimator can know (the world's parameters, every rater's, the
parent's true quality) and the fork's own ratings: the most an estimator can be expected to get.
Last, a sanity case: the default world without leniency spread and with ratings missing at
random, where every estimator should order sub-agents about equally well.

Targets (overview table): same catalog, Sprig's regret ≤ 0.7× the best fair baseline's; offline
ρ on young forks ≥ 0.1 above the best baseline's (any baseline: the estimators alone). Beside
the latter, "oracle gap": the Bayes oracle's lead over the same baseline. Each lead is the mean
of per-seed differences (both estimators order the same young forks of a seed, about ten) ±
its standard error, and is called met, missed or undecided by where its 95% interval lies
against 0.1: with five seeds a lead of +0.08 is often undecided. "unreachable" when even the
oracle's lead is surely under 0.1 (the JSON adds Sprig's share of that lead). The regret ratio
likewise has a 95% interval, from resampling whole seeds, and is met, missed or undecided
against 0.7.

    python bench/evolution_sim.py [--quick] [--world all] [--mode both] [--seeds N] [--per-seed]
        [--users N] [--roots N] [--forks N] [--sessions N] [--leniency-sd X] [--jobs N] ...

--quick: 5 seeds, 8,000 sessions, 80 forks, 600 users; all worlds and both modes take under
3 minutes on one core (98 s measured alone, 173 s beside other work). The last line is JSON
with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sim_oracle import oracle_quality  # noqa: E402
from bench.sim_policies import (  # noqa: E402
    FAIR_BASELINES,
    POLICIES,
    RandomPolicy,
    make_policy,
    rating_counts,
)
from bench.sim_world import YOUNG_RATINGS, Draws, Log, World, WorldParams, draw_world  # noqa: E402
from evolution.ranking import Ratings, rank  # noqa: E402
from evolution.tree import Forest  # noqa: E402

FOUND_WITHIN = 0.1
YOUNG_CHECKS = 10  # times in a run at which the young forks' ordering is scored
HELD_OUT_FROM = 0.8  # share of sessions before the held-out pairs
REGRET_TARGET = 0.7  # Sprig's regret over the best fair baseline's, same catalog
SPEARMAN_TARGET = 0.1  # Sprig's offline ρ on young forks over the best baseline's
ORACLE = "bayes-oracle"  # the offline row of bench/sim_oracle.py: what the world allows


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
        world.play(start, slates)

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


def _pair_accuracy(log: Log, since: int, estimate: np.ndarray) -> tuple[int, int]:
    """Sessions from ``since`` on in which one user rated both shown items, on one scale,
    differently, both items known to ``estimate`` (fitted before ``since``): how many pairs does
    the estimate order as the user did, out of how many?"""
    at = log.rating_at[log.ratings()]
    keep = (at >= since) & (log.rating_item[log.ratings()] < estimate.size)
    at, user = at[keep], log.rating_user[log.ratings()][keep]
    item, value = log.rating_item[log.ratings()][keep], log.rating_value[log.ratings()][keep]
    thumb = log.rating_thumb[log.ratings()][keep]
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
    data, free of each policy's own exposure choices. Also the held-out pairs: every estimator
    fitted on the log of the first 80% of sessions, scored on the same pairs of the rest."""
    shared = WorldParams(**{**asdict(params), "forking": "community"})
    draws = draw_world(shared, seed)
    world = World(shared, draws)
    show = RandomPolicy(seed, 0.0)
    boundaries = np.r_[0, draws.fork_at, shared.sessions]
    held_out_from = int(shared.sessions * HELD_OUT_FROM)
    before_held_out: dict[str, np.ndarray] = {}
    for b in range(boundaries.size - 1):
        start, stop = int(boundaries[b]), int(boundaries[b + 1])
        if b > 0:
            world.fork(int(draws.fork_parent_u[b - 1] * world.n), start)
        if start >= held_out_from and not before_held_out:
            held_out_from = start
            for name in names:
                policy = make_policy(name, seed, shared)
                policy.refit(world.log)
                before_held_out[name] = policy.estimate()[: world.n].copy()
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
        hits, pairs = _pair_accuracy(world.log, held_out_from, before_held_out[name])
        out[name] = {
            "offline_spearman_all": _spearman(quality, estimate),
            "offline_spearman_young": _spearman(quality[young], estimate[young]),
            "offline_young_count": int(young.sum()),
            "held_out_pairs": hits / pairs if pairs else float("nan"),
            "held_out_pair_count": pairs,
        }
    # The ceiling: how a Bayes oracle that knows the world orders the same young forks.
    oracle = oracle_quality(world, np.flatnonzero(young))
    out[ORACLE] = {
        "offline_spearman_all": float("nan"),  # young forks only: the rest need no oracle
        "offline_spearman_young": _spearman(quality[young], oracle),
        "offline_young_count": int(young.sum()),
        "held_out_pairs": float("nan"),
        "held_out_pair_count": 0,
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
    for r in rows:
        r["common_regret"] = float(np.sum(common_best - r.pop("shown_by_session")))
    return rows


def run_offline_seed(args: tuple[WorldParams, int, list[str]]) -> list[dict]:
    params, seed, names = args
    return [
        {"policy": name, "seed": seed, **values}
        for name, values in offline_estimates(params, seed, names).items()
    ]


# --------------------------------------------------------------------------- report
ONLINE_FIGURES = (
    "regret",
    "common_regret",
    "top_regret",
    "on_top_share",
    "spearman_all",
    "spearman_young",
    "final_best",
    "mean_shown",
    "seconds",
)
OFFLINE_FIGURES = (
    "offline_spearman_all",
    "offline_spearman_young",
    "offline_young_count",
    "held_out_pairs",
    "held_out_pair_count",
)


def figure(values: list[float]) -> dict:
    """Mean and sd over the seeds whose figure is a number, with how many were not (NaN: e.g. a
    constant estimate, or fewer than 5 young forks); the per-seed values are kept. The sd of one
    value is NaN, not 0."""
    array = np.array(values, dtype=float)
    finite = array[np.isfinite(array)]
    return {
        "mean": float(finite.mean()) if finite.size else float("nan"),
        "sd": float(finite.std(ddof=1)) if finite.size > 1 else float("nan"),
        "n": int(finite.size),
        "nan": int(array.size - finite.size),
        "per_seed": [float(v) for v in array],
    }


def summarize(results: list[dict], keys: tuple[str, ...]) -> dict:
    out: dict[str, dict] = {}
    for name in dict.fromkeys(r["policy"] for r in results):
        rows = sorted((r for r in results if r["policy"] == name), key=lambda r: r["seed"])
        out[name] = {key: figure([r[key] for r in rows]) for key in keys}
        out[name]["seeds"] = [r["seed"] for r in rows]
        if "lags" not in rows[0]:
            continue
        out[name]["found_at_median"] = float(np.median([r["found_at"] for r in rows]))
        out[name]["found_seeds"] = int(sum(r["found"] for r in rows))
        all_lags = [lag for r in rows for lag in r["lags"]]
        out[name]["lag_median"] = float(np.median(all_lags)) if all_lags else float("nan")
        out[name]["lag_mean"] = float(np.mean(all_lags)) if all_lags else float("nan")
        out[name]["records"] = len(all_lags)
        out[name]["records_never_found"] = int(sum(r["lag_censored"] for r in rows))
    return out


def cell(f: dict, digits: int = 0) -> str:
    """mean±sd; "±—" when fewer than two seeds gave a number; "(k nan)" when k seeds gave none."""
    if f["n"] == 0:
        return f"nan ({f['nan']} nan)"
    sd = f"{f['sd']:.{digits}f}" if f["n"] > 1 else "—"
    return f"{f['mean']:.{digits}f}±{sd}" + (f" ({f['nan']} nan)" if f["nan"] else "")


def exploration(name: str) -> str:
    if name == "sprig":
        return "sprig"
    return "fair" if name in FAIR_BASELINES else "top"


def print_table(summary: dict, mode: str, title: str) -> None:
    print(f"\n{title}")
    columns = [("regret", "regret", 0)]
    if mode == "each-forks":
        columns.append(("common_regret", "vs common", 0))
    columns += [
        ("top_regret", "top regret", 0),
        ("on_top_share", "on top", 2),
        ("spearman_all", "ρ all", 2),
        ("spearman_young", "ρ young", 2),
        ("final_best", "final q*", 2),
        ("mean_shown", "q shown", 2),
    ]
    header = f"{'policy':<14}{'explores':<9}" + "".join(f"{label:>20}" for _, label, _ in columns)
    print(header)
    print("-" * len(header))
    for name, s in summary.items():
        cells = "".join(f"{cell(s[key], digits):>20}" for key, _, digits in columns)
        print(f"{name:<14}{exploration(name):<9}{cells}")


def print_offline_table(summary: dict, title: str) -> None:
    print(f"\n{title}")
    header = (
        f"{'estimator':<14}{'ρ all':>20}{'ρ young':>20}{'held-out pairs':>20}"
        f"{'pairs/seed':>12}{'young forks':>12}"
    )
    print(header)
    print("-" * len(header))
    for name, s in summary.items():
        if name == ORACLE:
            young = cell(s["offline_spearman_young"], 2)
            print(f"{name:<14}{'—':>20}{young:>20}{'—':>20}{'—':>12}{'':>12}")
            continue
        print(
            f"{name:<14}{cell(s['offline_spearman_all'], 2):>20}"
            f"{cell(s['offline_spearman_young'], 2):>20}{cell(s['held_out_pairs'], 3):>20}"
            f"{s['held_out_pair_count']['mean']:>12.0f}{s['offline_young_count']['mean']:>12.1f}"
        )


def print_per_seed(summary: dict, keys: tuple[str, ...]) -> None:
    for key in keys:
        print(f"  per seed, {key}:")
        for name, s in summary.items():
            values = " ".join(f"{v:10.3g}" for v in s[key]["per_seed"])
            print(f"    {name:<14}{values}")


def regret_target(summary: dict) -> dict | None:
    """Same catalog: Sprig's regret at most 0.7× the best fair baseline's."""
    fair = [name for name in FAIR_BASELINES if name in summary]
    if "sprig" not in summary or not fair:
        return None
    best = min(fair, key=lambda name: summary[name]["regret"]["mean"])
    ratio = summary["sprig"]["regret"]["mean"] / summary[best]["regret"]["mean"]
    low, high = paired_ratio_interval(
        summary["sprig"]["regret"]["per_seed"], summary[best]["regret"]["per_seed"]
    )
    return {
        "best_fair_baseline": best,
        "ratio": ratio,
        "ratio_interval": [low, high],
        "met": bool(ratio <= REGRET_TARGET),
        "verdict": interval_verdict(ratio, low, high, REGRET_TARGET, at_most=True),
    }


RESAMPLES = 2000


def paired_ratio_interval(mine: list[float], theirs: list[float]) -> tuple[float, float]:
    """95% interval of Σ mine / Σ theirs over seeds, by resampling whole seeds (both policies
    played the same world in a seed, so a seed is drawn with both its figures). NaN without
    two seeds where both are numbers."""
    a, b = np.array(mine, dtype=float), np.array(theirs, dtype=float)
    both = np.isfinite(a) & np.isfinite(b)
    a, b = a[both], b[both]
    if a.size < 2:
        return float("nan"), float("nan")
    draws = np.random.default_rng(0).integers(0, a.size, size=(RESAMPLES, a.size))
    ratios = a[draws].sum(axis=1) / b[draws].sum(axis=1)
    low, high = np.quantile(ratios, [0.025, 0.975])
    return float(low), float(high)


def spearman_target(offline: dict) -> dict | None:
    """Offline, young forks: Sprig's Spearman at least 0.1 above the best baseline's; beside it
    the Bayes oracle's lead over the same baseline (``ceiling_gap``), what the world allows."""
    others = [name for name in offline if name not in ("sprig", ORACLE)]
    if "sprig" not in offline or not others:
        return None
    rho = {name: offline[name]["offline_spearman_young"]["mean"] for name in offline}
    best = max(others, key=lambda name: -np.inf if math.isnan(rho[name]) else rho[name])
    gap = rho["sprig"] - rho[best]
    ceiling = rho.get(ORACLE, float("nan")) - rho[best]
    lead = paired_lead(offline, "sprig", best)
    ceiling_lead = paired_lead(offline, ORACLE, best) if ORACLE in offline else None
    return {
        "best_baseline": best,
        "gap": gap,
        "gap_se": lead["se"],
        "gap_seeds": lead["n"],
        "met": bool(gap >= SPEARMAN_TARGET),
        "verdict": lead_verdict(lead, gap),
        "ceiling_gap": ceiling,
        "ceiling_gap_se": ceiling_lead["se"] if ceiling_lead else float("nan"),
        "reachable": bool(ceiling >= SPEARMAN_TARGET),
        "ceiling_verdict": lead_verdict(ceiling_lead, ceiling) if ceiling_lead else "unknown",
        "share_of_ceiling": gap / ceiling if ceiling > 0 else float("nan"),
    }


def paired_lead(offline: dict, leader: str, other: str) -> dict:
    """The leader's offline ρ on young forks minus the other's, seed by seed: both order the
    same ten or so young forks of a seed, so the difference varies far less than either ρ, and
    its standard error says how far the mean lead can be trusted. Seeds where either is NaN are
    left out (counted in ``n``'s shortfall)."""
    mine = np.array(offline[leader]["offline_spearman_young"]["per_seed"], dtype=float)
    theirs = np.array(offline[other]["offline_spearman_young"]["per_seed"], dtype=float)
    both = np.isfinite(mine) & np.isfinite(theirs)
    differences = mine[both] - theirs[both]
    n = int(differences.size)
    se = float(differences.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    return {"mean": float(differences.mean()) if n else float("nan"), "se": se, "n": n}


def lead_verdict(lead: dict, gap: float) -> str:
    """A ρ-young lead (``paired_lead``) against SPEARMAN_TARGET: judged on the paired mean ±
    1.96 standard errors; with under two paired seeds, ``gap`` (the means' difference) alone."""
    half = 1.96 * lead["se"]
    return interval_verdict(gap, lead["mean"] - half, lead["mean"] + half, SPEARMAN_TARGET)


def interval_verdict(
    point: float, low: float, high: float, target: float, *, at_most: bool = False
) -> str:
    """ "met" or "missed" when the 95% interval [low, high] lies on one side of ``target``
    (a figure to reach, or with ``at_most`` one to stay under); "undecided" when it holds the
    target: more seeds are needed before either can be said. Without an interval (NaN), the
    point figure decides."""
    if not (math.isfinite(low) and math.isfinite(high)):
        low = high = point
    if at_most:
        return "met" if high <= target else "missed" if low > target else "undecided"
    return "met" if low >= target else "missed" if high < target else "undecided"


def evaluate(params: WorldParams, seeds: list[int], names: list[str], jobs: int, work) -> list:
    tasks = [(params, seed, names) for seed in seeds]
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            per_seed = list(pool.map(work, tasks))
    else:
        per_seed = [work(t) for t in tasks]
    return [r for rows in per_seed for r in rows]


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


# The world's parameters that are flags (``--leniency-sd`` sets ``leniency_sd``), in order. They
# apply on top of every world preset.
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

# Named worlds: WorldParams fields over the default world. Each breaks one assumption of Sprig's
# model (additive rater offsets, normal noise, an open rating scale, unbounded quality, raters
# constant in time, forks that drift per branch, ratings independent of popularity).
WORLDS: dict[str, dict] = {
    "default": {},
    "multiplicative": {"leniency_form": "multiplicative"},
    "skewed": {"leniency_form": "skewed"},
    "heavy-tails": {"noise_df": 2.0},
    "top-marks": {"top_marks_share": 0.3},
    "bounded": {"quality_bound": 2.0},
    "drift": {"leniency_drift": -1.0, "leniency_drift_sd": 0.5},
    "rare-jumps": {
        "improve_share": 0.03,
        "broken_share": 0.07,
        "fork_step_mean": (0.0, 1.5, -1.5),
        "fork_step_sd": (0.05, 0.3, 0.5),
        "evolvability_sd": 0.0,
        "evolvability_inherit_sd": 0.0,
    },
    "popularity": {"popularity": 0.5},
}
MODES = {"same-catalog": "community", "each-forks": "policy"}  # mode: WorldParams.forking


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="5 seeds, 8,000 sessions, 80 forks, 600 users"
    )
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--first-seed", type=int, default=0)
    for name, kind in WORLD_FLAGS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=None)
    parser.add_argument(
        "--baseline-young-share",
        type=float,
        default=None,
        help="give the top-item baselines young-fork slots too (filled at random); default 0",
    )
    parser.add_argument("--no-mnar", action="store_true", help="ratings missing at random")
    parser.add_argument(
        "--world",
        "--worlds",
        default="default",
        help=f"comma-separated world presets, or all: {','.join(WORLDS)}",
    )
    parser.add_argument(
        "--mode",
        choices=[*MODES, "both"],
        default="both",
        help="same-catalog: a fixed rule forks, the same for every policy (ranking and exposure"
        " compared); each-forks: each policy picks its parents (forking strategy compared)",
    )
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--per-seed", action="store_true", help="print per-seed regret and ρ")
    parser.add_argument("--no-sanity", action="store_true", help="skip the sanity case")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (one per seed)")
    parser.add_argument(
        "--scale",
        type=int,
        default=None,
        metavar="NODES",
        help="only measure building a forest of NODES and one full rank pass, then exit",
    )
    args = parser.parse_args(argv)
    args.world = list(WORLDS) if args.world == "all" else args.world.split(",")
    unknown = [name for name in args.world if name not in WORLDS]
    if unknown:
        parser.error(f"unknown world {','.join(unknown)}; known: {','.join(WORLDS)}")
    return args


def fair_ratio(summary: dict, key: str) -> float:
    fair = [name for name in FAIR_BASELINES if name in summary]
    if "sprig" not in summary or not fair:
        return float("nan")
    return summary["sprig"][key]["mean"] / min(summary[name][key]["mean"] for name in fair)


def print_overview(result: dict) -> None:
    print(
        f"\ntargets: same catalog, Sprig's regret ≤ {REGRET_TARGET}× the best fair baseline's;"
        f" offline ρ on young forks ≥ +{SPEARMAN_TARGET} over the best baseline's"
    )
    header = (
        f"{'world':<16}{'same-catalog regret':>44}{'offline ρ young gap':>44}"
        f"{'oracle gap':>28}{'each-forks regret / vs common':>32}"
    )
    print(header)
    print("-" * len(header))
    for world, entry in result["worlds"].items():
        same, spearman = entry.get("regret_target"), entry.get("spearman_target")
        regret = (
            f"{same['ratio']:.3f} ({same['ratio_interval'][0]:.2f}–{same['ratio_interval'][1]:.2f})"
            f" vs {same['best_fair_baseline']} {same['verdict']}"
            if same
            else "—"
        )
        gap = (
            f"{spearman['gap']:+.3f}±{spearman['gap_se']:.3f} vs {spearman['best_baseline']} "
            f"{spearman['verdict']}"
            if spearman
            else "—"
        )
        ceiling = (
            f"{spearman['ceiling_gap']:+.3f}±{spearman['ceiling_gap_se']:.3f} "
            + {"met": "reachable", "missed": "unreachable"}.get(
                spearman["ceiling_verdict"], "undecided"
            )
            if spearman and math.isfinite(spearman["ceiling_gap"])
            else "—"
        )
        each = entry["modes"].get("each-forks")
        each_forks = (
            f"{fair_ratio(each['policies'], 'regret'):.2f} / "
            f"{fair_ratio(each['policies'], 'common_regret'):.2f}"
            if each
            else "—"
        )
        print(f"{world:<16}{regret:>44}{gap:>44}{ceiling:>28}{each_forks:>32}")


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
        for name in (*WORLD_FLAGS, "baseline_young_share")
        if getattr(args, name) is not None
    }
    base = {"sessions": 8_000, "forks": 80, "users": 600} if args.quick else {}
    n_seeds = args.seeds if args.seeds is not None else (5 if args.quick else 10)
    seeds = list(range(args.first_seed, args.first_seed + n_seeds))
    names = [n for n in args.policies.split(",") if n]
    modes = list(MODES) if args.mode == "both" else [args.mode]

    started = time.perf_counter()
    result: dict = {"seeds": seeds, "policies": names, "worlds": {}}
    for world_name in args.world:
        params = WorldParams(
            **{**base, **WORLDS[world_name], **overrides, "mnar": not args.no_mnar}
        )
        entry: dict = {"params": asdict(params), "modes": {}}
        print(f"\n=== world {world_name}: {json.dumps(_jsonable(asdict(params)))}")
        for mode in modes:
            rows = evaluate(replace(params, forking=MODES[mode]), seeds, names, args.jobs, run_seed)
            summary = summarize(rows, ONLINE_FIGURES)
            print_table(
                summary,
                mode,
                f"{world_name}, {mode}: {len(seeds)} seeds, {params.sessions} sessions, "
                f"mean±sd over seeds",
            )
            if args.per_seed:
                print_per_seed(summary, ("regret", "spearman_young"))
            entry["modes"][mode] = {"policies": summary}
            if mode == "same-catalog":
                entry["regret_target"] = regret_target(summary)
        offline = summarize(
            evaluate(params, seeds, names, args.jobs, run_offline_seed), OFFLINE_FIGURES
        )
        print_offline_table(
            offline,
            f"{world_name}: the estimators on one shared log (uniformly random exposure and"
            f" forking); held-out pairs: fitted on the first {HELD_OUT_FROM:.0%} of sessions",
        )
        if args.per_seed:
            print_per_seed(offline, ("offline_spearman_young",))
        entry["offline"] = offline
        entry["spearman_target"] = spearman_target(offline)
        result["worlds"][world_name] = entry
    if not args.no_sanity:
        # The sanity case: without leniency spread and with ratings missing at random,
        # every estimator should order sub-agents about equally well.
        sanity = WorldParams(**{**base, **overrides, "leniency_sd": 0.0, "mnar": False})
        sanity_summary = summarize(
            evaluate(sanity, seeds, names, args.jobs, run_offline_seed), OFFLINE_FIGURES
        )
        print_offline_table(
            sanity_summary, "sanity: default world, leniency-sd 0 and ratings missing at random"
        )
        result["sanity"] = sanity_summary
    print_overview(result)
    print(
        "\nexplores: sprig = Thompson on its posterior (sd scaled by evolution.explore.SD_SCALE)"
        " with young_share of slots for young forks;"
        " fair = the same budget on raw means; top = shows and forks its top item (young slots"
        " only with --baseline-young-share). (k nan): seeds whose figure was not a number,"
        " counted, not averaged; ±— : fewer than two seeds gave a number"
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
