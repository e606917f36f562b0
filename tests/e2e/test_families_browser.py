"""The search page in headless Chromium, on a phone and a desktop: collapsed cards say how
many similar forks they hide and lead to them, and an empty search says so and offers help."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}


def fits_the_width(page) -> bool:
    return page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def inside_the_width(page, locator) -> bool:
    box = locator.bounding_box()
    width = page.viewport_size["width"]
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width


@pytest.mark.parametrize("size", SIZES)
def test_search_shows_collapsed_cards_and_an_honest_empty_state(page, screenshots, size):
    page.set_viewport_size(SIZES[size])
    page.goto("/?q=water")
    similar = page.locator(".card-similar a")
    assert similar.count() >= 1
    assert re.fullmatch(r"\d+ similar forks?", similar.first.inner_text())
    assert fits_the_width(page)
    assert inside_the_width(page, similar.first)
    titles = page.locator(".card-title a").all_inner_texts()
    assert len(titles) == len(set(titles)), "no two identical cards"
    page.screenshot(path=screenshots / f"search-collapsed-{size}.png", full_page=True)

    similar.first.click()
    page.wait_for_url(re.compile(r"/s/\d+/tree$"))
    assert page.locator("h1").inner_text().startswith("Fork tree of")

    page.goto("/?q=xylophone+zeppelin+quokka")
    empty = page.locator(".nothing-found")
    empty.wait_for()
    assert "Nothing matches “xylophone zeppelin quokka” yet" in empty.inner_text()
    assert page.locator(".card").count() == 0
    ask = empty.get_by_role("link", name="How a coding agent asks (API)")
    assert ask.get_attribute("href") == "/api/v1/docs#/Suggestions"
    for link in (ask, empty.get_by_role("link", name="See what people love")):
        assert inside_the_width(page, link)
    assert fits_the_width(page)
    page.screenshot(path=screenshots / f"search-empty-{size}.png", full_page=True)
    assert page.problems == []
