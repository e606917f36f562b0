"""The surfaces that were English only, in Chinese and Japanese: the error pages (a domain
error, an address no route serves, a crash, the rate limit's 429), my fork requests, the
dashboard, the ranking page, the rating form and the tree's outline. And what no header may do:
a huge, malformed or unknown Accept-Language falls back to English, never to a 500."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from sqlalchemy.exc import OperationalError

from market.web import i18n
from tests.conftest import make_app
from tests.factories import fork, make_user, publish
from tests.functional.test_rate_limits import clear_of_window_end
from tests.functional.web.test_i18n import html_lang
from tests.functional.web.test_pages import csrf_of, sign_in, text

# What a browser sends when it navigates (Chromium's own header), and what API clients send.
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
PROBLEM = "application/problem+json"


def page_in(client, path: str, language: str, **headers):
    return client.get(path, headers={"Accept": BROWSER, "Accept-Language": language, **headers})


def error_texts(response) -> tuple[str, str]:
    body = text(response)
    title = re.search(r"<h1>(.*?)</h1>", body).group(1)
    advice = re.search(r'<p class="error-advice">(.*?)</p>', body, re.S).group(1)
    return title, advice


@pytest.fixture
def world(client, engine):
    alice = make_user(engine, "alice", display_name="Alice Creator")
    bob = make_user(engine, "bob", display_name="Bob Importer")
    root = publish(client, alice, title="Water Tracker", summary="Three litres a day.")
    child = fork(client, bob, root["id"], note="reminders", title="Water Tracker with reminders")
    secret = publish(client, alice, title="Alice Private Diary", visibility="private")
    return {"alice": alice, "bob": bob, "root": root, "child": child, "secret": secret}


# ---- error pages ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "title", "advice", "details"),
    [
        (
            "zh-CN,zh;q=0.9",
            "找不到页面",
            "这个地址上什么都没有，或者它没有分享给你。",
            "详细信息（英文）",
        ),
        ("ja-JP,ja;q=0.9", "ページが見つかりません", "このアドレスには何もないか", "詳細（英語）"),
    ],
)
def test_a_private_subagent_is_a_translated_404_page(
    client, world, language, title, advice, details
):
    response = page_in(client, f"/s/{world['secret']['id']}", language)
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    shown_title, shown_advice = error_texts(response)
    assert shown_title == title and advice in shown_advice
    body = text(response)
    assert "Not found" not in body and "Back to browsing" not in body
    # The server's own English sentence is kept, folded and marked as English.
    assert re.search(rf"<summary>{details}</summary><p lang=\"en\">[^<]+</p>", body)
    assert "Alice Private Diary" not in body
    assert {"Accept-Language", "Cookie"} <= set(response.vary)


def test_in_english_the_servers_message_shows_as_it_is(client, world):
    response = page_in(client, f"/s/{world['secret']['id']}", "en-US")
    body = text(response)
    assert error_texts(response)[0] == "Not found"
    assert '<p class="error-detail">' in body and "<details" not in body


@pytest.mark.parametrize(
    ("language", "title"), [("zh", "找不到页面"), ("ja", "ページが見つかりません")]
)
def test_an_address_no_route_serves_is_a_page_for_browsers_and_a_problem_for_clients(
    client, language, title
):
    for path in ("/no-such-page", "/s/not-a-number"):
        response = page_in(client, path, language)
        assert response.status_code == 404 and response.mimetype == "text/html"
        assert error_texts(response)[0] == title
        assert html_lang(response) == {"zh": "zh-Hans", "ja": "ja"}[language]
        # The page's own policy, so its stylesheet loads; the answer depends on Accept.
        assert "style-src 'self'" in response.headers["Content-Security-Policy"]
        assert "Accept" in response.vary
    for accept in ("application/json", "*/*", None):
        headers = {"Accept-Language": language, **({"Accept": accept} if accept else {})}
        response = client.get("/no-such-page", headers=headers)
        assert response.status_code == 404 and response.mimetype == PROBLEM
        assert response.get_json()["title"] == "Not Found"
    # The API keeps its problem documents, in English, whatever language is asked for, and
    # an address under it that nothing serves is a problem even to a browser.
    api = client.get("/api/v1/subagents/999999", headers={"Accept-Language": language})
    assert api.mimetype == PROBLEM and api.get_json()["title"] == "Not found"
    unknown = page_in(client, "/api/v1/no-such-endpoint", language)
    assert unknown.status_code == 404 and unknown.mimetype == PROBLEM


def test_a_wrong_method_on_a_page_is_a_translated_405_keeping_allow(client, world):
    response = client.post("/ranking", headers={"Accept": BROWSER, "Accept-Language": "ja"})
    assert response.status_code == 405 and response.mimetype == "text/html"
    assert error_texts(response)[0] == "この操作はできません"
    assert "GET" in response.headers["Allow"]


def test_a_crash_on_a_page_is_a_translated_500_page_and_stays_a_problem_on_the_api(app, client):
    app.config["PROPAGATE_EXCEPTIONS"] = False  # answer as production does

    def crash(**_arguments):
        raise RuntimeError("secret internals")

    app.view_functions["web.ranking_page"] = crash
    app.view_functions["ranking.ranking_method"] = crash
    response = page_in(client, "/ranking", "zh-CN")
    assert response.status_code == 500 and response.mimetype == "text/html"
    title, advice = error_texts(response)
    assert title == "出错了" and "这不是你的问题" in advice
    assert "secret internals" not in text(response) and "<details" not in text(response)
    api = client.get("/api/v1/ranking", headers={"Accept-Language": "zh-CN"})
    assert api.status_code == 500 and api.mimetype == PROBLEM


@pytest.mark.parametrize(
    ("language", "title", "wait"),
    [
        ("zh-CN", "操作太频繁", "请在 {} 秒后重试。"),
        ("ja", "リクエストが多すぎます", "{} 秒後にもう一度お試しください。"),
    ],
)
def test_the_rate_limit_page_says_when_to_retry_in_the_readers_language(
    database_url, language, title, wait
):
    with make_app(database_url, rate_limit_search="1/60") as app:
        client = app.test_client()
        clear_of_window_end(60)  # both searches in one window
        assert page_in(client, "/?q=water", language).status_code == 200
        refused = page_in(client, "/?q=water", language)
        assert refused.status_code == 429 and refused.mimetype == "text/html"
        seconds = int(refused.headers["Retry-After"])
        shown_title, advice = error_texts(refused)
        assert shown_title == title
        assert (
            advice
            == {
                "zh-CN": "你在短时间内操作太多次了。",
                "ja": "短い時間にこの操作を繰り返しすぎました。",
            }[language]
        )
        retry = re.search(r'<p class="error-retry">(.*?)</p>', text(refused)).group(1)
        assert retry == wait.format(seconds)
        assert "Rate limit reached" in text(refused)  # the English detail, folded
        assert "<summary>" in text(refused)


def test_the_ranking_pages_check_of_the_lang_choice_is_a_translated_400(client):
    response = client.get("/ranking?lang=fr", headers={"Accept-Language": "ja"})
    assert response.status_code == 400
    assert error_texts(response)[0] == "リクエストが正しくありません"
    assert "Unknown language &#39;fr&#39;" in text(response)


# ---- pages that were English only -------------------------------------------------------


def test_my_fork_requests_in_chinese_and_japanese(client, world):
    sign_in(client, world["bob"])
    empty = text(client.get("/me/fork-requests?lang=zh"))
    assert "你还没有请求过属于自己的版本" in empty and ">浏览子智能体<" in empty
    token = csrf_of(client, f"/s/{world['root']['id']}")
    asked = client.post(
        f"/s/{world['root']['id']}/customize", data={"csrf": token, "text": "use millilitres"}
    )
    assert asked.status_code == 302
    zh = text(client.get("/me/fork-requests?lang=zh"))
    assert "<h1>我的定制请求</h1>" in zh
    assert "你的请求已交给编程智能体：它会为你分支出一个属于你的版本。" in zh  # the form's flash
    assert ">处理中<" in zh and "正在等编程智能体做出你的版本。" in zh
    assert re.search(r"请求于 <time datetime=\"[^\"]+\">\d{4}-\d\d-\d\d</time>", zh)
    ja = text(client.get("/me/fork-requests?lang=ja"))
    assert "<h1>カスタマイズの依頼</h1>" in ja
    assert (
        ">受付中<" in ja
        and "コーディングエージェントがあなたのバージョンを作るのを待っています。" in ja
    )
    for body in (zh, ja):
        assert "use millilitres" in body  # what the person wrote stays as written
        assert "Waiting for" not in body and ">Open<" not in body and "Asked" not in body


def test_the_dashboard_ranking_rating_form_and_tree_in_japanese_and_chinese(client, world):
    sign_in(client, world["alice"])
    dashboard = text(client.get("/creators/alice?lang=ja"))
    for words in (
        "Alice Creator さんのツール",
        ">CSV をダウンロード<",
        "日ごとのインストール数",
        "あなたの作品のフォーク",
    ):
        assert words in dashboard
    assert "他の人による直接のフォーク 1 件" in dashboard
    assert "Forks of your work" not in dashboard and "Download CSV" not in dashboard
    assert "アクティブユーザー" in dashboard and "active users" not in dashboard
    ranking = text(client.get("/ranking?lang=zh"))
    assert "<h1>排名是怎么算的</h1>" in ranking and "还没有进行过排名计算。" in ranking
    sign_in(client, world["bob"])
    token = csrf_of(client, f"/s/{world['root']['id']}")
    assert client.post(f"/s/{world['root']['id']}/import", data={"csrf": token}).status_code == 302
    subagent = text(client.get(f"/s/{world['root']['id']}?lang=ja"))
    assert ">評価する" in subagent and "<legend>星の数</legend>" in subagent
    assert ">評価を投稿<" in subagent and "Post my rating" not in subagent
    # The import's flash, in the language chosen when it was made (Chinese, the cookie's).
    assert "已导入你的智能体。" in subagent
    assert ">アンインストール</button>" in subagent
    # A suggested tag reads in Japanese and is still sent as the word the ratings store.
    assert 'value="love it"><span>大好き</span>' in subagent
    tree = text(client.get(f"/s/{world['root']['id']}/tree?lang=zh"))
    assert "位用户" in tree and "daily users" not in tree
    assert "(尚无评分, 每日 0.0 位用户)" in tree  # the outline without scripts
    # What the script writes (labels, status lines) comes with the page, in Chinese.
    messages = json.loads(re.search(r'id="tree-messages">(.*?)</script>', tree, re.S).group(1))
    assert messages["words"]["not rated yet"] == "尚无评分"
    assert messages["show_more"] == "显示更多（%(left)s）"


# ---- what a header may not do ------------------------------------------------------------

HOSTILE_LANGUAGES = [
    "x" * 8000,
    "xx-" * 2500,
    ";;;,,,=q",
    "ja;q=abc, zh;q=1e999, *;q=nan",
    "ja;q=0, zh;q=0",
    "tlh-Piqd, i-klingon;q=0.9",
    "\xe9\xe8, \xff;q=0.5",
    "\t, en;q=",
]


@pytest.mark.parametrize("language", HOSTILE_LANGUAGES)
def test_a_hostile_accept_language_falls_back_to_english_never_a_500(client, world, language):
    for path, status in (
        ("/", 200),
        (f"/s/{world['root']['id']}", 200),
        (f"/s/{world['secret']['id']}", 404),
        ("/no-such-page", 404),
    ):
        response = page_in(client, path, language)
        assert response.status_code == status, (path, response.status_code)
        assert html_lang(response) == "en"
    detail = client.get(
        f"/api/v1/subagents/{world['root']['id']}", headers={"Accept-Language": language}
    )
    assert detail.status_code == 200


def test_why_a_person_may_not_rate_reads_in_their_language_and_stays_english_on_the_api(
    client, world
):
    bob, child = world["bob"], world["child"]
    sign_in(client, bob)
    own = text(client.get(f"/s/{child['id']}?lang=ja"))
    assert "作者は自分のサブエージェントを評価できません。" in own
    assert "Authors do not rate" not in own
    stranger = text(client.get(f"/s/{world['root']['id']}?lang=zh"))
    assert "只有安装过或用过这个子智能体的人才能评分。" in stranger
    refused = client.post(
        "/api/v1/feedback",
        json={"version_id": child["latest_version"]["id"], "stars": 5},
        headers={**bob.headers, "Accept-Language": "ja"},
    )
    assert refused.status_code == 403
    assert refused.get_json()["detail"] == "Authors do not rate their own sub-agents."


def test_the_database_away_page_of_a_signed_in_person_reads_the_language_from_the_request(
    app, client, world, monkeypatch
):
    """The person's locale lives in the database that is away: the page still renders, in the
    language the request asks for, with Retry-After."""
    sign_in(client, world["bob"])

    def away(*_arguments, **_keywords):
        raise OperationalError("SELECT 1", {}, ConnectionRefusedError("database away"))

    app.view_functions["web.ranking_page"] = away
    monkeypatch.setattr(i18n, "db", lambda: SimpleNamespace(exec=away))
    response = page_in(client, "/ranking", "ja")
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    title, advice = error_texts(response)
    assert title == "サービスを一時的に利用できません"
    assert advice == "Sprig は一時的に利用できません。少し待ってから、もう一度お試しください。"
    assert re.search(r'<p class="error-retry">5 秒後にもう一度お試しください。</p>', text(response))
