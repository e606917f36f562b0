"""The suggestion score, improving forks, feedback themes and contact scrubbing, by hand."""

from __future__ import annotations

import math

import pytest

from evolution.suggest import (
    UNRANKED,
    BundleChange,
    ForkOutcome,
    Quality,
    compare_bundles,
    improving_changes,
    rank_suggestions,
    suggestion_score,
    summarize_change,
)
from evolution.text_index import Match
from evolution.themes import OTHER_LABEL, FeedbackNote, group_themes


def test_score_by_hand():
    # Established, average, certain: relevance alone.
    assert suggestion_score(0.6, Quality(0.0, 0.0, young=False)) == pytest.approx(0.6)
    # Good and well known: L = 1 - 1.64*0.1 = 0.836; 1 + 0.5*tanh(0.418) = 1.19762.
    assert suggestion_score(0.5, Quality(1.0, 0.1, young=False)) == pytest.approx(
        0.5 * 1.19762, 1e-5
    )
    # Bad and well known: L = -1.5 - 0.164 = -1.664; 1 + 0.5*tanh(-0.832) = 0.65923
    expected = 1 + 0.5 * math.tanh(-0.832)
    assert suggestion_score(0.5, Quality(-1.5, 0.1, young=False)) == pytest.approx(0.5 * expected)
    assert expected == pytest.approx(0.65923, abs=1e-5)
    # Unranked (the prior, young): 1 + 0.5*tanh(-0.82) + 0.35 = 1.01247.
    assert suggestion_score(1.0, UNRANKED) == pytest.approx(1.01247, abs=1e-5)
    # Same script as the user's locale: +0.1.
    assert suggestion_score(1.0, Quality(0.0, 0.0, young=False), True) == pytest.approx(1.1)


def test_young_forks_get_an_exploration_bonus_in_proportion_to_doubt():
    known = Quality(0.2, 0.6, young=False)
    young = Quality(0.2, 0.6, young=True)
    assert suggestion_score(0.5, young) - suggestion_score(0.5, known) == pytest.approx(
        0.5 * 0.35 * 0.6
    )


def test_ranking_orders_by_score_within_the_relevance_floor():
    matches = [
        Match(1, 0.80, "latin"),  # most relevant, poor
        Match(2, 0.60, "latin"),  # relevant, loved
        Match(3, 0.30, "latin"),  # loved, but below half the best relevance
        Match(4, 0.60, "ja"),  # unranked
    ]
    qualities = {
        1: Quality(-1.5, 0.1, young=False, rating_count=40, ranked=True),
        2: Quality(1.2, 0.1, young=False, rating_count=50, ranked=True),
        3: Quality(2.0, 0.1, young=False, rating_count=90, ranked=True),
    }
    ranked = rank_suggestions(matches, qualities, k=5)
    assert [s.subagent_id for s in ranked] == [2, 4, 1]
    # 0.6*(1+0.5*tanh((1.2-0.164)/2)) = 0.6*1.2379 = 0.7427; 0.8*0.6594 = 0.5276
    assert ranked[0].score == pytest.approx(0.6 * (1 + 0.5 * math.tanh(0.518)))
    assert ranked[1].quality is UNRANKED
    # A Japanese locale lifts the Japanese base.
    with_locale = rank_suggestions(matches, qualities, k=1, locale_script="ja")
    assert with_locale[0].subagent_id == 2  # 0.7427 > 0.6*1.1125=0.6675
    assert rank_suggestions(matches, qualities, k=2)[1].subagent_id == 4
    assert rank_suggestions([], {}, k=3) == []


def test_ties_break_by_id():
    matches = [Match(9, 0.5, "latin"), Match(3, 0.5, "latin")]
    assert [s.subagent_id for s in rank_suggestions(matches, {}, k=2)] == [3, 9]


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
