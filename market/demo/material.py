"""The demo's material, read from the data files in ``market/demo/assets`` (package data).

* ``people.toml`` -- names, places and lifestyle personas for demo users;
* ``roots/NN-<key>.json`` -- one root sub-agent each (its story, its app's ``CONFIG`` and
  the fork recipes that grow from it), in catalog order (``NN``);
* ``apps/`` -- the JavaScript every generated ``app.js`` is assembled from (``prelude.js``,
  ``engines/<engine>.js``, ``features/<feature>.js``, ``bootstrap.js``), the page layout
  of each engine and the network host of each feature (``apps.json``), the UI strings
  (``ui/<lang>.json``) and the translations of config labels (``labels.json``);
* ``comments.toml`` -- what demo raters write, by feedback tag (or by how they rated) and
  language.

``assets/README.md`` describes the fields. Everything is read once, on import, through
:mod:`importlib.resources`, so an installed wheel reads the same files as a checkout.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

__all__ = ["APPS", "COMMENTS", "PEOPLE", "ROOTS", "Apps", "People"]

_ASSETS = files("market.demo").joinpath("assets")


def _text(path: str) -> str:
    return _ASSETS.joinpath(*path.split("/")).read_text(encoding="utf-8")


def _json(path: str) -> Any:
    return json.loads(_text(path))


def _js(path: str) -> str:
    # app.js is these blocks laid end to end, each starting on a line of its own.
    return "\n" + _text(path)


def _pairs(rows: list[list[Any]]) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in rows]


@dataclass(frozen=True)
class People:
    """Name pools are ``(name, gender)``, ``(hanzi, pinyin[, gender])`` or ``(kanji,
    romaji[, gender])``; ``locales`` are ``(locale, weight)``. Order matters: the
    generator draws from these lists with a seeded RNG."""

    first_en: list[tuple[str, str]]
    last_en: list[str]
    first_fr: list[tuple[str, str]]
    last_fr: list[str]
    first_es: list[tuple[str, str]]
    last_es: list[str]
    surname_zh: list[tuple[str, str]]
    given_zh: list[tuple[str, str, str]]
    surname_ja: list[tuple[str, str]]
    given_ja: list[tuple[str, str, str]]
    locales: list[tuple[str, int]]
    area_codes: dict[str, list[str]]
    streets: list[str]
    towns: dict[str, list[str]]
    handle_suffixes: list[str]
    handle_prefixes: dict[str, list[str]]
    personas: list[dict[str, Any]]
    outcomes: dict[str, list[str]]
    outcomes_zh: list[str]
    outcomes_ja: list[str]
    outcomes_es: list[str]


_PAIRED = frozenset(
    {
        "first_en",
        "first_fr",
        "first_es",
        "surname_zh",
        "given_zh",
        "surname_ja",
        "given_ja",
        "locales",
    }
)


def _people() -> People:
    data = tomllib.loads(_text("people.toml"))
    return People(**{k: _pairs(v) if k in _PAIRED else v for k, v in data.items()})


def _roots() -> list[dict[str, Any]]:
    names = sorted(
        entry.name
        for entry in _ASSETS.joinpath("roots").iterdir()
        if isinstance(entry, Traversable) and entry.name.endswith(".json")
    )
    return [_json(f"roots/{name}") for name in names]


@dataclass(frozen=True)
class Apps:
    """The pieces of every generated app (see :mod:`market.demo.render`)."""

    prelude_js: str
    bootstrap_js: str
    engines: dict[str, str]  # engine -> its render()/init() block
    feature_js: dict[str, str]  # feature -> its block, in the order app.js appends them
    feature_hosts: dict[str, str]  # network feature -> the host it talks to
    layouts: dict[str, tuple[str, ...]]  # engine -> index.html blocks, top to bottom
    log_engines: frozenset[str]  # engines whose main record lives in LOG (CSV makes sense)
    ui: dict[str, dict[str, str]]  # language -> UI string key -> text
    labels: dict[str, dict[str, str]]  # English config label -> language -> translation


_LANGS = ("en", "zh", "ja", "es")


def _apps() -> Apps:
    spec = _json("apps/apps.json")
    layouts = {engine: tuple(blocks) for engine, blocks in spec["layouts"].items()}
    return Apps(
        prelude_js=_js("apps/prelude.js"),
        bootstrap_js=_js("apps/bootstrap.js"),
        engines={engine: _js(f"apps/engines/{engine}.js") for engine in layouts},
        feature_js={name: _js(f"apps/features/{name}.js") for name in spec["features"]},
        feature_hosts=spec["feature_hosts"],
        layouts=layouts,
        log_engines=frozenset(spec["log_engines"]),
        ui={lang: _json(f"apps/ui/{lang}.json") for lang in _LANGS},
        labels=_json("apps/labels.json"),
    )


def _comments() -> dict[str, dict[str, tuple[str, ...]]]:
    data = tomllib.loads(_text("comments.toml"))
    return {
        key: {lang: tuple(texts) for lang, texts in by_lang.items()}
        for key, by_lang in data.items()
    }


PEOPLE: People = _people()
ROOTS: list[dict[str, Any]] = _roots()
APPS: Apps = _apps()
COMMENTS: dict[str, dict[str, tuple[str, ...]]] = _comments()  # key -> language -> texts
