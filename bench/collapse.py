"""Clone collapsing of search lists: each list's cost with the answers kept across lists (as a
web worker serves one search after another) against the same lists collapsed from nothing, and
the memory the kept answers hold.

A synthetic catalog of fork families (about 2% roots) whose listings name a tool and qualify it
("Water Tracker v312", "Water Tracker — oz") over a template summary, a tenth of them in Chinese
or Japanese. A search list is up to 300 listings that mention a topic word, in a random order
(as a ranking would mix them), and searches ask for topics by Zipf's law, so some lists come
back and most are new mixes of listings met before.

Two copies of ``evolution.clones`` run side by side, list by list, alternating which goes first:
"kept" keeps its caches from list to list; "from nothing" clears them before each list (every
pair decided and every trigram set built anew). Both must return the same groups. Prints the
median milliseconds per list of each with their ratio, and the MB the kept caches hold at the
end (tracemalloc); the last line is JSON.

    python bench/collapse.py [--quick] [--listings N] [--searches S] [--seed K]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POOL = 300  # listings a search collapses (market.catalog.queries.COLLAPSED_POOL)
TOPICS = [
    "water", "sleep", "mood", "meal", "calorie", "workout", "budget", "garden", "reading",
    "piano", "chores", "packing", "coffee", "yoga", "run", "savings", "dream", "snack",
]  # fmt: skip
NOUNS = ["tracker", "log", "diary", "planner", "coach", "journal", "timer", "checklist"]
QUALIFIERS = ["", "", "", " — oz", " (metric)", " — reminders", ": weekly", " v2"]
CJK = ["喝水记录（中文版）", "睡眠日记", "シンプル家計簿・CSV出力", "気分ログ"]


@dataclass(frozen=True)
class Listing:
    id: int
    root_id: int
    title: str
    summary: str


def catalog(n: int, rng: random.Random) -> list[Listing]:
    """``n`` listings in fork families: a fork takes its family's topic and, often, its
    parent's tool with a qualifier or a version number."""
    roots = max(10, n // 50)
    listings: list[Listing] = []
    family_of: list[tuple[int, str, str]] = []  # (root id, topic, noun) per listing
    for i in range(n):
        if i < roots:
            root, topic, noun = i + 1, rng.choice(TOPICS), rng.choice(NOUNS)
        else:
            root, topic, noun = family_of[rng.randrange(len(family_of))]
            if rng.random() < 0.3:  # became another tool of the same family
                noun = rng.choice(NOUNS)
        family_of.append((root, topic, noun))
        if rng.random() < 0.1:
            title = rng.choice(CJK) + (f" v{i}" if i >= roots else "")
            summary = f"{title}。每天记录，一周图表。"
        else:
            qualifier = rng.choice(QUALIFIERS) if i >= roots else ""
            version = f" v{i}" if i >= roots and not qualifier else ""
            title = f"{topic.title()} {noun.title()}{qualifier}{version}"
            summary = f"A {topic} {noun} for everyday life: log it, see the week at a glance."
        listings.append(Listing(i + 1, root, title, summary))
    return listings


def search_lists(listings: list[Listing], searches: int, rng: random.Random) -> list[list[Listing]]:
    """Lists of up to POOL listings mentioning a topic, topics asked by Zipf's law."""
    by_topic: dict[str, list[Listing]] = {t: [] for t in TOPICS}
    for listing in listings:
        for topic in TOPICS:
            if topic in listing.summary or topic in listing.title.lower():
                by_topic[topic].append(listing)
    weights = [1 / (rank + 1) for rank in range(len(TOPICS))]
    lists = []
    for _ in range(searches):
        topic = rng.choices(TOPICS, weights)[0]
        found = by_topic[topic] or listings
        lists.append(rng.sample(found, min(POOL, len(found))))
    return lists


def load_clones(name: str):
    """A copy of ``evolution.clones`` with caches of its own."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "evolution" / "clones.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def caches_of(module) -> list:
    return [
        value
        for value in vars(module).values()
        if callable(value) and hasattr(value, "cache_clear")
    ]


def groups_of(collapsed) -> list[list[int]]:
    return [[g.representative.id] + [m.id for m in g.members] for g in collapsed]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 listings, 200 searches")
    parser.add_argument("--listings", type=int, default=None)
    parser.add_argument("--searches", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    n = args.listings or (20_000 if args.quick else 200_000)
    searches = args.searches or (200 if args.quick else 2_000)
    rng = random.Random(args.seed)
    lists = search_lists(catalog(n, rng), searches, rng)

    sys.path.insert(0, str(ROOT))  # the copies import evolution.text_index
    kept = load_clones("clones_kept")
    fresh = load_clones("clones_fresh")
    fresh_caches = caches_of(fresh)
    times: dict[str, list[float]] = {"kept": [], "from nothing": []}
    differ = 0
    for index, listing in enumerate(lists):
        order = ("kept", "from nothing") if index % 2 == 0 else ("from nothing", "kept")
        results = {}
        for which in order:
            if which == "from nothing":
                for cache in fresh_caches:
                    cache.cache_clear()
            module = kept if which == "kept" else fresh
            started = time.perf_counter()
            results[which] = module.collapse(listing)
            times[which].append((time.perf_counter() - started) * 1000)
        differ += groups_of(results["kept"]) != groups_of(results["from nothing"])
    # What the kept caches hold once every list was collapsed: a third copy, traced (tracing
    # slows Python down, so not while timing).
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    traced = load_clones("clones_traced")
    for listing in lists:
        traced.collapse(listing)
    held_mb = (tracemalloc.get_traced_memory()[0] - before) / 1e6
    tracemalloc.stop()

    kept_ms = statistics.median(times["kept"])
    fresh_ms = statistics.median(times["from nothing"])
    # Each list's own ratio, so a slow moment on a shared machine lands on both sides.
    ratios = [f / k for k, f in zip(times["kept"], times["from nothing"], strict=True)]
    q1, ratio, q3 = statistics.quantiles(ratios, n=4)
    print(
        f"clone collapsing: {len(lists):,} search lists of up to {POOL} from {n:,} listings, "
        f"topics by Zipf's law, the two sides alternated list by list\n"
    )
    print(f"{'side':<14} {'median ms/list':>15} {'p90 ms/list':>12}")
    for which in ("from nothing", "kept"):
        p90 = statistics.quantiles(times[which], n=10)[-1]
        print(f"{which:<14} {statistics.median(times[which]):>15.2f} {p90:>12.2f}")
    print(
        f"\nfrom nothing / kept, median of the lists' ratios: {ratio:.2f} "
        f"(q1..q3 {q1:.2f}..{q3:.2f}); lists whose groups differ: {differ}; "
        f"the kept caches hold {held_mb:.1f} MB"
    )
    result = {
        "bench": "collapse",
        "listings": n,
        "searches": len(lists),
        "kept_ms": round(kept_ms, 3),
        "from_nothing_ms": round(fresh_ms, 3),
        "ratio": round(ratio, 3),
        "ratio_q1": round(q1, 3),
        "ratio_q3": round(q3, 3),
        "lists_differing": differ,
        "kept_caches_mb": round(held_mb, 1),
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
