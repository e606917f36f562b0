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


@pytest.mark.parametrize("size", SIZES)
def test_show_more_speaks_the_reader_s_language_while_it_loads(page, screenshots, size):
    """While the next cards are on their way the button says so in the page's language, and
    says "Show more" again (in that language) if they never come."""
    page.set_viewport_size(SIZES[size])
    page.goto("/")
    with page.expect_navigation():
        page.locator("footer .languages").get_by_role("link", name="日本語").click()
    more = page.locator("a[data-more]")
    assert more.text_content() == "もっと見る"

    held = []
    page.route("**/*partial=1*", lambda route: held.append(route))  # held until released
    more.click()
    page.wait_for_function("() => document.querySelector('a[data-more]').dataset.busy")
    assert more.text_content() == "読み込み中…"
    page.screenshot(path=screenshots / f"browse-more-loading-ja-{size}.png")

    # The next cards fail to come: the label is the page's own again, and the reader is taken
    # to the next page the plain way.
    address = page.url
    with page.expect_navigation():
        held[0].abort()
    assert page.url != address and "partial" not in page.url
    assert page.locator("html").get_attribute("lang") == "ja"
    assert page.locator(CARDS).count() > 0
    assert page.problems == []
