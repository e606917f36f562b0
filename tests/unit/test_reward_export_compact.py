"""Compact completions (``feedback.export.compact``): each side of a pair shows what tells it
apart from the other, a fork shows its change against its parent, a root its files' heads, and
no view's file lines exceed the budget."""

from __future__ import annotations

import tracemalloc

import numpy as np

from feedback.export.compact import BUDGET, ParsedBundle, compact_pair, compact_version, parse
from feedback.export.texts import TextCache
from market.catalog.bundles import canonical_bytes

MANIFEST = {
    "name": "Water Tracker",
    "description": "Tap a glass.",
    "entry": "index.html",
    "scopes": ["hydration.read"],
    "hosts": [],
    "data_schema": {"type": "object", "properties": {"ml": {"type": "number"}}},
}
APP = [f"const line{i} = {i};  // shared logic" for i in range(400)]


def completion(manifest: dict, files: dict[str, str]) -> str:
    return canonical_bytes(manifest, files).decode()


def with_line(index: int, text: str) -> str:
    lines = list(APP)
    lines[index] = text
    return "\n".join(lines)


def file_lines(view: str) -> list[str]:
    """The lines of a view that are file content (not headers, markers or the manifest)."""
    return [
        line for line in view.splitlines() if not line.startswith(("manifest.json: ", "--- ", "⋯ "))
    ]


def budget_used(view: str) -> int:
    """What the budget counts: the manifest line and the file lines shown."""
    return len(view.splitlines()[0]) + sum(len(line) + 1 for line in file_lines(view))


def test_each_side_of_a_pair_shows_its_own_change_with_context_and_counts_the_rest():
    chosen = completion(
        MANIFEST, {"app.js": with_line(200, "const goal = 2000;"), "style.css": "body{}"}
    )
    rejected = completion(
        MANIFEST, {"app.js": with_line(200, "const goal = 1500;"), "style.css": "body{}"}
    )
    chosen_view, rejected_view = compact_pair(chosen, rejected)
    assert "const goal = 2000;" in chosen_view and "1500" not in chosen_view
    assert "const goal = 1500;" in rejected_view and "2000" not in rejected_view
    for view in (chosen_view, rejected_view):
        assert APP[197] in view and APP[203] in view  # three lines of context each side
        assert APP[196] not in view and APP[204] not in view
        assert "⋯ 197 lines as in the other version ⋯" in view
        assert "⋯ 196 lines as in the other version ⋯" in view
        assert "--- style.css (1 line; as in the other version) ---" in view
        assert "body{}" not in view
        assert len(view) < len(chosen) / 10


def test_the_manifest_names_the_app_and_shows_only_the_keys_that_differ():
    other = {**MANIFEST, "scopes": ["hydration.read", "hydration.write"]}
    chosen_view, rejected_view = compact_pair(
        completion(MANIFEST, {"app.js": "a"}), completion(other, {"app.js": "b"})
    )
    first = chosen_view.splitlines()[0]
    assert first.startswith("manifest.json: ")
    assert '"name":"Water Tracker"' in first and '"description":"Tap a glass."' in first
    assert '"scopes":["hydration.read"]' in first
    assert "data_schema" not in first and "entry" not in first
    assert '"scopes":["hydration.read","hydration.write"]' in rejected_view.splitlines()[0]


def test_a_fork_shows_its_change_against_its_parent_and_files_added_or_removed():
    parent = completion(MANIFEST, {"app.js": "\n".join(APP), "old.css": "p{}"})
    fork = completion(MANIFEST, {"app.js": with_line(5, "const fork = true;"), "new.css": "h1{}"})
    view = compact_version(fork, parent)
    assert "const fork = true;" in view
    assert "--- new.css (1 line; changed) ---\nh1{}" in view
    assert "--- old.css: not in this version ---" in view
    assert compact_pair(fork, parent)[0] == view


def test_a_root_shows_the_head_of_every_file_within_the_budget():
    files = {"app.js": "\n".join(APP), "index.html": "<h1>Water</h1>", "style.css": "body{}"}
    view = compact_version(completion(MANIFEST, files), None)
    assert '"data_schema"' in view.splitlines()[0]  # a root shows its whole manifest
    assert APP[0] in view and APP[399] not in view
    assert "<h1>Water</h1>" in view and "body{}" in view  # every file gets its share
    assert "--- app.js (400 lines) ---" in view
    assert budget_used(view) <= BUDGET


def test_two_unrelated_apps_are_cut_to_the_budget_with_a_count_of_what_was_left_out():
    other = [f"let unrelated{i} = '{i}';" for i in range(400)]
    chosen_view, rejected_view = compact_pair(
        completion(MANIFEST, {"app.js": "\n".join(APP)}),
        completion(MANIFEST, {"app.js": "\n".join(other)}),
    )
    for view in (chosen_view, rejected_view):
        shown = file_lines(view)
        assert shown and budget_used(view) <= BUDGET
        assert view.splitlines()[-1] == f"⋯ {400 - len(shown)} more changed lines not shown ⋯"


def _held_by_parsing(text: str) -> tuple[ParsedBundle, int]:
    """A parsed bundle (with the distinct lines a comparison builds) and the bytes it holds
    (after a first parse, which also fills the process's one-time caches)."""
    parse(text)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        parsed = parse(text)
        for file in parsed.files.values():
            file.members  # noqa: B018 - built as a comparison builds it
        return parsed, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_parsed_bundle_counts_about_what_it_holds_not_its_characters():
    """The export's cache of parsed bundles keeps to its budget by these sizes: counted in
    characters, a cache of bundles of short lines held up to seven times its budget."""
    short = completion(MANIFEST, {"index.html": "<p>hi</p>", "app.js": "\n".join(APP[:20])})
    long = completion(MANIFEST, {f"src/part{j}.js": "\n".join(APP[:70]) for j in range(6)})
    held = {}
    for text in (short, long):
        parsed, held[text] = _held_by_parsing(text)
        assert 0.75 * held[text] <= parsed.size <= 1.25 * held[text], (len(text), parsed.size)
    # What was counted before, the characters: a sixth of what the short one holds.
    assert len(short) < held[short] / 5


def test_the_cache_keeps_parsed_bundles_within_their_budget():
    texts = [
        completion({**MANIFEST, "name": f"App {k}"}, {"app.js": "\n".join(APP[k : k + 200])})
        for k in range(20)
    ]
    one = parse(texts[0]).size
    cache = TextCache(None, np.arange(20), bundle_budget=5 * one)
    for k, text in enumerate(texts):
        cache.bundle(k, text)
    assert sum(b.size for b in cache.bundles.values()) <= 5 * one
    kept = list(cache.bundles)
    assert len(kept) >= 4 and kept == list(range(20 - len(kept), 20))  # the most recently used
