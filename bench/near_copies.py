"""Near-copy detection (evolution.near_copies) on a demo-like catalog with planted copies.

The catalog: N sub-agents rendered by the demo's own renderer (market.demo.render) from the
57 demo roots' configs, each made into a different app of the same template: a new title,
new labels, list items and options (words drawn from the demo's own texts), other numbers, up
to three extra fields, a few features and another accent. So every app of a root shares that
engine's code, CSS and UI strings with about N/57 others: the look-alikes are real.

Queries, none of them in the index (as at publish time):

* planted copies of sampled catalog apps, four kinds: ``renamed`` (title, store key and one
  field's identifier), ``reformatted`` (4-space indent, single quotes, top-level functions
  and CSS rules shuffled, HTML whitespace collapsed, a comment added), ``edited`` (a label and
  a number changed, a field added) and ``all three`` at once;
* ``look-alike``: a new app from the same root as a sampled source (same category and
  template, different app); any match is a false one.

Reports, at the chosen thresholds: precision (matches that are the planted source), recall
per kind (the source among the matches), the moderation flag rate, the look-alike false-match
rate, query latency (normalize + sign + LSH + verify, per query), index memory (tracemalloc,
building the index from stored signatures), build time; and the exact-hash baseline (sha256 of
the normalized text) on the same queries. The last line is JSON.

    python bench/near_copies.py [--quick] [--subagents N] [--sources S] [--words K]
                                [--max-df F] [--fork-offer F] [--moderation F]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from datasketch import LeanMinHash, MinHashLSH  # noqa: E402

from evolution import near_copies as nc  # noqa: E402
from market.demo.community import DemoBundle  # noqa: E402
from market.demo.material import APPS, ROOTS  # noqa: E402
from market.demo.recipes import base_config  # noqa: E402
from market.demo.render import render_bundle  # noqa: E402

KINDS = ("renamed", "reformatted", "edited", "all three")
BOILERPLATE_SAMPLE = 5_000
DATASKETCH_SAMPLE = 5_000
SWEEP = (0.25, 0.3, 0.35, 0.4, 0.5)  # fork-offer thresholds also scored, on the same queries

# Config strings that are text a person reads (and so differ from app to app); every other
# string (field names, types, units, modes, references to fields) is structure and is kept.
_TEXT_KEYS = frozenset(
    (
        *("label", "title", "ingredients", "tags", "cards", "tasks", "items", "habits"),
        *("drills", "kinds", "chores", "meals", "people", "starter", "prompts", "who"),
        *("targetLabel", "avoidLabel", "rewardLabel", "babies"),
    )
)
_WORDS = sorted(
    {
        w.lower()
        for root in ROOTS
        for text in (root["story"], root["summary"], root.get("bio", ""), " ".join(root["tags"]))
        for w in re.findall(r"[A-Za-z]{3,}", text)
    }
)


def _phrase(rng: random.Random, like: str) -> str:
    n = max(1, min(5, len(like.split())))
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize()


def _reword(rng: random.Random, value: Any, key: str | None) -> Any:
    """A different app's config of the same shape: its texts and numbers redrawn."""
    if isinstance(value, dict):
        return {k: _reword(rng, v, k) for k, v in value.items()}
    if isinstance(value, list):
        if key == "options":  # [value, text] pairs: the value is referenced, the text is read
            return [[o[0], _phrase(rng, str(o[1]))] if isinstance(o, list) else o for o in value]
        return [_reword(rng, v, key) for v in value]
    if isinstance(value, str) and key in _TEXT_KEYS and value:
        return _phrase(rng, value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    scaled = value * rng.uniform(0.5, 2.0)
    return round(scaled) if isinstance(value, int) else round(scaled, 1)


def _extra_field(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(("number", "text", "checkbox"))
    field: dict[str, Any] = {
        "name": "".join(rng.choice(_WORDS) for _ in range(2)),
        "label": _phrase(rng, "a b"),
        "type": kind,
    }
    if kind == "number":
        field.update(min=0, step=1, default=rng.randint(0, 20))
    elif kind == "text":
        field["maxlength"] = rng.choice((40, 80, 120))
    return field


def _new_app(rng: random.Random, root: dict[str, Any]) -> dict[str, Any]:
    cfg = base_config(root)
    own = {k: _reword(rng, cfg[k], k) for k in root["config"]}
    cfg.update(own)
    cfg["title"] = _phrase(rng, "a b c")
    cfg["storeKey"] = "sprig." + cfg["title"].lower().replace(" ", "-")
    cfg["fields"] = list(cfg.get("fields", [])) + [
        _extra_field(rng) for _ in range(rng.randint(0, 3))
    ]
    features = list(APPS.feature_js)
    cfg["features"] = {f: True for f in rng.sample(features, rng.randint(0, 2))}
    cfg["theme"]["accent"] = f"#{rng.randrange(1 << 24):06x}"
    return cfg


def _render(cfg: dict[str, Any], root: dict[str, Any], summary: str) -> DemoBundle:
    node = SimpleNamespace(
        cfg=cfg, root=root, title=cfg["title"], summary=summary, scopes=set(root["scopes"])
    )
    return render_bundle(node, "")


def _renamed(rng: random.Random, cfg: dict[str, Any]) -> dict[str, Any]:
    cfg = copy.deepcopy(cfg)
    cfg["title"] = _phrase(rng, "a b c")
    cfg["storeKey"] = "sprig." + cfg["title"].lower().replace(" ", "-")
    named = [f for f in cfg["fields"] if f["name"] not in json.dumps(cfg.get("groupBy", ""))]
    if named:
        field = rng.choice(named)
        field["name"] = field["name"] + "_" + rng.choice(_WORDS)
    return cfg


def _edited(rng: random.Random, cfg: dict[str, Any]) -> dict[str, Any]:
    cfg = copy.deepcopy(cfg)
    labelled = [f for f in cfg["fields"] if f.get("label")]
    if labelled:
        rng.choice(labelled)["label"] = _phrase(rng, "a b")
    numbers = [k for k, v in cfg.items() if isinstance(v, int) and not isinstance(v, bool)]
    if numbers:
        key = rng.choice(numbers)
        cfg[key] = cfg[key] + rng.randint(1, 9)
    cfg["fields"] = [*cfg["fields"], _extra_field(rng)]
    return cfg


def _reformatted(rng: random.Random, bundle: DemoBundle) -> DemoBundle:
    files = dict(bundle.files)
    js = files["app.js"]
    head, *functions = re.split(r"(?m)^(?=function )", js)
    rng.shuffle(functions)
    js = head + "".join(functions)
    js = re.sub(r"(?m)^( +)", lambda m: " " * (2 * len(m.group(1))), js).replace('"', "'")
    files["app.js"] = "// Tidied up by hand.\n" + js
    rules = files["style.css"].splitlines()
    rng.shuffle(rules)
    files["style.css"] = "\n\n".join(r.replace(":", ": ").replace("{", " {\n  ") for r in rules)
    files["index.html"] = re.sub(r"\s+", " ", files["index.html"])
    return DemoBundle(manifest=bundle.manifest, files=files, changelog="")


def _copies(rng: random.Random, cfg: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    summary = _phrase(rng, "a b c d e f g")
    renamed = _renamed(rng, cfg)
    both = _edited(rng, renamed)
    return {
        "renamed": _render(renamed, root, summary),
        "reformatted": _reformatted(rng, _render(cfg, root, summary)),
        "edited": _render(_edited(rng, cfg), root, summary),
        "all three": _reformatted(rng, _render(both, root, summary)),
    }


def _datasketch_lsh_mib(stored: list[tuple[int, np.ndarray]]) -> float:
    """What datasketch.MinHashLSH holds for the same signatures and bands (the comparison
    behind the index's flat arrays)."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    lsh = MinHashLSH(num_perm=nc.NUM_PERM, params=(nc.LSH_BANDS, nc.LSH_ROWS))
    for key, sig in stored:
        lsh.insert(key, LeanMinHash(seed=nc.MINHASH_SEED, hashvalues=sig, scheme="affine32"))
    mib = (tracemalloc.get_traced_memory()[0] - before) / 2**20
    tracemalloc.stop()
    return mib


def _score(answers: list[tuple[str, int, list[nc.NearCopy]]], threshold: float) -> dict[str, float]:
    """Precision (matches that are the source), top-1 precision (the best match is the source,
    over copies with a match), recall per kind and the look-alike false-match rate, keeping
    matches at ``threshold`` or more."""
    true = false = top_true = top_any = 0
    found: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    for kind, source, everything in answers:
        kept = [m for m in everything if m.similarity >= threshold]
        asked[kind] += 1
        found[kind] += any(m.key == source for m in kept) if kind in KINDS else bool(kept)
        true += sum(m.key == source for m in kept)
        false += sum(m.key != source for m in kept)
        if kind in KINDS and kept:
            top_any += 1
            top_true += kept[0].key == source
    copies = sum(asked[k] for k in KINDS)
    return {
        "precision": round(true / max(1, true + false), 4),
        "top1": round(top_true / max(1, top_any), 4),
        "recall": round(sum(found[k] for k in KINDS) / max(1, copies), 4),
        **{k: round(found[k] / max(1, asked[k]), 4) for k in (*KINDS, "look-alike")},
    }


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 sub-agents, 300 sources")
    parser.add_argument("--subagents", type=int, default=None)
    parser.add_argument("--sources", type=int, default=None)
    parser.add_argument("--words", type=int, default=nc.SHINGLE_WORDS)
    parser.add_argument(
        "--max-df", type=float, default=nc.MAX_DOCUMENT_FREQUENCY, help="0: keep boilerplate"
    )
    parser.add_argument("--fork-offer", type=float, default=nc.FORK_OFFER)
    parser.add_argument("--moderation", type=float, default=nc.MODERATION)
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()
    n = args.subagents or (10_000 if args.quick else 100_000)
    n_sources = args.sources or (300 if args.quick else 1_000)
    rng = random.Random(args.seed)

    # Configs are kept (copies are made from them); bundles are rendered when signed and
    # dropped, so 100,000 of them never sit in memory at once.
    t0 = time.perf_counter()
    roots = [rng.randrange(len(ROOTS)) for _ in range(n)]
    configs = [_new_app(rng, ROOTS[r]) for r in roots]
    summaries = [_phrase(rng, "a b c d e f g") for _ in range(n)]
    generate_s = time.perf_counter() - t0

    def catalog_bundle(i: int) -> DemoBundle:
        return _render(configs[i], ROOTS[roots[i]], summaries[i])

    t0 = time.perf_counter()
    sample = [catalog_bundle(i) for i in rng.sample(range(n), min(BOILERPLATE_SAMPLE, n))]
    boilerplate = (
        nc.Boilerplate.learn(sample, max_document_frequency=args.max_df, words=args.words)
        if args.max_df > 0
        else nc.Boilerplate.none()
    )
    learn_s = time.perf_counter() - t0

    sign_s = 0.0
    signatures: list[np.ndarray | None] = []
    exact: dict[str, list[int]] = {}
    for i in range(n):
        t0 = time.perf_counter()
        bundle = catalog_bundle(i)
        t1 = time.perf_counter()
        signatures.append(nc.signature(bundle, boilerplate, words=args.words))
        t2 = time.perf_counter()
        generate_s += t1 - t0
        sign_s += t2 - t1
        exact.setdefault(nc.exact_fingerprint(bundle), []).append(i)
        if (i + 1) % 10_000 == 0:
            print(f"signed {i + 1:,}", file=sys.stderr, flush=True)
    stored = [(i, s.copy()) for i, s in enumerate(signatures) if s is not None]
    row_of = {i: row for row, (i, _) in enumerate(stored)}
    matrix = np.stack([s for _, s in stored]) if stored else np.zeros((0, nc.NUM_PERM), np.uint32)
    del signatures
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    index = nc.NearCopyIndex.from_signatures(
        boilerplate,
        stored,
        words=args.words,
        fork_offer=min(args.fork_offer, *SWEEP),
        moderation=args.moderation,
    )
    insert_s = time.perf_counter() - t0
    index_mib = (tracemalloc.get_traced_memory()[0] - before) / 2**20
    tracemalloc.stop()
    datasketch_mib_per_1000 = (
        _datasketch_lsh_mib(stored[:DATASKETCH_SAMPLE])
        * 1000
        / max(1, min(len(stored), DATASKETCH_SAMPLE))
    )
    del stored

    sources = rng.sample(range(n), n_sources)
    queries: list[tuple[str, int, DemoBundle]] = []
    for s in sources:
        for kind, bundle in _copies(rng, configs[s], ROOTS[roots[s]]).items():
            queries.append((kind, s, bundle))
        lookalike = _new_app(rng, ROOTS[roots[s]])
        queries.append(("look-alike", -1, _render(lookalike, ROOTS[roots[s]], "x y z")))
    rng.shuffle(queries)

    latencies: list[float] = []
    found = {k: 0 for k in (*KINDS, "look-alike")}
    flagged = {k: 0 for k in found}
    exact_found = {k: 0 for k in found}
    asked = {k: 0 for k in found}
    unsigned = {k: 0 for k in found}
    # Estimated Jaccard of each copy to its source, and of each look-alike to its nearest
    # indexed app (brute force over all signatures): the margins the thresholds sit in.
    similarity: dict[str, list[float]] = {k: [] for k in found}
    true_matches = false_matches = exact_true = exact_false = 0
    answers: list[tuple[str, int, list[nc.NearCopy]]] = []
    false_by_root: Counter[str] = Counter()
    for kind, source, bundle in queries:
        t0 = time.perf_counter()
        sig = index.signature(bundle)
        everything = [] if sig is None else index.query_signature(sig)
        latencies.append((time.perf_counter() - t0) * 1000)
        answers.append((kind, source, everything))
        matches = [m for m in everything if m.similarity >= args.fork_offer]
        false_by_root.update(ROOTS[roots[m.key]]["key"] for m in matches if m.key != source)
        asked[kind] += 1
        unsigned[kind] += sig is None
        keys = {m.key for m in matches}
        if sig is not None and kind == "look-alike":
            similarity[kind].append(float((matrix == sig).mean(axis=1).max()))
        elif sig is not None and source in row_of:
            similarity[kind].append(float(np.mean(matrix[row_of[source]] == sig)))
        true_matches += source in keys
        false_matches += len(keys - {source})
        hit = next((m for m in matches if m.key == source), None)
        if kind == "look-alike":
            found[kind] += bool(matches)
            flagged[kind] += any(m.moderation for m in matches)
        elif hit is not None:
            found[kind] += 1
            flagged[kind] += hit.moderation
        same = exact.get(nc.exact_fingerprint(bundle), [])
        exact_found[kind] += source in same if kind != "look-alike" else bool(same)
        exact_true += source in same
        exact_false += len([i for i in same if i != source])

    copies = sum(asked[k] for k in KINDS)
    precision = true_matches / max(1, true_matches + false_matches)
    recall = sum(found[k] for k in KINDS) / max(1, copies)
    exact_recall = sum(exact_found[k] for k in KINDS) / max(1, copies)
    exact_precision = exact_true / max(1, exact_true + exact_false)
    p50, p99 = _percentile(latencies, 50), _percentile(latencies, 99)

    print(
        f"catalog {n:,} sub-agents from {len(ROOTS)} roots ({n / len(ROOTS):,.0f} look-alikes "
        f"per template); {len(index):,} indexed, {n - len(index):,} with < {nc.MIN_SHINGLES} "
        f"distinctive shingles"
    )
    print(
        f"shingles: {args.words} words; boilerplate: {len(boilerplate.hashes):,} shingles in > "
        f"{args.max_df:.2%} of a {len(sample):,} sample; num_perm {nc.NUM_PERM}, LSH "
        f"{nc.LSH_BANDS} bands x {nc.LSH_ROWS} rows, fork offer >= {args.fork_offer}, "
        f"moderation >= {args.moderation}"
    )
    print(
        f"build: generate and render {generate_s:.0f} s, learn boilerplate {learn_s:.1f} s, sign "
        f"{sign_s:.0f} s ({sign_s / n * 1000:.2f} ms each), insert {insert_s:.1f} s; index "
        f"{index_mib:.0f} MiB (tracemalloc; datasketch.MinHashLSH with the same bands: "
        f"{datasketch_mib_per_1000:.1f} MiB per 1,000 sub-agents)"
    )
    print()
    print(
        f"{'query kind':<12} {'n':>6} {'recall':>7} {'moderation':>11} {'exact-hash':>11}   "
        "similarity p1 / p10 / p50 / p90 / p99"
    )
    for k in (*KINDS, "look-alike"):
        label = "(false matches; similarity to the nearest app)" if k == "look-alike" else ""
        spread = " / ".join(f"{_percentile(similarity[k], q):.2f}" for q in (1, 10, 50, 90, 99))
        print(
            f"{k:<12} {asked[k]:>6} {found[k] / max(1, asked[k]):>7.3f} "
            f"{flagged[k] / max(1, asked[k]):>11.3f} {exact_found[k] / max(1, asked[k]):>11.3f}"
            f"   {spread} {label}"
        )
    print(
        f"{'all copies':<12} {copies:>6} {recall:>7.3f} "
        f"{sum(flagged[k] for k in KINDS) / max(1, copies):>11.3f} {exact_recall:>11.3f}"
    )
    print()
    print(
        "false matches by the matched app's root: "
        + (", ".join(f"{k} {v}" for k, v in false_by_root.most_common(5)) or "none")
    )
    print()
    sweep = [_score(answers, t) for t in SWEEP]
    print(
        f"{'fork offer':>10} {'precision':>9} {'top-1':>6} {'recall':>7} "
        + " ".join(f"{k:>11}" for k in KINDS)
        + f" {'look-alike':>10}"
    )
    for t, row in zip(SWEEP, sweep, strict=True):
        print(
            f"{t:>10.2f} {row['precision']:>9.3f} {row['top1']:>6.3f} {row['recall']:>7.3f} "
            + " ".join(f"{row[k]:>11.3f}" for k in KINDS)
            + f" {row['look-alike']:>10.3f}"
        )
    print()
    print(
        f"precision {precision:.3f} (exact-hash {exact_precision:.3f}); recall {recall:.3f} "
        f"(exact-hash {exact_recall:.3f}); query p50 {p50:.2f} ms, p99 {p99:.2f} ms over "
        f"{len(latencies):,} queries"
    )
    print(
        json.dumps(
            {
                "bench": "near_copies",
                "subagents": n,
                "indexed": len(index),
                "queries": len(latencies),
                "words": args.words,
                "max_df": args.max_df,
                "boilerplate_shingles": len(boilerplate.hashes),
                "num_perm": nc.NUM_PERM,
                "lsh_bands": nc.LSH_BANDS,
                "lsh_rows": nc.LSH_ROWS,
                "datasketch_lsh_mib_per_1000": round(datasketch_mib_per_1000, 2),
                "fork_offer": args.fork_offer,
                "moderation": args.moderation,
                "precision": round(precision, 4),
                "recall": round(recall, 4),
                "recall_by_kind": {k: round(found[k] / max(1, asked[k]), 4) for k in KINDS},
                "moderation_by_kind": {k: round(flagged[k] / max(1, asked[k]), 4) for k in KINDS},
                "lookalike_false_match": round(
                    found["look-alike"] / max(1, asked["look-alike"]), 4
                ),
                "exact_precision": round(exact_precision, 4),
                "exact_recall": round(exact_recall, 4),
                "exact_recall_by_kind": {
                    k: round(exact_found[k] / max(1, asked[k]), 4) for k in KINDS
                },
                "exact_lookalike_false_match": round(
                    exact_found["look-alike"] / max(1, asked["look-alike"]), 4
                ),
                "query_p50_ms": round(p50, 3),
                "query_p99_ms": round(p99, 3),
                "index_mib": round(index_mib, 1),
                "generate_s": round(generate_s, 1),
                "sign_ms_each": round(sign_s / n * 1000, 3),
                "insert_s": round(insert_s, 2),
                "unsigned_queries": sum(unsigned.values()),
                "sweep": {str(t): row for t, row in zip(SWEEP, sweep, strict=True)},
                "similarity_p10": {k: round(_percentile(v, 10), 3) for k, v in similarity.items()},
                "lookalike_nearest_max": round(max(similarity["look-alike"], default=0.0), 3),
            }
        )
    )


if __name__ == "__main__":
    main()
