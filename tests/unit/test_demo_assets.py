"""The demo's data files: every JavaScript file parses, alone and as the app.js blocks it
becomes, and the files and their index agree (no engine without a layout, no orphan file).

Node checks each ``.js`` file on its own and, per engine, the strict-mode script made of
the prelude, the engine, every feature block and the bootstrap, so a block that
redeclares another's name or breaks a strict-mode rule fails here, before any bundle.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import market.demo
from market.demo.activity_plan import FEEDBACK_TAGS
from market.demo.material import APPS, COMMENTS, ROOTS

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH")

ASSETS = Path(market.demo.__file__).parent / "assets"
APP_DIR = ASSETS / "apps"
JS_FILES = sorted(ASSETS.rglob("*.js"))


def node_check(path: Path) -> None:
    result = subprocess.run(
        [NODE, "--check", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"{path.name}:\n{result.stderr}"


def test_there_are_javascript_files_to_check() -> None:
    assert len(JS_FILES) == 2 + len(APPS.engines) + len(APPS.feature_js)


@needs_node
@pytest.mark.parametrize("path", JS_FILES, ids=lambda p: str(p.relative_to(ASSETS)))
def test_each_javascript_file_parses(path: Path) -> None:
    node_check(path)


@needs_node
@pytest.mark.parametrize("engine", sorted(APPS.engines))
def test_each_engine_with_every_block_parses_in_strict_mode(engine: str, tmp_path: Path) -> None:
    script = (
        '"use strict";\nconst CONFIG = {};\n'
        + APPS.prelude_js
        + APPS.engines[engine]
        + "".join(APPS.feature_js.values())
        + APPS.bootstrap_js
    )
    path = tmp_path / f"{engine}.js"
    path.write_text(script, encoding="utf-8")
    node_check(path)


def test_engines_layouts_and_features_have_their_files() -> None:
    engines = {p.stem for p in (APP_DIR / "engines").glob("*.js")}
    features = {p.stem for p in (APP_DIR / "features").glob("*.js")}
    index = json.loads((APP_DIR / "apps.json").read_text(encoding="utf-8"))
    assert engines == set(index["layouts"])
    assert features == set(index["features"])
    assert set(index["feature_hosts"]) <= features
    assert set(index["log_engines"]) <= engines
    assert {root["engine"] for root in ROOTS} <= engines


def test_every_language_has_every_ui_string() -> None:
    keys = [list(strings) for strings in APPS.ui.values()]
    assert all(k == keys[0] for k in keys)
    assert {p.stem for p in (APP_DIR / "ui").glob("*.json")} == set(APPS.ui)


def test_roots_are_one_file_each_named_by_their_key() -> None:
    names = sorted(p.name for p in (ASSETS / "roots").glob("*.json"))
    assert names == [f"{i:02d}-{root['key']}.json" for i, root in enumerate(ROOTS, start=1)]
    assert len({root["key"] for root in ROOTS}) == len(ROOTS)


def test_every_feedback_tag_and_rating_band_has_comments_in_every_language() -> None:
    # The planner keys a comment by the tag that leads it, or by the rating band when no tag
    # does, and writes in English, Chinese, Japanese or Spanish.
    keys = {*FEEDBACK_TAGS, "low", "mid", "high"}
    assert set(COMMENTS) == keys
    assert all(set(COMMENTS[key]) == {"en", "zh", "ja", "es"} for key in keys)
    assert all(texts for by_lang in COMMENTS.values() for texts in by_lang.values())
