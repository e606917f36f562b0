"""Page chrome in Chinese and Japanese in headless Chromium, on a phone and a desktop: the
browse page and a sub-agent page in the language chosen in the footer (remembered from page to
page) or asked for by the browser, and no page wider than its screen."""

from __future__ import annotations

import pytest
from sqlmodel import select

from market.catalog.models import SubAgent
from market.platform.db import session_scope
from market.platform.state import app_state

pytestmark = pytest.mark.browser

SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
# What each language's chrome says, and a sub-agent of the demo written in it.
CHROME = {
    "zh": {
        "html_lang": "zh-Hans",
        "switcher": "中文",
        "hero": "人们为自己的生活做的工具",
        "search": "搜索",
        "headings": ["试一试", "你的数据", "它的家族", "评分和评论", "版本"],
        "title": "茶饮日记",
    },
    "ja": {
        "html_lang": "ja",
        "switcher": "日本語",
        "hero": "みんなが自分の暮らしのために作ったツール",
        "search": "検索",
        "headings": ["試してみる", "あなたのデータ", "ファミリー", "評価とコメント", "バージョン"],
        "title": "シンプル家計簿",
    },
}


def fits_the_width(page) -> bool:
    return page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("language", CHROME)
def test_browse_and_a_subagent_page_in_the_chosen_language(page, screenshots, language, size):
    chrome = CHROME[language]
    page.set_viewport_size(SIZES[size])
    page.goto("/")
    assert page.locator("html").get_attribute("lang") == "en"
    # Waits for the new page: right after the click, the old one may still be the one loaded.
    with page.expect_navigation():
        page.locator("footer .languages").get_by_role("link", name=chrome["switcher"]).click()
    assert page.locator("html").get_attribute("lang") == chrome["html_lang"]
    assert page.locator("h1").inner_text() == chrome["hero"]
    assert page.locator("form.search button").inner_text() == chrome["search"]
    assert page.locator(".card").count() > 0
    assert fits_the_width(page)
    page.screenshot(path=screenshots / f"i18n-browse-{language}-{size}.png", full_page=True)

    # The choice is remembered: the sub-agent's own link carries no ?lang=.
    page.locator("form.search input[name=q]").fill(chrome["title"])
    page.locator("form.search button").click()
    page.get_by_role("link", name=chrome["title"], exact=True).first.click()
    page.wait_for_url("**/s/*")
    assert "lang=" not in page.url
    assert page.locator("html").get_attribute("lang") == chrome["html_lang"]
    assert page.locator("h1").inner_text() == chrome["title"]
    headings = page.locator("article h2").all_inner_texts()
    for heading in chrome["headings"]:
        assert heading in headings
    assert fits_the_width(page)
    page.screenshot(path=screenshots / f"i18n-{language}-{size}.png", full_page=True)
    assert page.problems == []


def test_the_browsers_language_picks_the_chrome(browser, base_url):
    context = browser.new_context(
        base_url=base_url, viewport=SIZES["phone"], locale="ja-JP", device_scale_factor=1
    )
    try:
        page = context.new_page()
        page.goto("/")
        assert page.locator("html").get_attribute("lang") == "ja"
        assert page.locator("h1").inner_text() == CHROME["ja"]["hero"]
        assert fits_the_width(page)
    finally:
        context.close()


def test_the_family_tree_script_speaks_japanese(live_app, page, screenshots):
    """The tree's own words (each dot's label, "show more", the status line) are the page's,
    in the reader's language, not the script's English."""
    with session_scope(app_state(live_app).engine) as session:
        root_id = session.exec(
            select(SubAgent.root_id)
            .where(SubAgent.visibility == "public", SubAgent.status == "active")
            .order_by(SubAgent.depth.desc(), SubAgent.id)
        ).first()
    page.goto(f"/s/{root_id}/tree?lang=ja")
    page.wait_for_selector("#tree[data-ready='1'] svg.tree")
    assert "フォークツリー" in page.locator("svg.tree").get_attribute("aria-label")
    label = page.locator("svg.tree g.node a").first.get_attribute("aria-label")
    assert "1 日あたり" in label and "インストール" in label and "daily users" not in label
    more = page.locator("svg.tree g.more text")
    if more.count():
        assert more.first.text_content().startswith("もっと見る（")
    page.screenshot(path=screenshots / "tree-ja-phone.png", full_page=True)
    assert page.problems == []
