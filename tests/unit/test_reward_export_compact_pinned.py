"""Compact views are pinned byte for byte: the same bundles always give the same views.

Three corpora of bundles, each hashed over every view built from it:

* the throughput bench's synthetic bundles (``bench/export.py``: a one-line page and a script
  whose lines name the version, all but its cut-off last line unshared between versions);
* the small demo community's bundles (real apps of 13–21k characters, 300–500 lines), each
  against its parent, its siblings, an unrelated app, and alone;
* a seeded generator of bundle families: a base bundle and variants of it with lines changed,
  inserted, removed, duplicated and moved, files added, removed, emptied and left alike,
  unicode lines and every line break ``str.splitlines`` knows, lines longer than the whole
  budget, and manifests that differ in various keys (nested values, keys only one side has,
  ``1`` against ``1.0`` and ``True``, which compare equal), each against the others of its
  family, an unrelated bundle, and alone.

Views are built as the export builds them: each bundle parsed once and then viewed against
many others, in both directions, so that anything a parsed bundle keeps between views is
exercised; a few are also built from the completions' text. A change to
``feedback.export.compact`` that alters any byte of any view fails here; a deliberate change
to what a view shows re-pins the digests in the same commit. A change to the demo community
(pinned in ``test_demo_community_hash``) re-pins ``demo`` after checking the other two still
pass.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Iterator

import numpy as np
import pytest

from bench.export import SyntheticTexts
from feedback.export.compact import (
    ParsedBundle,
    compact_pair,
    compact_version,
    pair_views,
    parse,
    version_view,
)
from feedback.export.inputs import CatalogArrays
from market.catalog.bundles import canonical_bytes
from market.demo import generate_community

PINNED_SHA256 = {
    "bench": "9ba1786f6123530586da60a6176c4f379292147b7517813f91aee81b8b59a77e",
    "demo": "6b62bb398fbcbb8bbc9ead51ef128c5fc1fc1380d6f5d57b177fb14e712cddd7",
    "random": "6da044c47c15c0ba141b2b9999fadfe1fd37d01d9fa31d1b058de91b4bccd31d",
}


def digest(views: Iterable[str]) -> str:
    hasher = hashlib.sha256()
    for view in views:
        hasher.update(view.encode())
        hasher.update(b"\x00")
    return hasher.hexdigest()


def views_of(
    completions: list[str], pairs: list[tuple[int, int]], roots: list[int]
) -> Iterator[str]:
    """Both views of every pair, each pair's first side against its second as a version, and
    ``roots`` alone, from bundles parsed once; then the same from text for every fifth pair."""
    bundles: list[ParsedBundle] = [parse(completion) for completion in completions]
    for a, b in pairs:
        yield from pair_views(bundles[a], bundles[b])
        yield version_view(bundles[a], bundles[b])
    for root in roots:
        yield version_view(bundles[root], None)
    for a, b in pairs[::5]:
        yield from compact_pair(completions[a], completions[b])
        yield compact_version(completions[a], completions[b])
    for root in roots[::5]:
        yield compact_version(completions[root], None)


# --------------------------------------------------------------------------- the bench's
def bench_corpus() -> tuple[list[str], list[tuple[int, int]], list[int]]:
    version_ids = np.array([1, 2, 7, 42, 99, 100, 101, 3388, 9999, 10_000, 123_456], np.int64)
    catalog = CatalogArrays(
        version_id=version_ids,
        parent_version_id=np.r_[-1, version_ids[:-1]],
        subagent_id=version_ids.copy(),
        category=np.zeros(version_ids.size, np.int32),
        categories=("diet",),
    )
    texts = SyntheticTexts(catalog).versions(version_ids.tolist())
    completions = [texts[int(v)].completion for v in version_ids]
    n = len(completions)
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    return completions, pairs, list(range(n))


# --------------------------------------------------------------------------- the demo's
def demo_corpus() -> tuple[list[str], list[tuple[int, int]], list[int]]:
    community = generate_community(3, n_users=120, n_subagents=40)
    completions, index, parent_of = [], {}, {}
    for subagent in community.subagents:
        for number, bundle in enumerate(subagent.versions):
            index[(subagent.key, number)] = len(completions)
            completions.append(canonical_bytes(bundle.manifest, bundle.files).decode())
            if number:
                parent_of[len(completions) - 1] = index[(subagent.key, number - 1)]
            elif subagent.parent is not None:
                parent_of[len(completions) - 1] = index[(subagent.parent, 0)]
    children: dict[int, list[int]] = {}
    for child, parent in parent_of.items():
        children.setdefault(parent, []).append(child)
    pairs = [(child, parent) for child, parent in parent_of.items()]
    pairs += [(a, b) for family in children.values() for a in family for b in family if a != b]
    n = len(completions)
    pairs += [(a, (a * 7 + 3) % n) for a in range(n) if (a * 7 + 3) % n != a]
    roots = [v for v in range(n) if v not in parent_of]
    return completions, pairs, roots


# --------------------------------------------------------------------------- seeded random
POOL = [
    "}",
    "",
    "  }",
    "    return total;",
    "// ---------------------------------------------------------------",
    "const goal = 2000;",
    "import { render } from './render.js';",
    "värde = 'vatten'  // 水を飲む",
    "emoji 🚰💧 in a line",
    "\ttabbed\tline",
    '<div class="card">',
    "</div>",
]
BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
PATHS = ["app.js", "index.html", "style.css", "lib/util.js", "données.txt", "Z.md", "a b.js"]


def random_line(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.3:
        return rng.choice(POOL)
    if kind < 0.95:
        return f"let v{rng.randrange(10**6)} = '{'x' * rng.randrange(0, 90)}';"
    return "// " + "long " * rng.randrange(100, 500)  # alone longer than the budget


def random_text(rng: random.Random, lines: list[str]) -> str:
    """``lines`` joined mostly by newlines, now and then by any other line break, sometimes
    with a break at the end."""
    out = []
    for line in lines:
        out.append(line)
        out.append("\n" if rng.random() < 0.9 else rng.choice(BREAKS))
    if out and rng.random() < 0.7:
        out.pop()
    return "".join(out)


def random_lines(rng: random.Random) -> list[str]:
    count = rng.choice([0, 1, 2, 5, 12, 40, 120, 300, 480])
    return [random_line(rng) for _ in range(count)]


def changed_lines(rng: random.Random, lines: list[str]) -> list[str]:
    """``lines`` after a few edits of the kinds a fork makes."""
    lines = list(lines)
    for _ in range(rng.randrange(1, 5)):
        edit = rng.randrange(7)
        at = rng.randrange(len(lines) + 1)
        if edit == 0 and lines:  # change lines in place
            for _ in range(rng.randrange(1, 4)):
                lines[rng.randrange(len(lines))] = random_line(rng)
        elif edit == 1:  # insert a run
            lines[at:at] = [random_line(rng) for _ in range(rng.randrange(1, 12))]
        elif edit == 2:  # remove a run
            del lines[at : at + rng.randrange(1, 20)]
        elif edit == 3 and lines:  # duplicate a line elsewhere
            lines.insert(at, rng.choice(lines))
        elif edit == 4 and len(lines) > 4:  # move a block
            start = rng.randrange(len(lines) - 3)
            block = lines[start : start + rng.randrange(1, 10)]
            del lines[start : start + len(block)]
            at = rng.randrange(len(lines) + 1)
            lines[at:at] = block
        elif edit == 5:  # scattered single changes, each far from the next
            for index in range(rng.randrange(3), len(lines), rng.randrange(5, 30)):
                lines[index] = random_line(rng)
        else:  # shared lines only, reordered
            rng.shuffle(lines)
    return lines


def random_manifest(rng: random.Random) -> dict:
    manifest = {
        "name": rng.choice(["Water Tracker", "Sömn", "睡眠ログ", "Mood 🙂"]),
        "entry": "index.html",
        "scopes": rng.sample(["hydration.read", "hydration.write", "sleep.read"], rng.randrange(3)),
        "hosts": [],
        "data_schema": {"type": "object", "properties": {"ml": {"type": "number"}}},
        "version": 1,
    }
    if rng.random() < 0.8:
        manifest["description"] = "Tap a glass. " * rng.randrange(1, 40)
    return manifest


def changed_manifest(rng: random.Random, manifest: dict) -> dict:
    manifest = dict(manifest)
    for _ in range(rng.randrange(4)):
        edit = rng.randrange(8)
        if edit == 0:
            manifest["name"] = manifest.get("name", "") + " II"
        elif edit == 1:
            manifest.pop("description", None)
        elif edit == 2:
            manifest["scopes"] = [*manifest["scopes"], "mood.read"]
        elif edit == 3:
            manifest["data_schema"] = {"type": "object", "required": ["ml"], "properties": {}}
        elif edit == 4:
            manifest[rng.choice(["ñ", "Zeta", "a_new_key", "ключ"])] = {"b": 1, "a": [True, None]}
        elif edit == 5:
            manifest["version"] = rng.choice([1.0, True, 2, "1"])  # 1.0 and True equal 1
        elif edit == 6:
            manifest.pop(rng.choice(sorted(manifest)))
        else:
            manifest["description"] = "Tracks water. " * rng.randrange(1, 200)
    return manifest


def random_files(rng: random.Random) -> dict[str, list[str]]:
    return {path: random_lines(rng) for path in rng.sample(PATHS, rng.randrange(5))}


def changed_files(rng: random.Random, files: dict[str, list[str]]) -> dict[str, list[str]]:
    out = {}
    for path, lines in files.items():
        fate = rng.random()
        if fate < 0.35:
            out[path] = lines  # alike
        elif fate < 0.85:
            out[path] = changed_lines(rng, lines)
        elif fate < 0.93:
            out[path] = []  # emptied
        # else: removed
    for path in PATHS:
        if path not in out and rng.random() < 0.1:
            out[path] = random_lines(rng)  # added
    return out


def random_corpus(seed: int = 20_261_202) -> tuple[list[str], list[tuple[int, int]], list[int]]:
    rng = random.Random(seed)
    completions, pairs, roots = [], [], []
    for _family in range(70):
        manifest, files = random_manifest(rng), random_files(rng)
        members = [(manifest, files)]
        for _variant in range(rng.randrange(1, 4)):
            base_manifest, base_files = rng.choice(members)
            members.append((changed_manifest(rng, base_manifest), changed_files(rng, base_files)))
        members.append((random_manifest(rng), random_files(rng)))  # unrelated
        start = len(completions)
        for member_manifest, member_files in members:
            texts = {path: random_text(rng, lines) for path, lines in member_files.items()}
            completions.append(canonical_bytes(member_manifest, texts).decode())
        family = range(start, len(completions))
        pairs += [(a, b) for a in family for b in family if a != b]
        pairs.append((start, start))  # a bundle against itself
        roots += list(family)
    return completions, pairs, roots


CORPORA = {"bench": bench_corpus, "demo": demo_corpus, "random": random_corpus}


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_views_are_byte_for_byte_as_pinned(corpus):
    completions, pairs, roots = CORPORA[corpus]()
    assert digest(views_of(completions, pairs, roots)) == PINNED_SHA256[corpus]


def test_the_random_corpus_reaches_every_kind_of_view():
    """The generator makes what the pins are meant to cover (so a change to it that stopped
    making, say, views cut at the budget would not pass unnoticed)."""
    completions, pairs, roots = random_corpus()
    views = list(views_of(completions, pairs, roots))
    text = "\n".join(views)
    for marker in (
        "more changed lines not shown ⋯",
        "more changed line not shown ⋯",
        "lines as in the other version ⋯",
        "; as in the other version) ---",
        ": not in this version ---",
        " (0 lines; changed) ---",
        " (0 lines) ---",
        "more lines ⋯",
    ):
        assert marker in text, marker
    assert any(view.count("--- ") >= 4 for view in views)
    assert len(views) > 1_000
