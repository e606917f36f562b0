"""Reward-dataset export: throughput and memory on 10 million ratings, and accuracy on truth.

Three parts, one run:

1. **Accuracy** on the evolution simulator's world (bench/evolution_sim.py: latent quality q,
   raters with leniency, ratings missing not at random), sub-agents shown uniformly at random:
   the share of exported pairs whose ``chosen`` truly has the higher q (label accuracy), and the
   Spearman correlation of the scalar reward with q, each beside what raw mean ratings give
   (the same pairs ordered by raw mean; raw-mean pairs picked by a two-sample z test at the
   same confidence; Spearman of the raw mean).
2. **Coverage and accuracy over every candidate pair**, not only the confident ones: all the
   export's candidate pairs (parent and child, siblings, co-rated; no confidence cut) ordered
   by the reward model's P(chosen better), and beside them the same pairs ordered by a
   two-sample z test on raw mean ratings; the share ordered right among the most confident
   5%, 10%, … 100% of each. In the default world, in a sparse one (a fifth of the sessions)
   and in that sparse one shown by popularity (the most used first, 15% of slots for young
   forks), where most versions have a few ratings from an uneven audience.
3. **Throughput**: a synthetic catalog (a fork forest of versions, raters with leniency) with
   N feedback rows (10 million; --quick: 1 million) exported end to end by feedback.export
   (debiasing, lineage posterior, pair selection, pseudonyms, Parquet shards of every kind,
   SHA-256 of every file) against pyarrow writing the same ``ratings`` table in one
   ``write_table`` call, in the same run. Each side runs in a child process of its own so that
   its peak memory (ru_maxrss) is its own. Rates are feedback rows per second; the ratio is
   ours / pyarrow's (target ≥ 1/2); peak memory target < 2 GiB.

    python bench/export.py [--quick] [--ratings N] [--seeds N] [--repeat R]

The last line is JSON with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.special import ndtr
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sim_policies import MostUsedPolicy, RandomPolicy  # noqa: E402
from bench.sim_world import World, WorldParams, draw_world  # noqa: E402
from feedback import rewards  # noqa: E402
from feedback.export import (  # noqa: E402
    RATINGS_SCHEMA,
    CatalogArrays,
    Comment,
    ExportParameters,
    FeedbackColumns,
    RewardExport,
)
from feedback.rewards import VersionText  # noqa: E402
from feedback.scrub import Scrubber  # noqa: E402
from market.catalog.bundles import canonical_bytes  # noqa: E402

CATEGORIES = ("diet", "fitness", "mood", "sleep", "hydration")


# --------------------------------------------------------------------------- text
class SyntheticTexts:
    """A ``TextSource`` that writes a small bundle per version (canonical JSON, as stored)."""

    def __init__(self, catalog: CatalogArrays, *, file_bytes: int = 600) -> None:
        self.catalog = catalog
        self.index = {int(v): i for i, v in enumerate(catalog.version_id)}
        # The bundle's canonical JSON (market.catalog.bundles) with the version id as a placeholder:
        # reading a stored bundle is a decompression, not a serialization.
        body = ("// version @VID@\n" * (file_bytes // 16 + 1))[:file_bytes]
        manifest = {"name": "App @VID@", "entry": "index.html", "scopes": [], "hosts": []}
        files = {"index.html": "<title>App @VID@</title>", "app.js": body}
        self._template = canonical_bytes(manifest, files).decode()

    def versions(self, version_ids: Sequence[int]) -> dict[int, VersionText]:
        out = {}
        for vid in version_ids:
            i = self.index[int(vid)]
            parent = int(self.catalog.parent_version_id[i])
            category = self.catalog.categories[int(self.catalog.category[i])]
            out[int(vid)] = VersionText(
                version_id=int(vid),
                number=1,
                category=category,
                title=f"App {vid}",
                summary=f"A {category} helper, version {vid}.",
                description="",
                completion=self._template.replace("@VID@", str(vid)),
                fork_request=f"make {parent} better" if parent >= 0 else None,
                parent_title=f"App {parent}" if parent >= 0 else None,
                parent_summary=f"A {category} helper, version {parent}." if parent >= 0 else None,
                is_fork=parent >= 0,
            )
        return out

    def comments(self, feedback_ids: Sequence[int]) -> dict[int, Comment]:
        return {}

    def comment_scrubber(self) -> Scrubber:
        return Scrubber()


# --------------------------------------------------------------------------- simulator inputs
def simulated_world(seed: int, exposure: str = "uniform", **overrides) -> World:
    """The simulator's world with forks of uniformly drawn parents and sub-agents shown
    uniformly at random (``exposure="uniform"``: an offline setting, no policy's own choices
    in the data) or by popularity (``"popular"``: the most used first, 15% of slots for young
    forks at random, so the well-known get most of the ratings, as in the field)."""
    params = WorldParams(**{"forking": "community", **overrides})
    draws = draw_world(params, seed)
    world = World(params, draws)
    show = RandomPolicy(seed, 0.0) if exposure == "uniform" else MostUsedPolicy(seed, 0.15)
    bounds = np.r_[0, draws.fork_at, params.sessions]
    for b in range(bounds.size - 1):
        start, stop = int(bounds[b]), int(bounds[b + 1])
        if b > 0:
            world.fork(int(draws.fork_parent_u[b - 1] * world.n), start)
        show.refit(world.log)
        if stop > start:
            world.play(start, show.choose(stop - start, params.slate))
    return world


def inputs_from_world(world: World) -> tuple[CatalogArrays, FeedbackColumns, np.ndarray]:
    """The simulator's log as export inputs (one version per sub-agent, ids from 1), and the
    true quality of each version."""
    n = world.n
    log = world.log
    version_id = np.arange(1, n + 1, dtype=np.int64)
    parent = log.parent[:n]
    r = log.ratings()
    m = log.n_ratings
    categories = tuple(CATEGORIES[c % len(CATEGORIES)] for c in range(world.p.categories))
    catalog = CatalogArrays(
        version_id=version_id,
        parent_version_id=np.where(parent >= 0, parent + 1, -1).astype(np.int64),
        subagent_id=version_id.copy(),
        category=world.category[:n].astype(np.int32),
        categories=categories,
    )
    feedback = FeedbackColumns(
        feedback_id=np.arange(1, m + 1, dtype=np.int64),
        user_id=log.rating_user[r].astype(np.int64) + 1,
        version_id=log.rating_item[r].astype(np.int64) + 1,
        is_thumb=log.rating_thumb[r].copy(),
        rating=log.rating_value[r].astype(np.int8),
        propensity=np.full(m, np.nan),
        day=np.full(m, 20_000, np.int32),
    )
    return catalog, feedback, world.quality[:n].copy()


def accuracy_on_world(seed: int, parameters: ExportParameters | None = None, **overrides) -> dict:
    """Label accuracy and Spearman of the export's numbers against the world's truth."""
    parameters = parameters or ExportParameters()
    world = simulated_world(seed, **overrides)
    catalog, feedback, quality = inputs_from_world(world)
    export = RewardExport(catalog, feedback, parameters, pseudonym_key=secrets.token_bytes(32))
    e, pairs, exported = export.estimate, export.pairs, export.eligible
    chosen_better = quality[pairs.chosen] > quality[pairs.rejected]
    raw = e.raw_mean
    raw_agrees = (raw[pairs.chosen] > raw[pairs.rejected]) == chosen_better
    # Raw-mean pairs: the same candidates, ordered by the raw means, kept when a two-sample z
    # test on the raw ratings is as confident as the export's threshold.
    raw_pairs = _raw_mean_pairs(export, parameters.confidence)
    raw_pairs_right = quality[raw_pairs[0]] > quality[raw_pairs[1]]
    return {
        "seed": seed,
        "versions": int(catalog.version_id.size),
        "ratings": len(feedback),
        "exported": int(exported.sum()),
        "pairs": len(pairs),
        "pairs_by_relation": {
            name: int((pairs.relation == k).sum()) for k, name in enumerate(rewards.RELATIONS)
        },
        "label_accuracy": float(chosen_better.mean()) if len(pairs) else float("nan"),
        "raw_on_same_pairs": float(raw_agrees.mean()) if len(pairs) else float("nan"),
        "raw_pairs": int(raw_pairs[0].size),
        "raw_pairs_accuracy": float(raw_pairs_right.mean()) if raw_pairs[0].size else float("nan"),
        "spearman": float(spearmanr(e.mean[exported], quality[exported]).statistic),
        "raw_spearman": float(spearmanr(raw[exported], quality[exported]).statistic),
        "unpaired": int(export.unpaired.item.size),
    }


def _raw_mean_and_variance(export: RewardExport) -> tuple[np.ndarray, np.ndarray]:
    """Each version's raw mean rating on the common scale and that mean's squared standard
    error (infinite without ratings)."""
    z, item = export.estimate.rating_z, export.item
    n = export.forest.n
    count = np.bincount(item, minlength=n).astype(float)
    mean = np.divide(np.bincount(item, z, minlength=n), count, out=np.zeros(n), where=count > 0)
    square = np.bincount(item, z * z, minlength=n)
    var = np.divide(square, count, out=np.ones(n), where=count > 0) - mean**2
    se2 = np.divide(np.maximum(var, 1e-6), count, out=np.full(n, np.inf), where=count > 0)
    return mean, se2


def every_candidate_pair(export: RewardExport) -> rewards.Pairs:
    """All the export's candidate pairs, with no confidence cut and no cap per version, the
    model's pick as ``chosen``."""
    return rewards.select_pairs(
        export.forest,
        export.estimate,
        rewards.RatingArrays(export.user_idx, export.item, export.feedback.rating),
        eligible=export.eligible,
        category=export.category,
        test=export.test,
        confidence=0.5,
        max_pairs_per_item=10**9,
    )


def _raw_mean_pairs(export: RewardExport, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    mean, se2 = _raw_mean_and_variance(export)
    loose = every_candidate_pair(export)
    a, b = loose.chosen, loose.rejected
    p = ndtr(np.abs(mean[a] - mean[b]) / np.sqrt(se2[a] + se2[b]))
    keep = p >= confidence
    a_wins = mean[a] > mean[b]
    return np.where(a_wins, a, b)[keep], np.where(a_wins, b, a)[keep]


# --------------------------------------------------------------------------- coverage
COVERAGES = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0)
# The worlds the curve is drawn in: the default one, one with a fifth of its sessions (most
# versions have a handful of ratings), and that sparse one shown by popularity.
CURVE_WORLDS = {
    "dense, uniform": {},
    "sparse, uniform": {"sessions": 10_000},
    "sparse, popular": {"sessions": 10_000, "exposure": "popular"},
}


def coverage_accuracy(seed: int, world_settings: dict) -> dict:
    """Every candidate pair of the export (all three relations, no confidence cut), ordered
    most confident first by the reward model's P(chosen better) and, beside it, by a two-sample
    z test on the raw mean ratings: the share ordered right among the most confident
    ``coverage`` of them, for each coverage."""
    parameters = ExportParameters()
    world = simulated_world(seed, **world_settings)
    catalog, feedback, quality = inputs_from_world(world)
    export = RewardExport(catalog, feedback, parameters, pseudonym_key=secrets.token_bytes(32))
    everything = every_candidate_pair(export)
    a, b = everything.chosen, everything.rejected
    model_right = quality[a] > quality[b]
    raw_mean, raw_se2 = _raw_mean_and_variance(export)
    raw_p = ndtr(np.abs(raw_mean[a] - raw_mean[b]) / np.sqrt(raw_se2[a] + raw_se2[b]))
    raw_right = (raw_mean[a] > raw_mean[b]) == (quality[a] > quality[b])

    def curve(confidence: np.ndarray, right: np.ndarray) -> list[float]:
        order = np.argsort(-confidence, kind="stable")
        if not right.size:
            return [float("nan")] * len(COVERAGES)
        return [float(right[order[: max(1, round(c * right.size))]].mean()) for c in COVERAGES]

    return {
        "seed": seed,
        "ratings": len(feedback),
        "pairs": int(a.size),
        "model": curve(everything.p_better, model_right),
        "raw": curve(raw_p, raw_right),
    }


# --------------------------------------------------------------------------- synthetic scale
def synthetic_inputs(
    n_ratings: int, seed: int = 0, *, versions: int | None = None, users: int | None = None
) -> tuple[CatalogArrays, FeedbackColumns]:
    """A fork forest of versions (each fork's parent drawn among earlier versions, favouring
    recent ones), users with a leniency, and n_ratings distinct (user, version) ratings, a
    third of them thumbs, a fifth citing an exposure with its propensity."""
    rng = np.random.default_rng(seed)
    versions = versions or max(1000, n_ratings // 100)
    users = users or max(1000, n_ratings // 20)
    root_share = 0.1
    is_root = rng.random(versions) < root_share
    is_root[0] = True
    earlier = (np.arange(versions) * rng.random(versions) ** 0.3).astype(np.int64)
    parent = np.where(is_root, -1, earlier)
    quality = np.empty(versions)
    step = rng.normal(-0.05, 0.4, versions)
    base = rng.normal(0, 1, versions)
    for start in range(0, versions, 65_536):  # parents are earlier: fill in order, in blocks
        stop = min(start + 65_536, versions)
        for v in range(start, stop):
            quality[v] = base[v] if parent[v] < 0 else quality[parent[v]] + step[v]
    root = np.arange(versions)
    while np.any(parent[root] >= 0):
        root = np.where(parent[root] >= 0, parent[root], root)
    category = (root % len(CATEGORIES)).astype(np.int32)

    # Distinct (user, version) pairs: draw a little more than needed, drop repeats. Drawn in
    # blocks so that generating ten million ratings does not itself need a gigabyte.
    user_weight = rng.pareto(1.5, users) + 1
    cumulative = np.cumsum(user_weight / user_weight.sum())
    draw = int(n_ratings * 1.08) + 1000
    key = np.empty(draw, np.int64)
    for start in range(0, draw, 1 << 20):
        size = min(1 << 20, draw - start)
        block_user = np.minimum(np.searchsorted(cumulative, rng.random(size)), users - 1)
        key[start : start + size] = block_user * versions + rng.integers(0, versions, size)
    key = np.unique(key)
    if key.size > n_ratings:  # keep a random n_ratings of them, in key order
        key = key[np.sort(rng.choice(key.size, n_ratings, replace=False))]
    user = (key // versions).astype(np.int64)
    item = (key % versions).astype(np.int64)
    del key
    m = user.size
    leniency = rng.normal(0, 0.8, users)
    utility = quality[item] + leniency[user] + rng.normal(0, 1, m)
    thumb = (user % 3) == 0
    stars = (1 + np.searchsorted(np.array([-1.5, -0.5, 0.5, 1.5]), utility)).astype(np.int8)
    rating = np.where(thumb, (utility > 0).astype(np.int8), stars)
    del utility, stars
    exposed = rng.random(m) < 0.2
    propensity = np.full(m, np.nan)
    propensity[exposed] = rng.uniform(0.02, 0.9, int(exposed.sum()))
    del exposed
    catalog = CatalogArrays(
        version_id=np.arange(1, versions + 1, dtype=np.int64),
        parent_version_id=np.where(parent >= 0, parent + 1, -1).astype(np.int64),
        subagent_id=np.arange(1, versions + 1, dtype=np.int64),
        category=category,
        categories=CATEGORIES,
    )
    feedback = FeedbackColumns(
        feedback_id=np.arange(1, m + 1, dtype=np.int64),
        user_id=user.astype(np.int64) + 1,
        version_id=item.astype(np.int64) + 1,
        is_thumb=thumb,
        rating=rating,
        propensity=propensity,
        day=rng.integers(19_000, 20_000, m).astype(np.int32),
    )
    return catalog, feedback


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child_ours(n_ratings: int, out: str) -> dict:
    catalog, feedback = synthetic_inputs(n_ratings)
    before = _peak_mib()
    started = time.perf_counter()
    export = RewardExport(
        catalog, feedback, ExportParameters(), pseudonym_key=secrets.token_bytes(32)
    )
    result = export.write(Path(out), SyntheticTexts(catalog))
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "rows": len(feedback),
        "peak_mib": _peak_mib(),
        "peak_before_mib": before,
        "stages": result.seconds,
        "counts": {k: v["total"] for k, v in result.counts.items()},
        "bytes": sum(s.bytes for s in result.shards),
    }


def child_pyarrow(n_ratings: int, out: str) -> dict:
    """pyarrow writing the export's own ``ratings`` table (the same rows, columns and
    compression, built beforehand by the export's code) in one ``write_table`` call: the floor
    for getting these rows onto disk as Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    catalog, feedback = synthetic_inputs(n_ratings)
    export = RewardExport(
        catalog, feedback, ExportParameters(), pseudonym_key=secrets.token_bytes(32)
    )
    # As the trainers read it back: category and scale as plain strings.
    tables = [t.cast(RATINGS_SCHEMA) for _c, _s, t in export.ratings_batches(None)]
    table = pa.concat_tables(tables)
    del tables
    before = _peak_mib()
    started = time.perf_counter()
    pq.write_table(table, Path(out) / "ratings.parquet", compression="zstd")
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "rows": table.num_rows,
        "peak_mib": _peak_mib(),
        "peak_before_mib": before,
        "bytes": (Path(out) / "ratings.parquet").stat().st_size,
    }


def run_child(which: str, n_ratings: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="sprig-export-bench-") as out:
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(
            [sys.executable, __file__, "--child", which, "--ratings", str(n_ratings), "--out", out],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1M ratings, 2 seeds, 1 repeat")
    parser.add_argument("--ratings", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--child", choices=["ours", "pyarrow"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run = child_ours if args.child == "ours" else child_pyarrow
        result = run(args.ratings, args.out)
        print(json.dumps(result))
        return result

    n_ratings = args.ratings or (1_000_000 if args.quick else 10_000_000)
    seeds = args.seeds or (2 if args.quick else 5)
    repeat = args.repeat or (1 if args.quick else 2)

    accuracy = [accuracy_on_world(seed) for seed in range(seeds)]
    print(f"Accuracy on the simulator's truth ({seeds} seeds, confidence 0.95, k = 5)")
    print(
        f"{'seed':>4} {'ratings':>8} {'exported':>8} {'pairs':>6} {'label acc':>9} "
        f"{'raw, same':>9} {'raw pairs':>9} {'raw acc':>8} {'ρ reward':>9} {'ρ raw':>7}"
    )
    for a in accuracy:
        print(
            f"{a['seed']:>4} {a['ratings']:>8} {a['exported']:>8} {a['pairs']:>6} "
            f"{a['label_accuracy']:>9.3f} {a['raw_on_same_pairs']:>9.3f} {a['raw_pairs']:>9} "
            f"{a['raw_pairs_accuracy']:>8.3f} {a['spearman']:>9.3f} {a['raw_spearman']:>7.3f}"
        )
    summary = {
        key: statistics.median(a[key] for a in accuracy)
        for key in (
            "label_accuracy",
            "raw_on_same_pairs",
            "raw_pairs_accuracy",
            "spearman",
            "raw_spearman",
        )
    }
    print(
        f"median: label accuracy {summary['label_accuracy']:.3f} (raw mean on the same pairs "
        f"{summary['raw_on_same_pairs']:.3f}, raw-mean pairs {summary['raw_pairs_accuracy']:.3f}),"
        f" Spearman {summary['spearman']:.3f} (raw mean {summary['raw_spearman']:.3f})"
    )

    curves = {
        name: [coverage_accuracy(seed, settings) for seed in range(seeds)]
        for name, settings in CURVE_WORLDS.items()
    }
    print()
    print(
        "Coverage and accuracy over every candidate pair, most confident first: the reward "
        "model's P(chosen better) against a z test on raw means (median over seeds)"
    )
    print(
        f"{'world':<18} {'pairs':>6} {'ordered by':<11} "
        + " ".join(f"{f'{c:.0%}':>6}" for c in COVERAGES)
    )
    curve_medians = {}
    for name, runs in curves.items():
        pairs = int(statistics.median(r["pairs"] for r in runs))
        medians = {
            side: [statistics.median(r[side][i] for r in runs) for i in range(len(COVERAGES))]
            for side in ("model", "raw")
        }
        curve_medians[name] = {"pairs": pairs, **medians}
        for side, label in (("model", "reward"), ("raw", "raw z test")):
            print(
                f"{name if side == 'model' else '':<18} {pairs if side == 'model' else '':>6} "
                f"{label:<11} " + " ".join(f"{v:>6.3f}" for v in medians[side])
            )

    ours, baseline = [], []
    for _ in range(repeat):
        baseline.append(run_child("pyarrow", n_ratings))
        ours.append(run_child("ours", n_ratings))
    rate_ours = statistics.median(r["rows"] / r["seconds"] for r in ours)
    rate_base = statistics.median(r["rows"] / r["seconds"] for r in baseline)
    peak_ours = max(r["peak_mib"] for r in ours)
    peak_base = max(r["peak_mib"] for r in baseline)
    print()
    print(f"Throughput, {n_ratings:,} feedback rows, median of {repeat}")
    print(f"{'':<28} {'seconds':>8} {'rows/s':>12} {'peak MiB':>9} {'MB out':>8}")
    for label, runs in (("pyarrow write_table", baseline), ("sprig export (all kinds)", ours)):
        print(
            f"{label:<28} {statistics.median(r['seconds'] for r in runs):>8.2f} "
            f"{statistics.median(r['rows'] / r['seconds'] for r in runs):>12,.0f} "
            f"{max(r['peak_mib'] for r in runs):>9.0f} "
            f"{statistics.median(r['bytes'] for r in runs) / 1e6:>8.1f}"
        )
    ratio = rate_ours / rate_base
    print(f"ratio ours / pyarrow: {ratio:.2f} (target ≥ 0.5); peak {peak_ours:.0f} MiB (< 2048)")
    print("stages (s):", {k: round(v, 2) for k, v in ours[-1]["stages"].items()})
    print("rows written:", ours[-1]["counts"])
    result = {
        "ratings": n_ratings,
        "accuracy": accuracy,
        "accuracy_median": summary,
        "coverages": list(COVERAGES),
        "coverage_accuracy": curves,
        "coverage_accuracy_median": curve_medians,
        "ours": ours,
        "pyarrow": baseline,
        "rate_ours": rate_ours,
        "rate_pyarrow": rate_base,
        "ratio": ratio,
        "peak_mib_ours": peak_ours,
        "peak_mib_pyarrow": peak_base,
        "targets": {
            "label_accuracy_ge_0.9": summary["label_accuracy"] >= 0.9,
            "spearman_ge_0.9": summary["spearman"] >= 0.9,
            "ratio_ge_half": ratio >= 1 / 2,
            "peak_lt_2GiB": peak_ours < 2048,
        },
    }
    print(json.dumps(result, default=float))
    return result


if __name__ == "__main__":
    main()
