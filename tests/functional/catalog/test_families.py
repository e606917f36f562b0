"""Families, not clones, in the lists of the demo community: searches and the top and trending
sorts show one card per tool and spread the lineages, pages neither repeat nor lose anything,
an empty search says so, and the better-branch banner speaks the reader's language.

The demo takes ~20 s to load, so it is loaded once for this module (per database backend).
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from itertools import combinations

import pytest
from sqlalchemy import select
from sqlmodel import Session

from evolution.clones import are_clones
from evolution.language import language_of
from market.catalog.models import SubAgent
from market.catalog.queries import COLLAPSED_POOL, LINEAGE_WINDOW, PER_LINEAGE
from market.catalog.search import matcher_for, relevant_ids
from market.identity.access import publicly_listed_clause
from market.ranking.models import SubAgentScore

pytestmark = pytest.mark.slow

API = "/api/v1"


@pytest.fixture(scope="module")
def client(demo_app):
    return demo_app.app.test_client()


@pytest.fixture(scope="module")
def rows(demo_app) -> dict[int, SubAgent]:
    """Every sub-agent of the demo, by id."""
    with Session(demo_app.engine) as session:
        found = {row.id: row for row in session.exec(select(SubAgent)).scalars()}
        session.expunge_all()
        return found


def pages(client, query: str, limit: int = 20, *, collapsed_only: bool = False) -> list[list[dict]]:
    """Every page of ``query``, following the cursors; with ``collapsed_only``, only the pages
    cut from the collapsed pool (an offset cursor), not the plain order continuing after it."""
    result, cursor = [], None
    while True:
        url = f"{API}/subagents?{query}&limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        response = client.get(url)
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        result.append(body["items"])
        cursor = body["next_cursor"]
        if cursor is None or (collapsed_only and not _is_offset(cursor)):
            return result


def _is_offset(cursor: str) -> bool:
    return len(json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))) == 1


def family(rows, subagent_id: int) -> int:
    row = rows[subagent_id]
    return row.root_id or row.id


def clone_pairs(rows, cards: list[dict]) -> list[tuple[str, str]]:
    class Listed:
        def __init__(self, card):
            self.root_id = family(rows, card["id"])
            self.title, self.summary = card["title"], card["summary"]

    return [
        (a["title"], b["title"])
        for a, b in combinations(cards, 2)
        if are_clones(Listed(a), Listed(b))
    ]


def scored_listed_count(demo_app, column) -> int:
    with Session(demo_app.engine) as session:
        statement = (
            select(SubAgent.id)
            .join(SubAgentScore, SubAgentScore.subagent_id == SubAgent.id)
            .where(publicly_listed_clause(), column.is_not(None))
        )
        return len(session.execute(statement).all())


# ---- search --------------------------------------------------------------------------------


def test_water_page_one_has_no_two_clones_and_counts_the_hidden_ones(client, rows):
    first = pages(client, "q=water")[0]
    assert first
    assert clone_pairs(rows, first) == []
    root = next(r.id for r in rows.values() if r.title == "Water Tracker" and r.parent_id is None)
    water = [card for card in first if family(rows, card["id"]) == root]
    assert water and water[0]["similar_count"] > 0
    assert len({card["id"] for card in first}) == len(first)


def test_a_chinese_search_shows_no_identical_cards(client, rows):
    cards = [card for page in pages(client, "q=喝水") for card in page]
    titles = Counter(card["title"] for card in cards)
    assert "喝水记录（中文版）" in titles or any(c["similar_count"] for c in cards)
    assert max(titles.values()) == 1, titles
    assert sum(card["similar_count"] for card in cards) >= 3  # the four identical translations


def test_search_pages_neither_repeat_nor_lose(client, demo_app):
    everything = pages(client, "q=tracker", limit=7)
    ids = [card["id"] for page in everything for card in page]
    assert len(ids) == len(set(ids))
    shown_and_hidden = len(ids) + sum(card["similar_count"] for page in everything for card in page)
    with demo_app.app.app_context(), Session(demo_app.engine) as session:
        matches = relevant_ids(
            matcher_for(demo_app.app, session), "tracker", category=None, limit=COLLAPSED_POOL
        )
    assert shown_and_hidden == len(matches) > len(ids)
    # Another page size cuts the same collapsed list.
    by_ten = pages(client, "q=tracker", limit=10)
    assert [card["id"] for page in by_ten for card in page] == ids


def test_the_web_search_shows_similar_forks_linking_to_the_lineage(client):
    body = client.get("/?q=water").get_data(as_text=True)
    link = re.search(r'<a href="/s/(\d+)/tree"[^>]*>(\d+) similar forks?</a>', body)
    assert link, "a collapsed card says how many similar forks it hides"
    assert client.get(f"/s/{link.group(1)}/tree").status_code == 200


def test_an_empty_search_says_so_and_offers_to_ask_for_one(client):
    api = client.get(f"{API}/subagents?q=xylophone+zeppelin+quokka").get_json()
    assert api == {"items": [], "next_cursor": None}
    body = client.get("/?q=xylophone+zeppelin+quokka").get_data(as_text=True)
    assert "Nothing matches “xylophone zeppelin quokka” yet" in body
    assert 'href="/api/v1/docs#/Suggestions"' in body
    assert 'class="card"' not in body
    in_category = client.get("/?q=xylophone&category=sleep").get_data(as_text=True)
    assert "in sleep yet" in in_category and 'href="/?q=xylophone"' in in_category


# ---- top and trending --------------------------------------------------------------------------


@pytest.mark.parametrize(("sort", "column"), [("top", "display"), ("trending", "trending")])
def test_ranked_lists_collapse_spread_and_page_exactly(client, rows, demo_app, sort, column):
    everything = pages(client, f"sort={sort}")
    cards = [card for page in everything for card in page]
    ids = [card["id"] for card in cards]
    assert len(ids) == len(set(ids)), "no card on two pages"
    hidden = sum(card["similar_count"] for card in cards)
    expected = scored_listed_count(demo_app, getattr(SubAgentScore, column))
    assert len(ids) + hidden == expected, "every scored listing is a card or hidden under one"
    assert hidden > 0
    collapsed = [
        card["id"] for page in pages(client, f"sort={sort}", collapsed_only=True) for card in page
    ]
    assert collapsed == ids[: len(collapsed)]
    families = [family(rows, i) for i in collapsed]
    # Variety: any LINEAGE_WINDOW consecutive cards hold at most PER_LINEAGE of one family,
    # unless every family still to show had its share of the places before.
    for end in range(len(families)):
        before = Counter(families[max(0, end - LINEAGE_WINDOW + 1) : end])
        if before[families[end]] >= PER_LINEAGE:
            waiting = set(families[end:])
            assert all(before[f] >= PER_LINEAGE for f in waiting), (sort, end)
    first = everything[0]
    assert max(Counter(families[: len(first)]).values()) <= PER_LINEAGE
    assert clone_pairs(rows, first) == []


def test_top_page_one_on_the_web_is_varied(client, rows):
    body = client.get("/?sort=top").get_data(as_text=True)
    ids = [int(i) for i in re.findall(r'<h3 class="card-title"><a href="/s/(\d+)"', body)]
    assert len(ids) == 24
    assert max(Counter(family(rows, i) for i in ids).values()) <= PER_LINEAGE
    assert len({family(rows, i) for i in ids}) >= 12


# ---- the better branch, in the reader's language ----------------------------------------------


def banner(client, subagent_id: int, language: str | None) -> str | None:
    headers = {"Accept-Language": language} if language else {}
    body = client.get(f"/s/{subagent_id}", headers=headers).get_data(as_text=True)
    found = re.search(r'<aside class="better".*?</aside>', body, re.S)
    return re.sub(r"\s+", " ", found.group(0)) if found else None


def named_branch(text: str) -> int:
    return int(re.search(r'href="/s/(\d+)"', text).group(1))


@pytest.fixture(scope="module")
def english_pages_with_a_chinese_best(demo_app, rows) -> list[int]:
    """English listings whose ranking-run best descendant is a Chinese translation."""
    with Session(demo_app.engine) as session:
        scores = session.execute(
            select(SubAgentScore.subagent_id, SubAgentScore.best_descendant_id).where(
                SubAgentScore.best_descendant_id.is_not(None)
            )
        ).all()
    found = [
        subagent_id
        for subagent_id, best in scores
        if language_of(f"{rows[subagent_id].title} {rows[subagent_id].summary}") == "en"
        and language_of(f"{rows[best].title} {rows[best].summary}") == "zh"
        and rows[subagent_id].visibility == "public"
    ]
    assert found, "the demo has English pages whose best branch is Chinese"
    return found


def language_of_row(rows, subagent_id: int) -> str:
    return language_of(f"{rows[subagent_id].title} {rows[subagent_id].summary}")


def test_an_english_reader_is_pointed_to_an_english_branch_or_told_the_language(
    client, rows, english_pages_with_a_chinese_best
):
    english_named = 0
    for subagent_id in english_pages_with_a_chinese_best:
        text = banner(client, subagent_id, "en-US,en;q=0.9")
        assert text is not None
        branch = named_branch(text)
        if language_of_row(rows, branch) == "en":
            english_named += 1
            assert "A newer branch of this is loved more" in text
        else:
            assert language_of_row(rows, branch) == "zh"
            assert "A newer branch of this, in Chinese, is loved more" in text
    assert english_named > 0


def test_a_chinese_reader_is_pointed_to_the_chinese_branch_without_a_language_note(
    client, rows, english_pages_with_a_chinese_best
):
    for subagent_id in english_pages_with_a_chinese_best:
        text = banner(client, subagent_id, "zh-CN,zh;q=0.9")
        assert language_of_row(rows, named_branch(text)) == "zh"
        # The banner speaks the reader's chrome (Chinese) and names no language.
        assert "中文分支" not in text and "它有一个更新的分支，更受喜爱" in text


def test_the_api_names_the_branch_language_and_varies_on_it(
    client, rows, english_pages_with_a_chinese_best
):
    answers = {}
    for language in ("en", "zh-CN"):
        response = client.get(
            f"{API}/subagents/{english_pages_with_a_chinese_best[0]}",
            headers={"Accept-Language": language},
        )
        assert "Accept-Language" in response.headers["Vary"]
        answers[language] = response.get_json()["best_descendant"]
    assert answers["zh-CN"]["language"] == "zh"
    assert answers["en"]["language"] in ("en", "zh")
    for answer in answers.values():
        assert language_of_row(rows, answer["id"]) == answer["language"]
        assert answer["probability_better"] >= 0.8
