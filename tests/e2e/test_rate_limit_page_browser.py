"""In a real browser, at a phone's size and a desktop's: a person who searches faster than the
search limit allows gets a readable 429 page (not a problem document, not a blank screen) with
`Retry-After`, can still browse without searching, and searches again once the window ends.

The shared live server runs with every limit off, so this test serves an app of its own with
the search limit at 2 per 10 seconds (an empty catalog: the limit does not read it)."""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import app_on_new_database, serving

pytestmark = pytest.mark.browser

SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
WINDOW_SECONDS = 10
# Each size is a client of its own, through the one proxy hop the app is told to trust.
ADDRESSES = {"phone": "203.0.113.7", "desktop": "203.0.113.8"}


@pytest.fixture(scope="module")
def limited_url(tmp_path_factory, chromium_executable):
    app = app_on_new_database(
        tmp_path_factory.mktemp("limited"),
        secret_key="e2e-limits",
        rate_limit_search=f"2/{WINDOW_SECONDS}",
        trusted_proxy_hops=1,
    )
    with serving(app, "sprig-limits") as url:
        yield url


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_searching_too_fast_shows_a_page_that_says_when_to_retry(
    browser, limited_url, screenshots, size
):
    # Windows are fixed (aligned to the clock): the three searches must land in one of them.
    left = WINDOW_SECONDS - time.time() % WINDOW_SECONDS
    if left < 6:
        time.sleep(left + 0.05)
    context = browser.new_context(
        base_url=limited_url,
        viewport=SIZES[size],
        extra_http_headers={"X-Forwarded-For": ADDRESSES[size]},
    )
    page = context.new_page()
    try:
        for query in ("water", "sleep"):
            assert page.goto(f"/?q={query}&lang=en").status == 200
        refused = page.goto("/?q=mood&lang=en")
        assert refused.status == 429
        wait = int(refused.headers["retry-after"])
        assert 1 <= wait <= WINDOW_SECONDS
        assert refused.headers["content-type"].startswith("text/html")
        assert page.locator("h1").inner_text() == "Too many requests"
        assert f"retry in {wait} s" in page.locator(".error-page").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(screenshots / f"rate-limit-{size}.png"), full_page=True)

        # Browsing without a query is not a search: the page's way out is not refused.
        with page.expect_response(lambda response: response.url.startswith(limited_url)) as back:
            page.get_by_role("link", name="Back to browsing").click()
        assert back.value.status == 200

        time.sleep(wait + 0.1)
        assert page.goto("/?q=mood&lang=en").status == 200
    finally:
        context.close()
