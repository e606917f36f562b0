"""Page chrome in the viewer's language: a ``?lang=`` choice (remembered in a cookie), else the
signed-in person's locale, else Accept-Language, else English; content is never translated."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import update

from market.identity.models import User
from market.platform.db import session_scope
from tests.factories import fork, make_user, publish
from tests.functional.web.test_pages import sign_in, text

HTML_LANG = re.compile(r'<html lang="([^"]+)">')


def html_lang(response) -> str:
    match = HTML_LANG.search(text(response))
    assert match, "no <html lang> on the page"
    return match.group(1)


@pytest.fixture
def listing(client, engine):
    author = make_user(engine, "kenji", display_name="Kenji Sato")
    return publish(client, author, title="Water Tracker", summary="Three litres a day.")


def test_lang_zh_gives_chinese_chrome_and_is_remembered(client, listing):
    page = client.get("/?lang=zh")
    assert page.status_code == 200
    assert html_lang(page) == "zh-Hans"
    body = text(page)
    assert "人们为自己的生活做的工具" in body
    assert ">浏览<" in body and ">登录<" in body
    assert "Tools people made for their own lives" not in body
    assert "sprig_lang=zh" in page.headers["Set-Cookie"]
    # The choice holds on the next page without ?lang=, over the browser's language.
    later = client.get(f"/s/{listing['id']}", headers={"Accept-Language": "ja"})
    assert html_lang(later) == "zh-Hans"
    assert ">你的数据<" in text(later)


def test_accept_language_ja_gives_japanese_chrome(client, listing):
    page = client.get(f"/s/{listing['id']}", headers={"Accept-Language": "ja-JP,ja;q=0.9,en;q=0.5"})
    assert page.status_code == 200
    assert html_lang(page) == "ja"
    body = text(page)
    for heading in ("あなたのデータ", "ファミリー", "評価とコメント", "バージョン"):
        assert f">{heading}<" in body
    assert "Your data" not in body
    # What people wrote is never translated.
    assert "Water Tracker" in body and "Three litres a day." in body
    assert "作成：<strong>Kenji Sato</strong>" in body
    assert {"Accept-Language", "Cookie"} <= set(page.vary)


def test_english_by_default_and_for_languages_the_chrome_lacks(client, listing):
    for headers in ({}, {"Accept-Language": "de-DE,de;q=0.9"}):
        page = client.get("/", headers=headers)
        assert html_lang(page) == "en"
        assert "Tools people made for their own lives" in text(page)
        assert "Set-Cookie" not in page.headers


def test_accept_language_picks_the_best_supported_by_quality(client, listing):
    page = client.get("/", headers={"Accept-Language": "fr, ja;q=0.8, zh;q=0.5"})
    assert html_lang(page) == "ja"


def test_signed_in_persons_locale_comes_before_accept_language(client, engine, listing):
    reader = make_user(engine, "mei")
    with session_scope(engine) as session:
        session.exec(update(User).where(User.id == reader.id).values(locale="zh-CN"))
    sign_in(client, reader)
    page = client.get("/", headers={"Accept-Language": "ja"})
    assert html_lang(page) == "zh-Hans"
    assert ">我的安装<" in text(page)
    # An explicit choice wins over the person's locale.
    assert html_lang(client.get("/?lang=en")) == "en"
    assert html_lang(client.get("/", headers={"Accept-Language": "ja"})) == "en"


def test_an_unknown_language_choice_is_a_clear_400(client):
    page = client.get("/?lang=fr")
    assert page.status_code == 400
    assert "Unknown language &#39;fr&#39;: choose one of en, zh, ja." in text(page)
    assert "Set-Cookie" not in page.headers


def test_the_footer_switcher_keeps_the_page_and_its_query(client, listing):
    body = text(client.get("/?q=water&category=hydration&lang=ja"))
    footer = body[body.index('<footer class="bottom">') :]
    for code, name in (("en", "English"), ("zh", "中文"), ("ja", "日本語")):
        assert f'href="/?q=water&amp;category=hydration&amp;lang={code}"' in footer
        assert f">{name}</a>" in footer
    assert 'lang="ja" hreflang="ja" aria-current="true"' in footer


def test_plurals_and_placeholders_in_chinese_and_japanese(client, listing):
    zh = text(client.get("/?lang=zh"))
    assert "0 次安装" in zh and "0 个分支" in zh
    ja = text(client.get("/?q=nothing-like-this&lang=ja"))
    assert "「nothing-like-this」に合うものはまだありません" in ja


def test_a_search_echoed_in_translated_chrome_stays_escaped(client):
    page = client.get("/", query_string={"q": "<b>x</b>", "lang": "ja"})
    body = text(page)
    assert "「&lt;b&gt;x&lt;/b&gt;」に合うものはまだありません" in body
    assert "<b>x</b>" not in body


def test_the_diff_page_in_japanese(client, engine, listing):
    forker = make_user(engine, "yui")
    child = fork(client, forker, listing["id"], note="larger glasses", title="Water Tracker XL")
    page = client.get(f"/s/{child['id']}/diff?lang=ja")
    assert page.status_code == 200
    body = text(page)
    assert ">権限<" in body and ">ファイル<" in body
    assert "Water Tracker XL</a> の変更点" in body
    assert "Permissions" not in body
