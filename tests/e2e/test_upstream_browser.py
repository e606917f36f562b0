"""In a real browser, at a phone's size and a desktop's: a fork's author sees "1 update from
upstream" on the fork's page, reads the merge file by file and accepts it; a person who uses
the fork is then asked for the permission the update adds before updating."""

from __future__ import annotations

import re

import pytest

from market.platform.state import app_state
from tests.e2e.test_browser import sign_in_with_token
from tests.e2e.test_web_actions import SIZES, fits_the_viewport
from tests.factories import make_user
from tests.functional.catalog.test_upstream import (
    API,
    FORK_JS,
    PARENT_V2_JS,
    SCOPES,
    offered_fork,
)

pytestmark = pytest.mark.browser


def _offered_fork(app, size: str):
    """A parent, a fork of it and the parent's v2 (adding a scope), published through the API,
    and the fork installed by a person who uses it after the offer was made, before the
    merge: (fork id, the fork's author, that person)."""
    engine = app_state(app).engine
    creator = make_user(engine, f"upstream-creator-{size}")
    author = make_user(engine, f"upstream-forker-{size}")
    user = make_user(engine, f"upstream-user-{size}")
    client = app.test_client()
    _parent, fork = offered_fork(
        client, creator, author, FORK_JS, PARENT_V2_JS, [*SCOPES, "sleep.read"], name=f" {size}"
    )
    installed = client.post(f"{API}/subagents/{fork['id']}/install", json={}, headers=user.headers)
    assert installed.status_code == 201
    return fork["id"], author, user


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_banner_then_diff_then_accept(live_app, browser, base_url, page, screenshots, size):
    fork_id, author, user = _offered_fork(live_app, size)
    page.set_viewport_size(SIZES[size])
    sign_in_with_token(page, author.token)
    page.goto(f"/s/{fork_id}?lang=en")

    banner = page.locator(".upstream-banner")
    assert "1 update from upstream" in banner.inner_text()
    assert fits_the_viewport(page)
    page.screenshot(path=screenshots / f"upstream-banner-{size}.png")
    banner.get_by_role("link").click()
    page.wait_for_url(re.compile(rf"/s/{fork_id}/upstream/\d+$"))

    files = page.locator(".merge-list li")
    assert files.count() == 2
    assert "app.js" in page.locator(".merge-list .merge-merged-clean").inner_text()
    assert page.locator(".perm-added code").inner_text() == "sleep.read"
    assert page.locator("pre.diff .line-add").count() >= 1
    assert fits_the_viewport(page)
    page.screenshot(path=screenshots / f"upstream-diff-{size}.png", full_page=True)

    page.get_by_role("button", name="Accept", exact=True).click()
    page.wait_for_url(re.compile(rf"/s/{fork_id}$"))
    assert "Merged: v2 has the change of" in page.locator(".flash").inner_text()
    assert page.locator(".upstream-banner").count() == 0
    assert f"merged from Water Tracker {size} v2" in page.locator(".versions").inner_text()
    page.screenshot(path=screenshots / f"upstream-accepted-{size}.png", full_page=True)

    # The person who uses the fork is asked for the added permission before updating.
    context = browser.new_context(base_url=base_url, viewport=SIZES[size])
    other = context.new_page()
    try:
        sign_in_with_token(other, user.token)
        other.goto(f"/s/{fork_id}?lang=en")
        asks = other.locator(".update-asks")
        assert "also asks for your permission" in asks.inner_text()
        assert "sleep.read" in asks.inner_text()
        assert other.get_by_role("button", name="Update to v2").count() == 1
        assert fits_the_viewport(other)
        other.screenshot(path=screenshots / f"upstream-reconsent-{size}.png")
    finally:
        context.close()
    assert not page.problems
