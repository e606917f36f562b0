"""The suggestion text index: n-gram features, incremental updates, filters, explanations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.feature_extraction.text import HashingVectorizer

from evolution import text_index
from evolution.scripts import script_of
from evolution.text_index import (
    N_GRAM_FEATURES,
    SubAgentDocument,
    SuggestionIndex,
    count_matrix,
    explain_match,
    top_slots,
)

WATER = SubAgentDocument(
    1,
    "Water Tracker",
    "Log every glass toward three litres a day.",
    "I drink three litres of water a day and wanted a tracker as simple as that.",
    tags=("water", "habit"),
    category="hydration",
    permissions=("hydration.read", "hydration.write"),
)
HANZI = SubAgentDocument(
    2,
    "孩子的汉字卡",
    "给海外长大的孩子用的汉字卡片，间隔复习，一天几分钟。",
    tags=("chinese", "kids", "flashcards"),
    category="study",
    permissions=("study.read", "study.write", "family.read"),
)
BENTO = SubAgentDocument(
    3,
    "お弁当プランナー",
    "平日のお弁当の主菜と副菜を決めて、買い物リストを自動で作ります。",
    category="diet",
    permissions=("diet.read", "diet.write"),
)
SLEEP = SubAgentDocument(
    4,
    "Sleep Diary",
    "Write down when you went to bed and how rested you felt.",
    category="sleep",
    fork_request="track naps as well",
)


def corpus(n: int = 60) -> list[SubAgentDocument]:
    topics = ["water", "sleep", "budget", "garden", "piano", "run", "meal", "mood"]
    nouns = ["tracker", "planner", "diary", "coach", "timer"]
    return [
        SubAgentDocument(
            100 + i,
            f"{topics[i % 8].title()} {nouns[i % 5].title()}",
            f"A {topics[i % 8]} {nouns[i % 5]} for every day.",
            category=["hydration", "sleep", "finance", "hobby"][i % 4],
            permissions=(f"{topics[i % 8]}.read",),
        )
        for i in range(n)
    ]


def ranked(index: SuggestionIndex, query: str, **kwargs) -> list[tuple[int, float]]:
    return [(m.subagent_id, round(m.relevance, 9)) for m in index.search(query, **kwargs)]


def test_features_are_char_wb_trigrams_plus_cjk_characters_and_pairs():
    # The same trigram multiset as scikit-learn's char_wb analyzer, hashed differently.
    analyzer = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 3)).build_analyzer()
    text = "Water  tracker in OUNCES"  # char_wb keeps punctuation in words; we drop it
    ours = count_matrix([text])
    assert ours.sum() == len(analyzer(text.lower()))
    # CJK runs add their characters and character pairs: 喝水记录 → 4 + 3, plus trigrams
    # of the padded run (" 喝水", "喝水记", "水记录", "记录 ").
    assert count_matrix(["喝水记录"]).sum() == 4 + 3 + 4
    # Full-width Latin is the same word as ASCII.
    assert (count_matrix(["ｗａｔｅｒ"]) != count_matrix(["water"])).nnz == 0


def test_incremental_adds_equal_one_build():
    documents = [WATER, HANZI, BENTO, SLEEP, *corpus(1200)]
    built = SuggestionIndex(documents)
    grown = SuggestionIndex()
    for document in documents:
        grown.add(document)
    assert grown.segment_count > 1  # sealed and merged segments, not one rebuild
    for query in ["water tracker", "汉字卡片", "お弁当", "piano timer", "a diary for naps"]:
        assert ranked(grown, query, limit=20) == ranked(built, query, limit=20)


def test_cjk_requests_find_cjk_sub_agents():
    index = SuggestionIndex([WATER, HANZI, BENTO, SLEEP, *corpus()])
    assert index.search("给孩子学汉字的卡片")[0].subagent_id == 2
    assert index.search("毎朝のお弁当の献立を決めたい")[0].subagent_id == 3
    assert index.search("お弁当")[0].script == "ja"
    assert index.search("汉字")[0].script == "zh"


def test_relevance_is_a_cosine_and_best_first():
    index = SuggestionIndex([WATER, SLEEP, *corpus()])
    matches = index.search("a water tracker counting glasses and litres", limit=50)
    assert matches[0].subagent_id == 1
    # Shorter documents about exactly the query win (cosine length normalization).
    assert index.search("water tracker")[0].subagent_id == 100
    relevances = [m.relevance for m in matches]
    assert relevances == sorted(relevances, reverse=True)
    assert all(0 < r <= 1 for r in relevances)


def test_removal_and_replacement():
    index = SuggestionIndex([WATER, SLEEP, *corpus()])
    assert index.remove(1) is True
    assert 1 not in index and len(index) == 61
    assert all(m.subagent_id != 1 for m in index.search("water tracker litres", limit=100))
    assert index.remove(1) is False
    # Removal gives back the document frequencies: the same as never having added it.
    fresh = SuggestionIndex([SLEEP, *corpus()])
    assert ranked(index, "water tracker", limit=30) == ranked(fresh, "water tracker", limit=30)
    # Replacing a document (a new version) re-indexes it under the same id.
    index.add(SubAgentDocument(4, "Nap Counter", "Count your naps.", category="sleep"))
    assert index.search("nap counter")[0].subagent_id == 4
    assert all(m.subagent_id != 4 for m in index.search("rested bed diary", limit=100))


def test_removing_many_at_once_equals_one_at_a_time_and_never_adding_them():
    documents = corpus(1500)  # several segments: the removed rows lie in each
    gone = {d.subagent_id for d in documents[3:900:4]} | {10**9}  # and one never added
    together, one_by_one = SuggestionIndex(), SuggestionIndex()
    for start in range(0, len(documents), 300):  # grown as a server grows it: segments
        together.add_many(documents[start : start + 300])
        one_by_one.add_many(documents[start : start + 300])
    assert together.segment_count > 1
    assert together.remove_many(gone) == gone - {10**9}
    for subagent_id in sorted(gone):
        one_by_one.remove(subagent_id)
    never = SuggestionIndex([d for d in documents if d.subagent_id not in gone])
    features = np.arange(2 * N_GRAM_FEATURES)
    assert np.array_equal(together.document_frequency(features), never.document_frequency(features))
    assert np.array_equal(
        one_by_one.document_frequency(features), never.document_frequency(features)
    )
    for query in ["garden coach", "water tracker", "mood diary"]:
        assert ranked(together, query, limit=40) == ranked(never, query, limit=40)
        assert ranked(one_by_one, query, limit=40) == ranked(never, query, limit=40)
    # Replacing many at once (a catch-up's batch of new versions) gives back theirs too.
    renamed = [
        SubAgentDocument(d.subagent_id, f"Renamed {d.title}", d.summary, category=d.category)
        for d in documents[1000:1400]
    ]
    together.add_many(renamed)
    fresh = SuggestionIndex(
        [d for d in documents if d.subagent_id not in gone and d not in documents[1000:1400]]
        + renamed
    )
    assert np.array_equal(together.document_frequency(features), fresh.document_frequency(features))


def test_compaction_after_many_removals_keeps_answers():
    documents = corpus(3000)
    index = SuggestionIndex(documents)
    for document in documents[:1500]:
        index.remove(document.subagent_id)
    remaining = SuggestionIndex(documents[1500:])
    assert len(index) == 1500
    assert ranked(index, "garden coach", limit=25) == ranked(remaining, "garden coach", limit=25)


def test_an_index_read_back_from_its_arrays_equals_it_and_keeps_growing_alike():
    # Several segments, dead rows, replaced rows, scopes and CJK: what a snapshot must carry.
    documents = [WATER, HANZI, BENTO, SLEEP, *corpus(1300)]
    index = SuggestionIndex(documents)
    for document in documents[10:400:3]:
        index.remove(document.subagent_id)
    index.add(SubAgentDocument(4, "Nap Counter", "Count your naps.", category="sleep"))
    arrays = index.to_arrays()
    assert all(array.dtype != object for array in arrays.values())  # nothing to unpickle
    copy = SuggestionIndex.from_arrays(arrays)
    assert copy.segment_count == index.segment_count > 1
    again = copy.to_arrays()
    assert arrays.keys() == again.keys()
    for name, array in arrays.items():
        assert again[name].dtype == array.dtype and np.array_equal(again[name], array), name
    assert len(copy) == len(index) and 4 in copy and documents[10].subagent_id not in copy
    queries = ["water tracker", "汉字卡片", "お弁当", "nap counter", "garden coach"]
    for query in queries:
        assert ranked(copy, query, limit=30) == ranked(index, query, limit=30)
    assert ranked(copy, "water", granted_scopes=["water.read"], category="hydration") == ranked(
        index, "water", granted_scopes=["water.read"], category="hydration"
    )
    # Both go on alike: adds, a removal, and the compaction that many removals trigger.
    for grown in (index, copy):
        grown.add(SubAgentDocument(9001, "Kettle Timer", "Tea steeping timer.", category="hobby"))
        grown.remove(1)
        for document in documents[400:1700]:
            grown.remove(document.subagent_id)
    for query in [*queries, "kettle timer"]:
        assert ranked(copy, query, limit=30) == ranked(index, query, limit=30)


def test_category_and_scope_filters():
    index = SuggestionIndex([WATER, HANZI, BENTO, SLEEP])
    assert [m.subagent_id for m in index.search("water", category="sleep")] == []
    assert index.search("water", category="hydration")[0].subagent_id == 1
    assert index.search("water", category="nonexistent") == []
    # Only sub-agents whose permissions are all granted.
    assert index.search("water", granted_scopes=["hydration.read"]) == []
    granted = ["hydration.read", "hydration.write", "unknown.scope"]
    assert index.search("water", granted_scopes=granted)[0].subagent_id == 1
    # An empty grant admits only sub-agents that ask for nothing.
    assert {m.subagent_id for m in index.search("diary sleep", granted_scopes=[])} == {4}


def test_queries_without_words_find_nothing():
    index = SuggestionIndex([WATER])
    assert index.search("") == [] and index.search("!!! ...") == []
    assert SuggestionIndex().search("water") == []


def test_idf_is_applied_at_query_time():
    index = SuggestionIndex([WATER, *corpus(40)])
    features, weights = index.query_vector("water xylophone")
    assert math.isclose(float(np.linalg.norm(weights)), 1.0)
    df = index.document_frequency(features)
    assert list(df) == sorted(df)  # rarest first
    is_word = features >= N_GRAM_FEATURES
    assert is_word.any() and (~is_word).any()
    for half in (is_word, ~is_word):
        # Each half weighs √2 · ½ at the default share; in each, a feature no document has
        # ("xylophone", its n-grams) carries the largest weight.
        assert math.isclose(float(np.linalg.norm(weights[half])), math.sqrt(2) / 2)
        assert weights[half][0] == weights[half].max()


def test_explanations_name_the_matched_words_per_field():
    why = explain_match("a tracker for water in ounces", WATER.field_texts())
    assert why["title"] == ["tracker", "water"]
    assert "water" in why["tags"]
    assert all("for" not in terms for terms in why.values())
    assert explain_match("给孩子学汉字", HANZI.field_texts())["title"] == ["孩子", "汉字"]
    assert "naps" in explain_match("log my naps", SLEEP.field_texts())["fork_request"]
    # Across languages, a Chinese word matches through its English gloss, and says so.
    assert explain_match("喝水", WATER.field_texts())["title"] == ["喝水 (water)"]
    assert "喝水 (drink, water)" in explain_match("喝水", WATER.field_texts())["story"]


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("Water tracker", "latin"),
        ("孩子的汉字卡", "zh"),
        ("お弁当プランナー", "ja"),
        ("물 마시기", "ko"),
    ],
)
def test_script_of(text, script):
    assert script_of(text) == script


def _top_by_brute_force(partial: np.ndarray, k: int) -> np.ndarray:
    positive = np.flatnonzero(partial > 0)
    return np.sort(partial[positive])[::-1][:k]


@pytest.mark.parametrize(
    "shape",
    ["every slot scores", "a tenth score", "fewer than k score", "none scores", "ties at the cut"],
)
def test_the_candidates_are_the_best_scores_whichever_way_they_are_found(shape):
    """The sampled threshold (most slots scoring) and the plain selection (few scoring) pick the
    same scores as sorting them all: the k best positive ones, slots in order."""
    rng = np.random.default_rng(7)
    n, k = 200_000, 400
    if shape == "every slot scores":
        partial = rng.gamma(2.0, 0.05, n).astype(np.float32)
    elif shape == "a tenth score":
        partial = np.where(rng.random(n) < 0.1, rng.gamma(2.0, 0.05, n), 0.0).astype(np.float32)
    elif shape == "fewer than k score":
        partial = np.zeros(n, np.float32)
        partial[rng.choice(n, 150, replace=False)] = rng.random(150).astype(np.float32) + 0.01
    elif shape == "none scores":
        partial = np.zeros(n, np.float32)
    else:  # a catalog of copies: thousands of slots share the few highest scores
        partial = rng.choice(
            np.array([0.0, 0.1, 0.2, 0.3], np.float32), n, p=[0.5, 0.3, 0.19, 0.01]
        )
    hit = top_slots(partial, k)
    assert np.all(np.diff(hit) > 0)
    assert np.all(partial[hit] > 0)
    assert np.array_equal(np.sort(partial[hit])[::-1], _top_by_brute_force(partial, k))


def test_when_most_slots_score_only_those_over_the_sampled_threshold_are_selected(monkeypatch):
    """The sample is what makes a common word cheap: the selection must be handed a few
    thousand slots over the threshold, not every slot that scores."""
    handed = []
    best = text_index._best
    monkeypatch.setattr(
        text_index,
        "_best",
        lambda partial, hit, k: handed.append(len(hit)) or best(partial, hit, k),
    )
    partial = np.random.default_rng(3).gamma(2.0, 0.05, 200_000).astype(np.float32)
    top_slots(partial, 400)
    assert len(handed) == 1 and 400 <= handed[0] < 5_000
