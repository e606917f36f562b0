"""bench.relevance_metrics on hand-made rankings, and the BM25 baseline's tokenizer."""

from __future__ import annotations

import math

import pytest

from bench.relevance import bm25_tokens, targets
from bench.relevance_metrics import (
    LabelError,
    Request,
    abstain_score,
    abstained,
    first_appearances,
    mean_metrics,
    ndcg_at,
    only_listed_families,
    parse_requests,
    recall_at,
    reciprocal_rank,
    request_metrics,
)

FITS = {"water": 2, "tea": 1}


def test_a_family_counts_once_however_many_of_its_forks_are_listed():
    assert first_appearances(["water", "water", None, "tea", "water"]) == [
        "water",
        None,
        None,
        "tea",
        None,
    ]
    clones = ["water"] * 5
    assert recall_at(clones, FITS) == 0.5
    # Five forks of the best family are worth exactly one of them.
    assert ndcg_at(clones, FITS) == pytest.approx(ndcg_at(["water", None, None, None, None], FITS))
    assert ndcg_at(clones, FITS) < ndcg_at(["water", "tea"], FITS) == pytest.approx(1.0)


def test_recall_at_5_divides_by_at_most_five_fitting_families():
    assert recall_at(["tea", "other", "water"], FITS) == 1.0
    assert recall_at(["other"] * 5 + ["water"], FITS) == 0.0  # the sixth is beyond k
    seven = {f"f{i}": 1 for i in range(7)}
    assert recall_at([f"f{i}" for i in range(5)], seven) == 1.0
    assert recall_at(["f0", "f1"], seven) == pytest.approx(2 / 5)


def test_ndcg_uses_graded_gains_against_the_ideal_order():
    # Ideal: water (gain 3) then tea (gain 1). Reversed: tea first, water second.
    ideal = 3 + 1 / math.log2(3)
    assert ndcg_at(["tea", "water"], FITS) == pytest.approx((1 + 3 / math.log2(3)) / ideal)
    assert ndcg_at(["other", "other2"], FITS) == 0.0
    assert ndcg_at(["tea"], {"tea": 1}) == 1.0


def test_reciprocal_rank_is_the_first_fitting_family_within_ten():
    assert reciprocal_rank(["other", "tea", "water"], FITS) == 0.5
    assert reciprocal_rank([None] * 9 + ["water"], FITS) == pytest.approx(0.1)
    assert reciprocal_rank([None] * 10 + ["water"], FITS) == 0.0
    assert request_metrics(["other", "tea"], FITS)["rr"] == 0.5


def test_means_cover_the_slice_and_an_empty_slice_has_none():
    one = request_metrics(["water", "tea"], FITS)
    none = request_metrics(["other"], FITS)
    means = mean_metrics([one, none])
    assert means == {"recall_at_5": 0.5, "ndcg_at_5": 0.5, "mrr": 0.5, "n": 2}
    assert mean_metrics([]) == {"recall_at_5": None, "ndcg_at_5": None, "mrr": None, "n": 0}


def test_abstaining_is_a_none_verdict_or_else_an_empty_list():
    assert abstained("none", [1, 2])
    assert not abstained("weak", [])  # a verdict decides, whatever the list
    assert not abstained("fits", [1])
    assert abstained(None, [])
    assert not abstained(None, [3])


def _request(name: str, fits: dict[str, int]) -> Request:
    return Request(id=name, lang="en", text=name, split="tune", fits=fits)


def test_abstain_precision_recall_and_wrong_abstains():
    nothing_a, nothing_b = _request("a", {}), _request("b", {})
    perfect, related = _request("c", {"water": 2}), _request("d", {"tea": 1})
    score = abstain_score([(nothing_a, True), (nothing_b, False), (perfect, True), (related, True)])
    assert (score.abstained, score.correct, score.no_fit) == (3, 1, 2)
    assert score.precision == pytest.approx(1 / 3)
    assert score.recall == 0.5
    # Only an abstention where a grade-2 fit exists is a wrong one.
    assert (score.wrong, score.with_fit, score.wrong_rate) == (1, 1, 1.0)
    silent = abstain_score([(nothing_a, False), (perfect, False)])
    assert silent.precision is None and silent.recall == 0.0
    assert silent.as_dict()["precision"] is None


def test_a_family_with_no_listed_sub_agent_is_not_judged():
    sugar = _request("sugar", {"sugar": 2, "calorie": 1})
    only_sugar, water = _request("only", {"sugar": 2}), _request("water", {"water": 2})
    kept, removed = only_listed_families([sugar, only_sugar, water], ["calorie", "water"])
    assert [r.fits for r in kept] == [{"calorie": 1}, {}, {"water": 2}]
    assert removed == {"sugar": ["sugar"], "only": ["sugar"]}
    assert recall_at(["calorie"], kept[0].fits) == 1.0
    assert not kept[1].has_fit  # nothing listed fits: abstaining is right


LABELS = """
[[request]]
id = "zh-water-01"; lang = "zh"
text = "我想记录每天喝了多少水"
gloss = "track daily water intake"
fits = { water-tracker = 2 }
split = "tune"
cross = true

[[request]]
id = "en-none-01"; lang = "en"
text = "tune my guitar"
fits = {}
split = "holdout"
"""


def test_labels_parse_into_requests():
    water, guitar = parse_requests(LABELS.replace("; ", "\n"), ["water-tracker"])
    assert water == Request(
        id="zh-water-01",
        lang="zh",
        text="我想记录每天喝了多少水",
        split="tune",
        fits={"water-tracker": 2},
        gloss="track daily water intake",
        cross=True,
    )
    assert water.has_fit and not guitar.has_fit
    assert guitar.gloss is None and not guitar.cross


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("water-tracker = 2", "water-tracker = 3"), "grade 3"),
        (("water-tracker = 2", "teapot = 2"), "not a root family"),
        (('lang = "zh"', 'lang = "fr"'), "lang 'fr'"),
        (('split = "tune"', 'split = "train"'), "split 'train'"),
        (('"en-none-01"', '"zh-water-01"'), "used twice"),
        (("fits = {}\n", ""), "missing fits"),
    ],
)
def test_malformed_labels_are_refused_with_the_request_named(change, message):
    text = LABELS.replace("; ", "\n").replace(*change)
    with pytest.raises(LabelError, match=message):
        parse_requests(text, ["water-tracker"])


def test_bm25_tokens_are_words_for_latin_and_characters_and_pairs_for_cjk():
    stop = frozenset({"i", "to", "of"})
    assert bm25_tokens("I want to track CAFÉ visits", stop) == ["want", "track", "café", "visits"]
    assert bm25_tokens("喝水记录") == ["喝", "水", "记", "录", "喝水", "水记", "记录"]
    # A word that switches script is cut there; full-width Latin is folded to ASCII.
    assert bm25_tokens("7日 ＡＢＣ") == ["7", "日", "abc"]


def _slice(recall: float, n: int = 4) -> dict:
    return {"recall_at_5": recall, "ndcg_at_5": recall, "mrr": recall, "n": n}


def test_targets_need_recall_above_bm25_on_every_slice_and_abstaining_that_is_right():
    figures = {
        "systems": {
            "bm25": {
                "all": _slice(0.6),
                "cross": _slice(0.4),
                "zh": _slice(1.0),
                "ko": _slice(0, 0),
            },
            "sprig": {
                "all": _slice(0.9),
                "cross": _slice(0.8),
                "zh": _slice(1.0),
                "ko": _slice(0, 0),
            },
        },
        "abstain": {"sprig": {"precision": 0.8, "recall": 0.6}},
    }
    assert [met for _, met, _ in targets(figures, "sprig", "bm25")] == [True, True, True, True]
    # A tie below 1.0 is not "above"; a tie at 1.0 is all anyone can do.
    figures["systems"]["sprig"]["cross"] = _slice(0.4)
    assert targets(figures, "sprig", "bm25")[2][1:] == (False, "not above on: cross")
    figures["abstain"]["sprig"] = {"precision": None, "recall": 0.0}
    assert targets(figures, "sprig", "bm25")[3][1] is False
    figures["abstain"]["sprig"] = {"precision": None, "recall": None}  # no no-fit requests
    assert targets(figures, "sprig", "bm25")[3][1] is None
