"""In a real browser, at a phone's size and a desktop's: a person signs in with a token, finds
their tokens under Tokens, revokes another one, and that token is refused by the API at once."""

from __future__ import annotations

import re

import pytest

from market.identity.models import User
from market.identity.tokens import create_token
from market.platform.db import session_scope
from market.platform.state import app_state
from tests.factories import make_user

pytestmark = pytest.mark.browser

SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}


def fits_the_viewport(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_list_then_revoke_a_token(live_app, page, base_url, screenshots, size):
    engine = app_state(live_app).engine
    person = make_user(engine, f"tokens-{size}", display_name=f"Token Keeper ({size})")
    with session_scope(engine) as session:
        user = session.get(User, person.id)
        laptop = create_token(session, user, name="laptop script", lifetime_days=30)
        laptop_id, laptop_secret = laptop.row.id, laptop.secret
        create_token(session, user, name="phone agent", lifetime_days=0)

    page.set_viewport_size(SIZES[size])
    page.goto("/signin?lang=en")
    page.fill("#token", person.token)
    page.locator("form button[type=submit].primary").click()
    page.wait_for_url(re.compile(r"/$"))

    page.get_by_role("link", name="Tokens").click()
    page.wait_for_url(re.compile(r"/me/tokens"))
    cards = page.locator("#tokens .token")
    assert cards.count() == 3
    assert page.locator(".token .chip-on", has_text="This sign-in").count() == 1
    laptop_card = page.locator(f"#token-{laptop_id}")
    assert "laptop script" in laptop_card.inner_text()
    assert "never expires" in page.locator(".token", has_text="phone agent").inner_text()
    assert fits_the_viewport(page)
    html = page.content()
    assert person.token not in html and laptop_secret not in html
    page.screenshot(path=str(screenshots / f"tokens-{size}-list.png"), full_page=True)

    button = laptop_card.get_by_role("button", name=re.compile("Revoke"))
    if size == "phone":
        box = button.bounding_box()
        assert box["height"] >= 32
    button.click()
    page.wait_for_selector(f"#token-{laptop_id}.token-revoked")
    assert "Token revoked" in page.locator(".flashes").inner_text()
    assert page.locator(f"#token-{laptop_id} button").count() == 0
    assert page.locator(".token-active").count() == 2
    assert fits_the_viewport(page)
    page.screenshot(path=str(screenshots / f"tokens-{size}-revoked.png"), full_page=True)

    refused = page.request.get(
        f"{base_url}/api/v1/me", headers={"Authorization": f"Bearer {laptop_secret}"}
    )
    assert refused.status == 401
    still = page.request.get(
        f"{base_url}/api/v1/me", headers={"Authorization": f"Bearer {person.token}"}
    )
    assert still.status == 200
    assert page.problems == []
