"""evolution.clones: which listings of a list are the same tool, and how lineages are spread."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass

import pytest

from evolution.clones import (
    TEXT_JACCARD,
    Group,
    are_clones,
    collapse,
    first_groups,
    spread_lineages,
    tool_name,
    trigrams,
)
from evolution.text_index import script_of


@dataclass(frozen=True)
class Item:
    id: int
    root_id: int
    title: str
    summary: str = ""


WATER = "Tap a glass, watch the bar fill, and see the last week at a glance."
HE_SHUI = "点一下记录一杯水，进度条和近 7 天图表一目了然。"


def test_a_fork_that_changes_a_setting_is_a_clone_of_its_tool():
    root = Item(1, 1, "Water Tracker", WATER)
    oz = Item(2, 1, "Water Tracker — oz", "Water tracker that counts in ounces instead of ml.")
    reminders = Item(3, 1, "Water Tracker — 1h reminders", "Reminds you every hour.")
    assert are_clones(root, oz)
    assert are_clones(oz, reminders)


def test_a_fork_that_became_another_tool_is_not_a_clone():
    piano = Item(1, 1, "Piano Practice Timer", "A practice stopwatch that logs what you played.")
    guitar = Item(2, 1, "Guitar Practice Timer", "Log chords and songs, and keep a daily streak.")
    whisky = Item(3, 3, "Whisky Journal", "Rate each bottle: nose, palate, finish.")
    sake = Item(4, 3, "Sake Journal", "Rate each bottle: nose, palate, finish, rice.")
    assert not are_clones(piano, guitar)
    assert not are_clones(whisky, sake)


def trigram_jaccard(a: Item, b: Item) -> float:
    ta, tb = trigrams(f"{a.title} {a.summary}"), trigrams(f"{b.title} {b.summary}")
    return len(ta & tb) / len(ta | tb)


def test_near_identical_text_under_another_name_is_a_clone():
    root = Item(1, 1, "Water Tracker", WATER)
    renamed = Item(2, 1, "My Water Tracker", WATER)
    assert trigram_jaccard(root, renamed) >= TEXT_JACCARD
    assert are_clones(root, renamed)


def test_translations_are_not_clones_of_the_original_but_of_each_other():
    english = Item(1, 1, "Water Tracker", WATER)
    chinese = Item(2, 1, "喝水记录（中文版）", "点一下记录一杯水，进度条和近 7 天图表一目了然。")
    chinese_again = Item(
        3, 1, "喝水记录（中文版）", "点一下记录一杯水，进度条和近 7 天图表一目了然。"
    )
    quiet = Item(4, 1, "喝水记录 — 上午免打扰", "喝水记录（上午免打扰）。")
    japanese = Item(5, 1, "水分補給トラッカー（日本語版）", "ワンタップで一杯を記録。")
    spanish = Item(6, 1, "Control de Agua (en español)", "Registra cada vaso con un toque.")
    assert not are_clones(english, chinese)
    assert not are_clones(english, japanese)
    assert not are_clones(english, spanish)
    assert not are_clones(chinese, japanese)
    assert are_clones(chinese, chinese_again)
    assert are_clones(chinese, quiet)


def test_other_families_are_never_clones():
    assert not are_clones(Item(1, 1, "Water Tracker", WATER), Item(2, 2, "Water Tracker", WATER))


@pytest.mark.parametrize(
    ("title", "tool"),
    [
        ("Water Tracker — oz", "watertracker"),
        ("Water  tracker", "watertracker"),
        ("Teen Mood Check-in", "teenmoodcheckin"),
        ("喝水记录（中文版）", "喝水记录"),
        ("シンプル家計簿・CSV出力", "シンプル家計簿"),
        ("Control de Agua (en español)", "controldeagua"),
        ("(draft)", "draft"),
    ],
)
def test_tool_name_is_the_title_before_its_qualifier(title, tool):
    assert tool_name(title) == tool


def test_collapse_keeps_the_first_as_representative_and_members_in_order():
    items = [
        Item(10, 1, "Water Tracker — oz"),
        Item(11, 2, "Sleep Log"),
        Item(12, 1, "Water Tracker"),
        Item(13, 1, "喝水记录（中文版）"),
        Item(14, 2, "Sleep Log — naps"),
        Item(15, 1, "Water Tracker — 4 L summer"),
        Item(16, 1, "喝水记录（中文版）"),
        Item(17, 1, "Houseplant Watering"),
    ]
    groups = collapse(items)
    assert [(g.representative.id, [m.id for m in g.members]) for g in groups] == [
        (10, [12, 15]),
        (11, [14]),
        (13, [16]),
        (17, []),
    ]


def test_collapse_joins_the_representative_not_a_chain_of_members():
    # b is near a, c is near b but not a: c starts its own group.
    text = "every glass you drink is counted and the bar fills up until the daily goal is reached"
    a = Item(1, 1, "Alpha", text)
    b = Item(2, 1, "Beta", text + " with reminders")
    c = Item(3, 1, "Gamma", text + " with reminders and a chart")
    assert are_clones(a, b) and are_clones(b, c) and not are_clones(a, c)
    assert [g.representative.id for g in collapse([a, b, c])] == [1, 3]


def test_collapse_of_nothing_is_nothing():
    assert collapse([]) == []


@pytest.mark.parametrize("seed", range(20))
def test_the_first_groups_are_a_full_collapses_first_groups_members_and_all(seed):
    """A search page forms only the groups it shows: each of them, with its members, and
    whether more follow, is what collapsing the whole list gives, when many items of one
    family name many tools, some of them clones of early groups, some of later ones."""
    rng = random.Random(seed)
    tools = [f"Tool {t}" for t in range(rng.randint(1, 30))]
    items = [
        Item(
            i,
            rng.choice([1, 1, 1, 2, 3]),
            rng.choice(tools) + rng.choice(["", " — oz", " (kids)"]),
            rng.choice([WATER, "Log how you slept and see the week.", ""]),
        )
        for i in range(rng.randint(0, 120))
    ]
    full = [[g.representative.id] + [m.id for m in g.members] for g in collapse(items)]
    for count in (0, 1, 5, 20, len(full), len(full) + 3):
        groups, more = first_groups(items, count)
        assert [[g.representative.id] + [m.id for m in g.members] for g in groups] == full[:count]
        assert more == (len(full) > count)


def families(groups: list[Group]) -> list[int]:
    return [g.representative.root_id for g in groups]


def test_spread_defers_a_third_of_a_family_past_the_window():
    groups = collapse([Item(i, 1 if i < 6 else i, f"Tool {i}") for i in range(12)])
    spread = spread_lineages(groups, window=4, per_lineage=2)
    assert families(spread) == [1, 1, 6, 7, 1, 1, 8, 9, 1, 1, 10, 11]


def test_spread_fills_the_tail_when_only_one_family_is_left():
    groups = collapse([Item(i, 1, f"Tool {i}") for i in range(5)] + [Item(9, 9, "Other")])
    spread = spread_lineages(groups, window=20, per_lineage=2)
    assert [g.representative.id for g in spread] == [0, 1, 9, 2, 3, 4]


@pytest.mark.parametrize("seed", range(20))
def test_any_window_holds_at_most_the_share_while_other_families_remain(seed):
    rng = random.Random(seed)
    n_families = rng.randint(1, 12)
    items = [Item(i, rng.randint(1, n_families), f"Tool {i}") for i in range(rng.randint(0, 80))]
    groups = collapse(items)
    window, share = rng.randint(2, 24), rng.randint(1, 3)
    spread = spread_lineages(groups, window=window, per_lineage=share)
    assert sorted(g.representative.id for g in spread) == sorted(
        g.representative.id for g in groups
    )
    order = families(spread)
    for end in range(len(order)):
        window_counts = Counter(order[max(0, end - window + 1) : end + 1])
        if window_counts[order[end]] > share:
            # Allowed only when every family still waiting was at its share here.
            waiting = set(order[end:])
            before = Counter(order[max(0, end - window + 1) : end])
            assert all(before[f] >= share for f in waiting)


def test_spread_keeps_the_order_when_families_are_already_varied():
    groups = collapse([Item(i, i, f"Tool {i}") for i in range(30)])
    assert spread_lineages(groups, window=24, per_lineage=2) == groups


def definition_says_clones(a: Item, b: Item) -> bool:
    """The rule of ``evolution.clones``, restated from its docstring without its shortcuts."""
    text_a, text_b = f"{a.title} {a.summary}", f"{b.title} {b.summary}"
    return (
        a.root_id == b.root_id
        and script_of(text_a) == script_of(text_b)
        and (tool_name(a.title) == tool_name(b.title) or trigram_jaccard(a, b) >= TEXT_JACCARD)
    )


@pytest.mark.parametrize("seed", range(3))
def test_kept_answers_agree_with_the_definition_in_either_order(seed):
    """The answer for a pair of texts is kept and found again from either side: a list asked
    twice, and then backwards, collapses as the definition says each time."""
    rng = random.Random(seed)
    words = ["water", "tracker", "sleep", "log", "水", "记录", "oz", "daily", "mood", "diary"]
    # Listings of two families that share a few summaries: titles name many tools, and texts
    # are near each other or not, so both the tool names and the trigram bar decide pairs.
    summaries = [WATER, HE_SHUI, "Log how you slept and see the week.", ""]
    items = [
        Item(
            i,
            rng.choice([1, 2]),
            " ".join(rng.choices(words, k=rng.randint(1, 3))),
            f"{rng.choice(summaries)} {' '.join(rng.choices(words, k=rng.randint(0, 2)))}",
        )
        for i in range(60)
    ]

    def expected(listing: list[Item]) -> list[list[int]]:
        groups: list[list[Item]] = []
        for item in listing:
            home = next((g for g in groups if definition_says_clones(item, g[0])), None)
            if home is None:
                groups.append([item])
            else:
                home.append(item)
        return [[item.id for item in group] for group in groups]

    for listing in (items, items, items[::-1]):
        found = [[g.representative.id] + [m.id for m in g.members] for g in collapse(listing)]
        assert found == expected(listing)
    for a, b in itertools.pairwise(items):
        assert are_clones(a, b) == are_clones(b, a) == definition_says_clones(a, b)
