"""Facts a page states about a sub-agent: its family's ratings, a customize example that fits
it, and what a signed-out visitor to a dashboard is told."""

from __future__ import annotations

import html
import re

import pytest

from market.catalog.customize_examples import EXAMPLES, customize_placeholder
from market.catalog.models import CATEGORIES
from tests.factories import fork, make_user, publish

PLACEHOLDER = re.compile(r'id="customize-text"[^>]*placeholder="([^"]*)"')
FAMILY = re.compile(r'<h2 id="tree-h">Its family</h2>(.*?)</section>', re.S)


def text(response) -> str:
    return response.get_data(as_text=True)


def sign_in_with_cookie(client, actor) -> None:
    page = text(client.get("/signin"))
    token = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    response = client.post("/signin", data={"csrf": token, "token": actor.token, "next": "/"})
    assert response.status_code == 302


def placeholder_on(client, subagent_id: int) -> str:
    match = PLACEHOLDER.search(text(client.get(f"/s/{subagent_id}")))
    assert match, "no customize box on the page"
    return html.unescape(match.group(1))


@pytest.fixture
def family(client, engine):
    alice = make_user(engine, "alice", display_name="Alice Creator")
    bob = make_user(engine, "bob", display_name="Bob Forker")
    root = publish(client, alice, title="Water Tracker")
    child = fork(client, bob, root["id"], note="ounces", title="Water Tracker in ounces")
    return {"alice": alice, "bob": bob, "root": root, "child": child}


def test_family_cards_show_the_forks_ratings(client, engine, family):
    raters = [make_user(engine, f"rater{i}") for i in range(3)]
    child = family["child"]
    for rater, stars in zip(raters, (5, 4, 4), strict=True):
        installed = client.post(
            f"/api/v1/subagents/{child['id']}/install", json={}, headers=rater.headers
        )
        assert installed.status_code in (200, 201), installed.get_json()
        rated = client.post(
            "/api/v1/feedback",
            json={"version_id": child["latest_version"]["id"], "stars": stars},
            headers=rater.headers,
        )
        assert rated.status_code == 201, rated.get_json()

    section = FAMILY.search(text(client.get(f"/s/{family['root']['id']}"))).group(1)
    assert "Water Tracker in ounces" in section
    assert "not rated yet" not in section
    assert "★ 4.3" in section and "(3)" in section


def test_an_unrated_fork_says_so(client, family):
    section = FAMILY.search(text(client.get(f"/s/{family['root']['id']}"))).group(1)
    assert "Water Tracker in ounces" in section and "not rated yet" in section


def test_customize_example_is_a_request_its_forks_were_asked_for(client, family):
    sign_in_with_cookie(client, family["bob"])
    assert placeholder_on(client, family["root"]["id"]) == "please change it: ounces"


def test_customize_example_of_a_chinese_flashcard_app_is_chinese_and_about_study(client, family):
    flashcards = publish(
        client,
        family["alice"],
        title="孩子的汉字卡",
        summary="给海外长大的孩子用的汉字卡片，间隔复习，一天几分钟。",
        category="study",
        tags=["chinese", "flashcards"],
    )
    sign_in_with_cookie(client, family["bob"])
    water = placeholder_on(client, family["child"]["id"])
    chinese = placeholder_on(client, flashcards["id"])
    assert chinese == EXAMPLES["zh"]["study"]
    assert chinese != water
    assert "millilitres" not in chinese and re.search(r"[\u4e00-\u9fff]", chinese)


def test_every_category_has_an_example_in_every_language():
    for language, examples in EXAMPLES.items():
        assert set(examples) == set(CATEGORIES), language


def test_a_fork_request_in_another_language_is_not_the_example():
    example = customize_placeholder(
        "日本語フレーズ帳", "旅行で使う日本語のフレーズ", "travel", ["add Korean too"]
    )
    assert example == EXAMPLES["ja"]["travel"]


@pytest.mark.parametrize("path", ["/creators/alice", "/creators/alice/stats.csv?window=7"])
def test_signed_out_dashboard_asks_to_sign_in_and_comes_back(client, family, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/signin?next=")
    back = client.get(response.headers["Location"])
    assert back.status_code == 200
    assert f'name="next" value="{html.escape(path)}"' in text(back)


def test_signed_out_visitor_to_an_unknown_dashboard_gets_the_same_answer(client, family):
    known = client.get("/creators/alice")
    unknown = client.get("/creators/nobody-at-all")
    assert unknown.status_code == known.status_code == 302
    assert unknown.headers["Location"] == "/signin?next=/creators/nobody-at-all"


def test_signed_in_creator_still_reads_their_dashboard(client, family):
    sign_in_with_cookie(client, family["alice"])
    assert client.get("/creators/alice").status_code == 200
    assert client.get("/creators/bob").status_code == 404
