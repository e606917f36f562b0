"""Browse's "Show more" in headless Chromium, on a phone and a desktop: the next cards come only
when it is tapped, appended in place with the reading going on at the first new card, so the
footer below the list (the language switch) stays in reach of a reader who scrolls to it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
CARDS = "#cards > li.card"


@pytest.mark.parametrize("size", SIZES)
def test_the_footer_stays_in_reach_and_show_more_adds_cards_in_place(page, screenshots, size):
    page.set_viewport_size(SIZES[size])
    page.goto("/")
    cards = page.locator(CARDS)
    shown = cards.count()
    assert shown > 0

    # Scrolling down to the footer loads nothing: the switch is where the reader scrolled.
    switch = page.locator("footer .languages").get_by_role("link", name="日本語")
    switch.scroll_into_view_if_needed()
    page.wait_for_load_state("networkidle")
    assert cards.count() == shown
    top, bottom = switch.evaluate("e => [e.getBoundingClientRect().top, window.innerHeight]")
    assert 0 <= top < bottom
    page.screenshot(path=screenshots / f"browse-footer-{size}.png")

    # Tapped, "Show more" appends the next page in place and moves focus to its first card.
    address = page.url
    page.locator("a[data-more]").click()
    page.wait_for_function(f"n => document.querySelectorAll('{CARDS}').length > n", arg=shown)
    assert page.url == address
    assert page.evaluate(
        f"n => document.activeElement.closest('li.card') === "
        f"document.querySelectorAll('{CARDS}')[n]",
        shown,
    )
    page.screenshot(path=screenshots / f"browse-more-{size}.png")

    # And the footer's switch works after that.
    with page.expect_navigation():
        switch.click()
    assert page.locator("html").get_attribute("lang") == "ja"
    assert page.problems == []
