"""The suggestion score, improving forks, feedback themes and contact scrubbing, by hand."""

from __future__ import annotations

import math

import pytest

from evolution.suggest import (
    FITS_AT,
    LIST_FLOOR,
    LOCALE_MARGIN,
    UNRANKED,
    BundleChange,
    FitModel,
    ForkOutcome,
    Quality,
    best_candidate,
    compare_bundles,
    improving_changes,
    rank_suggestions,
    suggestion_score,
    summarize_change,
    verdict_for,
)
from evolution.text_index import Match
from evolution.themes import OTHER_LABEL, FeedbackNote, group_themes


def logit(p):
    return math.log(p / (1 - p))


def test_score_by_hand():
    # Established, average, certain, unused: the fit's log-odds and the coverage.
    average = Quality(0.0, 0.0, young=False)
    assert suggestion_score(0.6, average) == pytest.approx(logit(0.6) + 1.0)
    # Past p = 0.993 closer wording adds nothing: the log-odds are capped at 5.
    assert suggestion_score(0.9999, average) == suggestion_score(0.999, average) == 5.0 + 1.0
    # Half the request covered; the request is the title.
    assert suggestion_score(0.6, average, 0.5) == pytest.approx(logit(0.6) + 0.5)
    assert suggestion_score(0.6, average, 0.5, True) == pytest.approx(logit(0.6) + 2.5)
    # Good and well known: L = 1 - 1.64*0.1 = 0.836.
    good = Quality(1.0, 0.1, young=False)
    assert suggestion_score(0.5, good) == pytest.approx(1.0 + 0.5 * math.tanh(0.418))
    # Bad and well known: L = -1.5 - 0.164 = -1.664.
    bad = Quality(-1.5, 0.1, young=False)
    assert suggestion_score(0.5, bad) == pytest.approx(1.0 + 0.5 * math.tanh(-0.832))
    # Unranked (the prior, young): 0.5*tanh(-0.82) + 0.35 = 0.01247.
    assert suggestion_score(0.5, UNRANKED) == pytest.approx(1.0 + 0.01247, abs=1e-5)
    # Used: a hundred active users add 0.2 ln(101).
    used = Quality(0.0, 0.0, young=False, active_users=100.0)
    assert suggestion_score(0.5, used) == pytest.approx(1.0 + 0.2 * math.log(101))


def test_young_forks_get_an_exploration_bonus_in_proportion_to_doubt():
    known = Quality(0.2, 0.6, young=False)
    young = Quality(0.2, 0.6, young=True)
    assert suggestion_score(0.5, young) - suggestion_score(0.5, known) == pytest.approx(0.35 * 0.6)


# P(fits) = σ(10·w − 5): 0.5 at a word relevance of 0.5; script and coverage ignored.
BY_WORDS = FitModel(bias=-5.0, relevance=0.0, words=10.0, coverage=0.0, cross_script=0.0)


def match(subagent_id, words, root=None, script="latin", coverage=1.0):
    return Match(subagent_id, words, script, root or subagent_id, words, coverage)


def fit_of(words):
    return 1 / (1 + math.exp(-(10 * words - 5)))


def test_fit_model_by_hand():
    model = FitModel(bias=-1.0, relevance=2.0, words=3.0, coverage=-0.5, cross_script=0.7)
    found = Match(1, 0.4, "zh", 1, 0.3, 0.6)
    logit = -1.0 + 2.0 * 0.4 + 3.0 * 0.3 - 0.5 * 0.6
    assert model.probability(found, "zh") == pytest.approx(1 / (1 + math.exp(-logit)))
    assert model.probability(found, "latin") == pytest.approx(1 / (1 + math.exp(-logit - 0.7)))


def test_ranking_orders_likely_fits_by_quality_and_drops_the_unlikely():
    matches = [
        match(1, 0.80),  # most likely to fit, poor
        match(2, 0.75),  # likely, loved
        match(3, 0.10),  # loved, but under the list floor (p = 0.018)
        match(4, 0.60),  # unranked
    ]
    qualities = {
        1: Quality(-1.5, 0.1, young=False, rating_count=40, ranked=True),
        2: Quality(1.2, 0.1, young=False, rating_count=50, ranked=True),
        3: Quality(2.0, 0.1, young=False, rating_count=90, ranked=True),
    }
    assert fit_of(0.10) < LIST_FLOOR
    ranking = rank_suggestions(matches, qualities, k=5, query_script="latin", fit_model=BY_WORDS)
    # 2: logit 2.5 + 1 + 0.5 tanh(0.518) = 3.74; 1: 3 (capped) + 1 + 0.5 tanh(-0.832) = 3.66;
    # 4 (unranked): logit 1 + 1 + 0.011 = 2.01. A likely fit known to be poor drops below a
    # slightly less likely one known to be loved, never below an unlikely one.
    assert [s.subagent_id for s in ranking.items] == [2, 1, 4]
    top = ranking.items[0]
    assert top.fit == pytest.approx(fit_of(0.75))
    assert top.score == pytest.approx(2.5 + 1.0 + 0.5 * math.tanh((1.2 - 0.164) / 2))
    assert ranking.items[2].quality is UNRANKED
    assert ranking.best_fit == pytest.approx(fit_of(0.80))
    assert rank_suggestions([], {}, k=3, query_script="latin").items == []


def test_families_before_a_familys_second_member_and_the_viewers_script_within_one():
    matches = [
        match(1, 0.90, root=1),  # the family's root, English
        match(5, 0.88, root=1, script="zh"),  # its Chinese translation, nearly as likely
        match(7, 0.86, root=1),  # a clone of the root
        match(9, 0.75, root=9),  # another family, less likely
    ]
    ranked = rank_suggestions(matches, {}, k=4, query_script="latin", fit_model=BY_WORDS)
    assert [s.subagent_id for s in ranked.items] == [1, 9, 5, 7]
    # A Chinese reader sees the family through its Chinese branch (within the margin).
    chinese = rank_suggestions(
        matches, {}, k=2, query_script="latin", locale_script="zh", fit_model=BY_WORDS
    )
    assert [s.subagent_id for s in chinese.items] == [5, 9]
    # ...but not through one much less likely to fit.
    far = [match(1, 0.90, root=1), match(5, 0.55, root=1, script="zh")]
    assert suggestion_score(fit_of(0.55), UNRANKED) < (
        suggestion_score(fit_of(0.90), UNRANKED) - LOCALE_MARGIN
    )
    assert (
        rank_suggestions(far, {}, k=1, query_script="latin", locale_script="zh", fit_model=BY_WORDS)
        .items[0]
        .subagent_id
        == 1
    )


def test_the_verdict_reads_the_likeliest_candidate():
    assert verdict_for(0.95, 1.0) == "fits"
    assert verdict_for(FITS_AT - 0.01, 1.0) == "weak"
    assert verdict_for(0.01, 0.0) == "none"
    # Abstaining empties the list: a coding agent is told to write it from scratch.
    unlikely = [match(1, 0.05, coverage=0.2)]
    ranking = rank_suggestions(unlikely, {}, k=5, query_script="latin", fit_model=BY_WORDS)
    assert ranking.verdict == "none" and ranking.items == []
    assert best_candidate(unlikely, "latin", BY_WORDS) == (pytest.approx(fit_of(0.05)), 0.2)
    assert best_candidate([], "latin") == (0.0, 0.0)


def test_ties_break_by_id():
    matches = [match(9, 0.5), match(3, 0.5)]
    ranked = rank_suggestions(matches, {}, k=2, query_script="latin", fit_model=BY_WORDS)
    assert [s.subagent_id for s in ranked.items] == [3, 9]


def test_compare_bundles():
    change = compare_bundles(
        {"scopes": ["a.read", "b.read"], "hosts": ["x.example"]},
        {"index.html": "1", "app.js": "1", "old.css": "1"},
        {"scopes": ["a.read", "c.write"], "hosts": []},
        {"index.html": "1", "app.js": "2", "new.js": "1"},
    )
    assert change == BundleChange(
        scopes_added=("c.write",),
        scopes_removed=("b.read",),
        hosts_added=(),
        hosts_removed=("x.example",),
        files_added=("new.js",),
        files_changed=("app.js",),
        files_removed=("old.css",),
    )


def test_improving_changes_order_and_evidence():
    parent = Quality(0.2, 0.2, young=False, rating_count=30, ranked=True)
    forks = [
        ForkOutcome(10, "ounces", Quality(0.9, 0.3, False, 20, True), "use ounces"),
        ForkOutcome(11, "reminders", Quality(0.5, 0.3, False, 12, True), "add reminders"),
        ForkOutcome(12, "worse", Quality(0.1, 0.3, False, 15, True), "make it red"),
        # No ratings of its own: its mean is only the prior, it proves nothing.
        ForkOutcome(13, "unrated", Quality(1.5, 1.0, True, 0, True), "dark mode"),
    ]
    found = improving_changes(parent, forks)
    assert [i.fork.subagent_id for i in found] == [10, 11]
    assert found[0].improvement == pytest.approx(0.7)
    # P(N(0.7, 0.2²+0.3²) > 0) = Φ(0.7/0.36056) = Φ(1.9415) = 0.97390
    assert found[0].p_better == pytest.approx(0.97390, abs=1e-4)
    assert found[0].summary.startswith('asked "use ounces"')
    assert improving_changes(parent, forks, limit=1)[0].fork.subagent_id == 10


def test_change_summary():
    fork = ForkOutcome(
        1,
        "t",
        UNRANKED,
        "switch to   ounces",
        "v2: fixed rounding",
        BundleChange(scopes_added=("health.read",), files_changed=("app.js",)),
    )
    assert summarize_change(fork) == (
        'asked "switch to ounces"; changelog: v2: fixed rounding; +scope health.read; files ~app.js'
    )
    assert summarize_change(ForkOutcome(2, "t", UNRANKED)) == "no visible change"


def test_themes_tags_comments_and_clusters():
    notes = [
        FeedbackNote(("wants reminders",), "please add a reminder at night"),
        FeedbackNote((), "A reminder in the evening would help"),  # joins the tag by n-grams
        FeedbackNote(("too slow",), "it takes forever to load"),  # its own tag
        FeedbackNote((), "dark mode please, my eyes hurt"),
        FeedbackNote((), "needs a dark theme for night use"),
        FeedbackNote((), "love the colours"),
        FeedbackNote((), "希望可以加提醒"),
        FeedbackNote((), "希望有提醒功能"),
        FeedbackNote(("crashes",), None),
        FeedbackNote(("wants reminders", "wants reminders"), None),
    ]
    themes = {t.label: t for t in group_themes(notes, max_themes=10)}
    assert themes["wants reminders"].count == 3
    assert themes["wants reminders"].kind == "tag"
    assert themes["wants reminders"].examples == (
        "please add a reminder at night",
        "A reminder in the evening would help",
    )
    assert themes["too slow"].examples == ("it takes forever to load",)
    assert themes["crashes"].count == 1 and themes["crashes"].examples == ()
    assert themes["dark"].kind == "comments" and themes["dark"].count == 2
    assert themes["希望 / 提醒"].count == 2
    assert themes[OTHER_LABEL].examples == ("love the colours",)
    ordered = group_themes(notes, max_themes=3)
    assert [t.label for t in ordered] == ["wants reminders", "dark", "希望 / 提醒"]


def test_themes_of_nothing():
    assert group_themes([]) == []
    assert group_themes([FeedbackNote((), "  ")]) == []
    only = group_themes([FeedbackNote((), "ok"), FeedbackNote((), "!!")])
    assert [(t.label, t.count) for t in only] == [(OTHER_LABEL, 2)]
