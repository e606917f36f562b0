"""Error pages in Japanese in headless Chromium at a phone's size (390x844): a browser set to
Japanese that follows a dead link, opens an address no route serves, or searches faster than
the limit allows reads a styled page in Japanese that fits the screen, with the server's English
message folded away until asked for.

An app of its own (an empty catalog: none of these pages reads it) with the search limit at 2
per 10 seconds, as in test_rate_limit_page_browser.py."""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import app_on_new_database, serving

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
WINDOW_SECONDS = 10


@pytest.fixture(scope="module")
def japanese_phone(tmp_path_factory, browser, chromium_executable):
    app = app_on_new_database(
        tmp_path_factory.mktemp("error-pages"),
        secret_key="e2e-error-pages",
        rate_limit_search=f"2/{WINDOW_SECONDS}",
    )
    with serving(app, "sprig-errors") as url:
        context = browser.new_context(
            base_url=url, viewport=PHONE, locale="ja-JP", device_scale_factor=1
        )
        try:
            yield context.new_page()
        finally:
            context.close()


def fits_the_width(page) -> bool:
    return page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def test_a_dead_link_reads_in_japanese_with_the_english_detail_folded(japanese_phone, screenshots):
    page = japanese_phone
    response = page.goto("/s/999999")
    assert response.status == 404
    assert page.locator("html").get_attribute("lang") == "ja"
    assert page.locator("h1").inner_text() == "ページが見つかりません"
    advice = page.locator(".error-advice").inner_text()
    assert advice == "このアドレスには何もないか、あなたには共有されていません。"
    detail = page.locator(".error-detail p")
    assert not detail.is_visible()
    page.get_by_text("詳細（英語）").click()
    assert detail.is_visible() and detail.get_attribute("lang") == "en"
    assert "999999" in detail.inner_text()
    assert page.get_by_role("link", name="一覧に戻る").is_visible()
    assert fits_the_width(page)
    page.screenshot(path=str(screenshots / "error-404-ja-phone.png"), full_page=True)


def test_an_address_no_route_serves_is_a_styled_japanese_page(japanese_phone, screenshots):
    page = japanese_phone
    response = page.goto("/no-such-page")
    assert response.status == 404
    assert response.headers["content-type"].startswith("text/html")
    assert page.locator("h1").inner_text() == "ページが見つかりません"
    # The stylesheet loaded (the page carries the pages' policy, not the API's "none").
    padding = page.evaluate("getComputedStyle(document.querySelector('.error-page')).paddingTop")
    assert padding == "40px"
    assert page.locator("header.top nav").get_by_role("link", name="ログイン").is_visible()
    assert fits_the_width(page)
    page.screenshot(path=str(screenshots / "error-unknown-address-ja-phone.png"), full_page=True)


def test_searching_too_fast_says_when_to_retry_in_japanese(japanese_phone, screenshots):
    page = japanese_phone
    left = WINDOW_SECONDS - time.time() % WINDOW_SECONDS
    if left < 6:  # the three searches must land in one fixed window
        time.sleep(left + 0.05)
    for query in ("water", "sleep"):
        assert page.goto(f"/?q={query}").status == 200
    refused = page.goto("/?q=mood")
    assert refused.status == 429
    wait = int(refused.headers["retry-after"])
    assert page.locator("h1").inner_text() == "リクエストが多すぎます"
    assert page.locator(".error-advice").inner_text() == "短い時間にこの操作を繰り返しすぎました。"
    assert page.locator(".error-retry").inner_text() == f"{wait} 秒後にもう一度お試しください。"
    assert fits_the_width(page)
    page.screenshot(path=str(screenshots / "error-429-ja-phone.png"), full_page=True)
