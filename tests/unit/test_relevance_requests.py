"""The labelled relevance set (bench/data/relevance_requests.toml) keeps its shape.

The set is the yardstick search and fork suggestions are tuned and judged against, so a
careless edit (a misspelt family key, a grade of 3, a lost gloss, a holdout share that
drifts) would silently move every number measured with it. These checks read the file
and the demo's root families only; they say nothing about how well anything ranks.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from pathlib import Path

import pytest

import market.demo

REQUESTS_FILE = Path(__file__).resolve().parents[2] / "bench" / "data" / "relevance_requests.toml"
ROOTS_DIR = Path(market.demo.__file__).parent / "assets" / "roots"

LANGUAGES = {"en", "zh", "ja", "ko", "es"}
MINIMUM_PER_LANGUAGE = {"en": 70, "zh": 40, "ja": 35, "ko": 8, "es": 8}
MINIMUM_TOTAL = 170
MINIMUM_CROSS = 50
MINIMUM_NO_FIT = 25
FIELDS = {"id", "lang", "text", "gloss", "fits", "split", "cross"}
ID_PATTERN = re.compile(r"^(en|zh|ja|ko|es)-[a-z]+(-[a-z]+)*-\d{2}$")
ISSUE_EXAMPLES = {
    "water",
    "喝水",
    "记账",
    "水",
    "水を飲む",
    "睡眠",
    "我想每天记账，超过预算时提醒我",
    "子どもの漢字の練習を毎日したい",
}


@pytest.fixture(scope="module")
def requests() -> list[dict]:
    with REQUESTS_FILE.open("rb") as handle:
        return tomllib.load(handle)["request"]


@pytest.fixture(scope="module")
def family_keys() -> set[str]:
    return {json.loads(path.read_text())["key"] for path in ROOTS_DIR.glob("*.json")}


def test_every_request_has_known_fields_and_the_required_ones(requests: list[dict]) -> None:
    for request in requests:
        assert set(request) <= FIELDS, request["id"]
        assert {"id", "lang", "text", "fits", "split"} <= set(request), request
        assert request["text"].strip(), request["id"]


def test_ids_are_unique_sorted_and_name_their_language(requests: list[dict]) -> None:
    ids = [request["id"] for request in requests]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    assert ids == sorted(ids)
    for request in requests:
        assert ID_PATTERN.match(request["id"]), request["id"]
        assert request["id"].split("-", 1)[0] == request["lang"], request["id"]


def test_languages_are_allowed_and_each_has_its_minimum(requests: list[dict]) -> None:
    per_language = Counter(request["lang"] for request in requests)
    assert set(per_language) <= LANGUAGES
    for language, minimum in MINIMUM_PER_LANGUAGE.items():
        assert per_language[language] >= minimum, language
    assert len(requests) >= MINIMUM_TOTAL


def test_non_english_requests_carry_a_gloss_and_english_ones_do_not(
    requests: list[dict],
) -> None:
    for request in requests:
        if request["lang"] == "en":
            assert "gloss" not in request, request["id"]
        else:
            assert request.get("gloss", "").strip(), request["id"]


def test_fits_name_existing_families_with_grade_one_or_two(
    requests: list[dict], family_keys: set[str]
) -> None:
    assert len(family_keys) == 57
    for request in requests:
        for family, grade in request["fits"].items():
            assert family in family_keys, (request["id"], family)
            assert grade in (1, 2) and type(grade) is int, (request["id"], family)


def test_every_family_is_labelled_at_least_once(
    requests: list[dict], family_keys: set[str]
) -> None:
    labelled = {family for request in requests for family in request["fits"]}
    assert labelled == family_keys


def test_there_are_enough_no_fit_requests_in_every_language(requests: list[dict]) -> None:
    no_fit = [request for request in requests if not request["fits"]]
    assert len(no_fit) >= MINIMUM_NO_FIT
    assert {request["lang"] for request in no_fit} == LANGUAGES


def test_cross_language_rows_are_marked_true_and_have_a_fit(requests: list[dict]) -> None:
    cross = [request for request in requests if "cross" in request]
    assert all(request["cross"] is True for request in cross)
    assert all(request["fits"] for request in cross)
    assert len(cross) >= MINIMUM_CROSS


def test_holdout_is_a_fifth_of_each_language_and_includes_no_fit(
    requests: list[dict],
) -> None:
    assert {request["split"] for request in requests} == {"tune", "holdout"}
    holdout = [request for request in requests if request["split"] == "holdout"]
    assert 0.15 <= len(holdout) / len(requests) <= 0.25
    per_language = Counter(request["lang"] for request in requests)
    held_per_language = Counter(request["lang"] for request in holdout)
    for language, total in per_language.items():
        assert 0.1 <= held_per_language[language] / total <= 0.3, language
    assert any(not request["fits"] for request in holdout)


def test_the_issue_examples_are_in_the_set(requests: list[dict]) -> None:
    texts = {request["text"] for request in requests}
    assert texts >= ISSUE_EXAMPLES
