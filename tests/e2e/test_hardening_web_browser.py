"""In a real browser: a preview runs framed in its sub-agent's page, and
opened as the page itself its bundle never runs (so it cannot send the tab elsewhere)."""

from __future__ import annotations

import re

import pytest

from market.platform.state import app_state
from tests.factories import listing, make_user

pytestmark = pytest.mark.browser

ESCAPE_BUNDLE = {
    "manifest": {"name": "Escape", "entry": "index.html", "scopes": [], "hosts": []},
    "files": {
        "index.html": "<!doctype html><title>Escape</title><body><script src=app.js></script>",
        # Framed, the sandbox blocks the navigation of the top page; opened at the top, the
        # document may navigate itself unless it is never served there.
        "app.js": "document.body.insertAdjacentText('beforeend', 'PREVIEW-RAN');\n"
        "try { top.location = '/?escaped=1'; } catch (e) {}\n",
    },
}


def test_a_preview_runs_framed_and_never_as_the_page_itself(live_app, page):
    author = make_user(app_state(live_app).engine, "framer")
    created = live_app.test_client().post(
        "/api/v1/subagents",
        json=listing("Escape artist", bundle=ESCAPE_BUNDLE),
        headers=author.headers,
    )
    assert created.status_code == 201, created.get_json()
    subagent_id = created.get_json()["id"]

    page.goto(f"/s/{subagent_id}")
    frame = page.frame_locator("iframe[sandbox~='allow-scripts']")
    frame.get_by_text("PREVIEW-RAN").wait_for()  # framed: the bundle's script runs
    assert page.url.endswith(f"/s/{subagent_id}")  # ... and cannot navigate the page
    preview_url = page.locator("iframe[sandbox~='allow-scripts']").get_attribute("src")

    response = page.goto(preview_url)
    page.wait_for_load_state("networkidle")
    assert page.url.endswith(preview_url), page.url  # still here: nothing navigated away
    assert "PREVIEW-RAN" not in page.locator("body").inner_text()
    assert response.status == 403
    back = page.get_by_role("link", name="Go to the sub-agent")
    assert back.get_attribute("href") == f"/s/{subagent_id}"
    back.click()
    page.wait_for_url(re.compile(rf"/s/{subagent_id}$"))
    assert page.problems == []


def test_signing_out_signs_out_a_copy_of_the_cookie_in_another_browser(
    live_app, page, browser, base_url
):
    person = make_user(app_state(live_app).engine, "copied-cookie")
    page.goto("/signin")
    page.fill("#token", person.token)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(re.compile(r"/$"))
    copied = page.context.cookies()
    elsewhere = browser.new_context(base_url=base_url, viewport={"width": 390, "height": 844})
    try:
        other = elsewhere.new_page()
        elsewhere.add_cookies(copied)
        other.goto("/me/installs")
        assert other.url.endswith("/me/installs")  # the copy works while the session lives
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_load_state("networkidle")
        other.goto("/me/installs")
        assert "/signin" in other.url, other.url  # and signs no one in after sign-out
    finally:
        elsewhere.close()
    assert page.problems == []
