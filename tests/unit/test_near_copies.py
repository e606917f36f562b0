"""evolution.near_copies: copies are found through renaming, reformatting and light edits;
apps that only share a template are not."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest

from evolution import near_copies as nc


@dataclass(frozen=True)
class Bundle:
    manifest: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(3))


_TEMPLATE_RNG = random.Random(0)


# The template every app is written from: functions of shared code, as in the demo's engines.
def _template_line(rng: random.Random) -> str:
    return f'  const {_word(rng)} = items.{_word(rng)}("{_word(rng)}");\n'


_TEMPLATE = [
    f"function {_word(_TEMPLATE_RNG)}(items) {{\n"
    + "".join(_template_line(_TEMPLATE_RNG) for _ in range(6))
    + "}\n"
    for _ in range(20)
]


def app(seed: int, title: str | None = None) -> Bundle:
    """A template app with its own title, labels and list items."""
    rng = random.Random(10_000 + seed)  # not the template's words
    title = title or f"{_word(rng).title()} {_word(rng).title()}"
    labels = [" ".join(_word(rng) for _ in range(3)) for _ in range(12)]
    config = (
        "const CONFIG = {\n"
        + f'  "title": "{title}",\n'
        + "".join(f'  "label{i}": "{label}",\n' for i, label in enumerate(labels))
        + "};\n"
    )
    html = f"<html><head><title>{title}</title></head><body><h1>{title}</h1></body></html>\n"
    return Bundle(
        manifest={"name": title, "entry": "index.html", "scopes": [], "description": title},
        files={"app.js": "// generated\n" + config + "".join(_TEMPLATE), "index.html": html},
    )


def renamed_and_reformatted(bundle: Bundle, title: str) -> Bundle:
    old = bundle.manifest["name"]
    js = bundle.files["app.js"].replace(old, title)
    head, *functions = re.split(r"(?m)^(?=function )", js)
    functions.reverse()
    js = head + "".join(functions)
    js = re.sub(r"(?m)^ +", "\t", js).replace('"', "'").replace("// generated", "/* mine */")
    html = re.sub(r">\s*<", ">\n  <", bundle.files["index.html"].replace(old, title))
    return Bundle(
        manifest={**bundle.manifest, "name": title, "description": "my own tool"},
        files={"index.html": html, "app.js": js},
    )


def lightly_edited(bundle: Bundle) -> Bundle:
    js = (
        bundle.files["app.js"]
        .replace('"label0"', '"first"')
        .replace('"label1":', '"extra": "one more line",\n  "label1":')
    )
    return replace(bundle, files={**bundle.files, "app.js": js})


CATALOG = [app(seed) for seed in range(40)]


@pytest.fixture(scope="module")
def boilerplate() -> nc.Boilerplate:
    return nc.Boilerplate.learn(CATALOG, max_document_frequency=0.2)


@pytest.fixture
def index(boilerplate: nc.Boilerplate) -> nc.NearCopyIndex:
    index = nc.NearCopyIndex(boilerplate)
    for key, bundle in enumerate(CATALOG):
        assert index.add(key, bundle) is not None
    return index


def test_a_renamed_reformatted_copy_is_found_and_flagged(index: nc.NearCopyIndex) -> None:
    copy = renamed_and_reformatted(CATALOG[3], "Totally Different Name")

    matches = index.query(copy)

    assert [m.key for m in matches] == [3]
    assert matches[0].similarity == 1.0
    assert matches[0].moderation


def test_a_lightly_edited_copy_is_offered_as_a_fork(index: nc.NearCopyIndex) -> None:
    matches = index.query(lightly_edited(renamed_and_reformatted(CATALOG[5], "Other Title")))

    assert [m.key for m in matches] == [5]
    assert nc.FORK_OFFER <= matches[0].similarity < 1.0


def test_an_unrelated_app_from_the_same_template_is_not_a_match(
    index: nc.NearCopyIndex,
) -> None:
    lookalike = app(1000)

    assert index.query(lookalike) == []
    # It is the boilerplate that would have matched it: with the template kept, it does.
    with_template = nc.NearCopyIndex(nc.Boilerplate.none())
    for key, bundle in enumerate(CATALOG):
        with_template.add(key, bundle)
    assert with_template.query(lookalike) != []


def test_remove_forgets(index: nc.NearCopyIndex) -> None:
    copy = renamed_and_reformatted(CATALOG[7], "Seven")
    index.remove(7)
    index.remove(7)  # removing twice is harmless

    assert 7 not in index
    assert len(index) == len(CATALOG) - 1
    assert index.query(copy) == []
    index.add(7, CATALOG[7])
    assert [m.key for m in index.query(copy)] == [7]


def test_stored_signatures_rebuild_an_equal_index(
    index: nc.NearCopyIndex, boilerplate: nc.Boilerplate
) -> None:
    stored = [(key, sig.copy()) for key, sig in index.signatures()]
    rebuilt = nc.NearCopyIndex.from_signatures(boilerplate, stored)
    queries = [renamed_and_reformatted(b, "Renamed") for b in CATALOG[:10]] + [app(2000)]

    assert len(rebuilt) == len(index)
    assert [rebuilt.query(q) for q in queries] == [index.query(q) for q in queries]


def test_many_additions_and_removals_stay_consistent(boilerplate: nc.Boilerplate) -> None:
    # Enough signatures that additions are merged into the sorted arrays more than once.
    rng = np.random.default_rng(1)
    signatures = rng.integers(0, 2**32, size=(3000, nc.NUM_PERM), dtype=np.uint32)
    index = nc.NearCopyIndex(boilerplate)
    for key, sig in enumerate(signatures):
        index.add_signature(key, sig)
    for key in range(0, 3000, 2):
        index.remove(key)
    index.add_signature(1, signatures[2])  # re-adding a key replaces its signature

    assert [m.key for m in index.query_signature(signatures[3])] == [3]
    assert index.query_signature(signatures[4]) == []
    assert [m.key for m in index.query_signature(signatures[2])] == [1]
    assert index.query_signature(signatures[1]) == []
    assert len(index) == 1500


def test_exact_fingerprint_survives_renaming_and_spacing_but_no_edit() -> None:
    bundle = CATALOG[0]
    respaced = replace(
        bundle,
        manifest={**bundle.manifest, "name": "New Name", "description": "other"},
        files={
            path: text.replace(bundle.manifest["name"], "New Name").replace("  ", "    ")
            for path, text in bundle.files.items()
        },
    )

    assert nc.exact_fingerprint(respaced) == nc.exact_fingerprint(bundle)
    assert nc.exact_fingerprint(lightly_edited(bundle)) != nc.exact_fingerprint(bundle)


def test_empty_and_absurd_bundles_are_handled(index: nc.NearCopyIndex) -> None:
    empty = Bundle(manifest={})
    rng = random.Random(3)
    binary = "".join(chr(rng.randrange(0, 256)) for _ in range(20_000))
    huge = Bundle(manifest={"name": "Huge"}, files={"big.js": "x = 1; /* " + "y " * 500_000})

    assert nc.signature(empty, index.boilerplate) is None
    assert index.add("empty", empty) is None
    assert "empty" not in index
    assert index.query(empty) == []
    assert index.query(huge) == []  # an unclosed comment swallows the rest: nothing left
    big_words = Bundle(manifest={"name": "Big"}, files={"big.js": "word " * 1_000_000})
    assert len(nc.shingle_hashes(big_words)) == 1  # capped, and one repeated shingle
    assert index.query(Bundle(manifest={"name": "Bin"}, files={"bin.dat": binary})) == []
    assert index.add("binary", Bundle(manifest={}, files={"bin.dat": binary})) is not None


def test_exact_jaccard_agrees_with_a_set_recount(boilerplate: nc.Boilerplate) -> None:
    """The fast path (sorted arrays) against its slow twin (Python sets)."""
    mine = nc.distinctive_shingles(lightly_edited(CATALOG[5]), boilerplate)
    theirs = nc.distinctive_shingles(CATALOG[5], boilerplate)
    a, b = set(mine.tolist()), set(theirs.tolist())

    similarity, shared = nc.jaccard(mine, theirs)

    assert shared == len(a & b)
    assert similarity == pytest.approx(len(a & b) / len(a | b))
    assert nc.jaccard(mine, np.zeros(0, np.uint32)) == (0.0, 0)
    assert nc.jaccard(np.zeros(0, np.uint32), np.zeros(0, np.uint32)) == (0.0, 0)


def test_matching_files_pair_each_copied_file_with_its_source(
    boilerplate: nc.Boilerplate,
) -> None:
    copy = renamed_and_reformatted(CATALOG[3], "Totally Different Name")
    copy = Bundle(copy.manifest, {"main.js": copy.files["app.js"], "page.html": "<p>mine</p>"})

    [match] = nc.matching_files(copy, CATALOG[3], boilerplate)

    assert (match.path, match.original_path) == ("main.js", "app.js")
    assert match.shared > 0 and match.share == 1.0
    assert nc.matching_files(app(1000), CATALOG[3], boilerplate) == []
