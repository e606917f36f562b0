"""In a real browser, at a phone's size and a desktop's: a demo person rates and comments on
something they installed and sees it on the page, uninstalls it and sees it leave My installs,
and follows their fork requests from open to fulfilled."""

from __future__ import annotations

import re

import pytest
from sqlmodel import select

from market.catalog.models import ForkRequest, Install, SubAgent
from market.identity.models import User
from market.platform.db import session_scope
from market.platform.state import app_state
from tests.factories import bundle, make_user

pytestmark = pytest.mark.browser

SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}


def fits_the_viewport(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def sign_in_as_an_importer(page, which: int) -> str:
    """Sign in through the demo picker as one of the people who only import (the picker lists
    them after the creators); ``which`` counts from the last, so each size has its own."""
    page.goto("/signin")
    handle = page.locator(".demo-picker button[name='demo_handle']").nth(-1 - which)
    chosen = handle.get_attribute("value")
    handle.click()
    page.wait_for_url(re.compile(r"/$"))
    return chosen


def installed_by(app, handle: str, count: int) -> list[tuple[int, str]]:
    """The person's newest installs of other people's listed sub-agents, as My installs
    orders them: (id, title)."""
    with session_scope(app_state(app).engine) as session:
        user = session.exec(select(User).where(User.handle == handle)).one()
        rows = session.exec(
            select(SubAgent.id, SubAgent.title)
            .join(Install, Install.subagent_id == SubAgent.id)
            .where(
                Install.user_id == user.id,
                Install.active,
                SubAgent.author_id != user.id,
                SubAgent.visibility == "public",
                SubAgent.status == "active",
            )
            .order_by(Install.id.desc())
            .limit(count)
        ).all()
    assert len(rows) == count, f"{handle} has fewer than {count} installs"
    return [(row[0], row[1]) for row in rows]


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_rate_uninstall_and_my_fork_requests(live_app, page, screenshots, size):
    page.set_viewport_size(SIZES[size])
    handle = sign_in_as_an_importer(page, ["phone", "desktop"].index(size))
    # The words this test reads are the English chrome; the person's locale may be another.
    page.goto("/?lang=en")
    (rated_id, rated_title), (asked_id, asked_title) = installed_by(live_app, handle, 2)

    # Rate and comment on something in their agent.
    page.goto(f"/s/{rated_id}")
    assert page.locator(".installed").count() == 1
    stars = page.get_by_role("group", name="Stars")
    assert stars.get_by_role("radio").count() == 5
    if size == "phone":  # whole pills to tap, not 13 px radio buttons
        box = page.locator(".star-choices label").first.bounding_box()
        assert box["height"] >= 44 and box["width"] >= 44
    comment = f"Rated from the {size}: keeps my evenings simple."
    stars.get_by_role("radio", name="4 stars").check()  # the pill is the radio itself
    page.get_by_role("checkbox", name="love it").check()
    page.fill("#rate-comment", comment)
    page.locator("#rate button[type=submit]").click()
    page.wait_for_url(re.compile(rf"/s/{rated_id}#rate$"))
    assert "your rating" in page.locator(".flashes").inner_text().lower()
    assert comment in page.locator(".comments").inner_text()
    assert page.get_by_role("radio", name="4 stars").is_checked()
    assert page.get_by_role("checkbox", name="love it").is_checked()
    assert page.locator("#rate-comment").input_value() == comment
    assert page.locator("#rate button[type=submit]").inner_text() == "Update my rating"
    assert fits_the_viewport(page)
    page.evaluate("document.getElementById('ratings-h').scrollIntoView()")
    page.screenshot(path=screenshots / f"rate-{size}.png")

    # Uninstall it from My installs, and see it leave.
    page.get_by_role("link", name="My installs").click()
    page.wait_for_url(re.compile(r"/me/installs$"))
    listed = page.locator(f"#installs a[href='/s/{rated_id}']")
    assert listed.count() == 1
    page.get_by_role("button", name=f"Uninstall {rated_title}", exact=True).click()
    page.wait_for_url(re.compile(r"/me/installs$"))
    page.wait_for_selector(".flashes")
    assert f"Removed “{rated_title}” from your agent." in page.locator(".flashes").inner_text()
    assert listed.count() == 0
    assert fits_the_viewport(page)
    page.screenshot(path=screenshots / f"installs-{size}.png", full_page=size == "desktop")

    # Ask for a version of their own of another install; the coding agent fulfils it.
    page.goto(f"/s/{asked_id}")
    page.get_by_text("Customize…").click()
    wish = f"bigger buttons for my {size}"
    page.fill("#customize-text", wish)
    page.get_by_role("button", name="Ask for my version").click()
    page.wait_for_selector(".flashes")
    page.goto(f"/s/{rated_id}")
    page.get_by_text("Customize…").click()
    open_wish = f"a weekly summary on my {size}"
    page.fill("#customize-text", open_wish)
    page.get_by_role("button", name="Ask for my version").click()
    page.wait_for_selector(".flashes")
    fork_id = fulfil(live_app, handle, asked_id, wish, f"{asked_title}, bigger buttons")

    page.get_by_role("link", name="My fork requests").click()
    page.wait_for_url(re.compile(r"/me/fork-requests$"))
    mine = page.locator("#fork-requests")
    answered = mine.locator("li", has_text=wish)
    assert answered.locator(".request-fulfilled").inner_text() == "Fulfilled"
    made = answered.get_by_role("link", name=f"{asked_title}, bigger buttons")
    assert made.get_attribute("href") == f"/s/{fork_id}"
    waiting = mine.locator("li", has_text=open_wish)
    assert waiting.locator(".request-open").inner_text() == "Open"
    assert fits_the_viewport(page)
    page.screenshot(path=screenshots / f"fork-requests-{size}.png")
    made.click()
    page.wait_for_url(re.compile(rf"/s/{fork_id}$"))
    assert page.locator("h1").inner_text() == f"{asked_title}, bigger buttons"
    assert page.problems == []


def fulfil(app, handle: str, parent_id: int, wish: str, title: str) -> int:
    """What the coding agent does with an open request: fork the sub-agent for whoever asked,
    naming the request, through the API."""
    engine = app_state(app).engine
    coder = make_user(
        engine, f"agent-for-{handle}"[:40], kind="service", scopes=["publish:on-behalf"]
    )
    with session_scope(engine) as session:
        request_id = session.exec(
            select(ForkRequest.id)
            .join(User, User.id == ForkRequest.requester_id)
            .where(User.handle == handle, ForkRequest.text == wish, ForkRequest.status == "open")
        ).one()
    response = app.test_client().post(
        f"/api/v1/subagents/{parent_id}/forks",
        json={
            "title": title,
            "fork_request": wish,
            "fork_request_id": request_id,
            "on_behalf_of": handle,
            "bundle": bundle(f"bigger buttons {handle}"),
        },
        headers=coder.headers,
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]
