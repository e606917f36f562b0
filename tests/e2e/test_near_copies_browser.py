"""In a real browser, at a phone's size and a desktop's: someone publishes a renamed copy of a
demo app; its page offers them to publish it as a fork of the original (only to them, in
their language), accepting makes it one, declining another copy sends it to the moderators,
whose page shows the evidence."""

from __future__ import annotations

import re

import pytest
from sqlmodel import select

from market.catalog import services as catalog
from market.catalog.models import NearCopySignature, SubAgent
from market.platform.db import session_scope
from market.platform.state import app_state
from tests.factories import make_user

pytestmark = pytest.mark.browser

SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}


def fits_the_viewport(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def sign_in_with_token(page, token: str) -> None:
    page.goto("/signin?lang=en")
    page.fill("#token", token)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(re.compile(r"/(\?.*)?$"))


def signed_root(app, rank: int) -> tuple[int, str, dict]:
    """The ``rank``-th most installed public demo root with a signature: (id, title, its
    bundle as JSON)."""
    with session_scope(app_state(app).engine) as session:
        root = session.exec(
            select(SubAgent)
            .join(NearCopySignature, NearCopySignature.subagent_id == SubAgent.id)
            .where(
                SubAgent.parent_id.is_(None),
                SubAgent.visibility == "public",
                SubAgent.status == "active",
                NearCopySignature.signature.is_not(None),
            )
            .order_by(SubAgent.install_count.desc(), SubAgent.id)
            .offset(rank)
        ).first()
        bundle = catalog.load_bundle(session, catalog.get_version(session, root, None))
        return root.id, root.title, {"manifest": dict(bundle.manifest), "files": bundle.files}


def publish_copy(app, actor, original: dict, title: str, *, renamed: bool) -> dict:
    """The original under a new title; ``renamed``: also in its manifest and wherever its
    files show its name (else its bytes as they are)."""
    copied = original
    if renamed:
        old = original["manifest"]["name"]
        files = {path: text.replace(old, title) for path, text in original["files"].items()}
        copied = {"manifest": {**original["manifest"], "name": title}, "files": files}
    response = app.test_client().post(
        "/api/v1/subagents",
        json={"title": title, "category": "health", "bundle": copied},
        headers=actor.headers,
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_offer_accept_decline_and_the_moderators_evidence(live_app, page, screenshots, size):
    page.set_viewport_size(SIZES[size])
    engine = app_state(live_app).engine
    copier = make_user(engine, f"copier-{size}", display_name="Copy Cat")
    moderator = make_user(engine, f"moderator-{size}", role="moderator")
    # Each size copies its own original: the other size's accepted copy is a fork of its own.
    original_id, original_title, original = signed_root(live_app, list(SIZES).index(size))
    accepted = publish_copy(live_app, copier, original, f"Borrowed Tracker {size}", renamed=True)
    declined = publish_copy(live_app, copier, original, f"Taken As Is {size}", renamed=False)
    assert [o["id"] for o in accepted["near_copies"]][:1] == [original_id]
    assert declined["near_copies"][0]["similarity"] == 1.0

    sign_in_with_token(page, copier.token)
    page.goto(f"/s/{accepted['id']}?lang=en")
    offer = page.locator(".near-copy").first
    assert f"This looks like {original_title} by " in offer.inner_text()
    assert fits_the_viewport(page)
    page.screenshot(path=screenshots / f"near-copy-offer-{size}.png", full_page=True)
    page.goto(f"/s/{accepted['id']}?lang=zh")
    assert "要作为它的派生发布吗" in page.locator(".near-copy").first.inner_text()
    page.goto(f"/s/{accepted['id']}?lang=en")
    page.locator(".near-copy").first.get_by_role("button", name="Accept: publish as a fork").click()
    page.wait_for_load_state()
    assert f"Published as a fork of “{original_title}”." in page.locator(".flashes").inner_text()
    assert original_title in page.locator(".crumbs").inner_text()
    assert page.locator(".near-copy").count() == 0
    page.screenshot(path=screenshots / f"near-copy-accepted-{size}.png", full_page=True)

    page.goto(f"/s/{declined['id']}?lang=en")
    page.get_by_role("button", name="Decline: it is my own").click()
    page.wait_for_load_state()
    assert "Kept as your own sub-agent." in page.locator(".flashes").inner_text()
    assert page.locator(".near-copy").count() == 0

    # Another person sees no offer on the copy's page, and no Reports link.
    page.context.clear_cookies()
    sign_in_with_token(page, make_user(engine, f"stranger-{size}").token)
    page.goto(f"/s/{declined['id']}?lang=en")
    assert page.locator(".near-copy").count() == 0
    assert page.get_by_role("link", name="Reports").count() == 0
    assert page.goto("/moderation/reports?lang=en").status == 403

    page.context.clear_cookies()
    sign_in_with_token(page, moderator.token)
    page.goto("/?lang=en")
    page.get_by_role("link", name="Reports").click()
    page.wait_for_url(re.compile(r"/moderation/reports"))
    report = page.locator(".report", has_text=f"Taken As Is {size}")
    assert report.count() == 1
    assert f"Copies {original_title}:" in report.inner_text()
    assert report.locator("table.evidence tbody tr").count() >= 1
    assert fits_the_viewport(page)
    page.screenshot(path=screenshots / f"near-copy-reports-{size}.png", full_page=True)
