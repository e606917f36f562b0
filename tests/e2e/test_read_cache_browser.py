"""In a real browser, at a phone's size and a desktop's, against PostgreSQL with the read cache
on: an anonymous reader's second visit to a fork tree is answered from the cache and is the
same working page (its script draws the tree under the page's Content-Security-Policy, which a
hit carries too); once a branch is made private, the next visit no longer shows it; a fork is
drawn on its tree's next visit while an unrelated lineage's tree stays cached."""

from __future__ import annotations

import time

import pytest

from market.platform.state import app_state
from tests.e2e.conftest import serving
from tests.factories import fork, make_user, publish
from tests.integration.platform.test_read_cache import apps_with_read_cache

pytestmark = pytest.mark.browser

SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}


@pytest.fixture
def cached_url(database_url, app):
    # `app` wiped the database; this one serves it with the cache on, as gunicorn does.
    with apps_with_read_cache(database_url, 1) as (cached,), serving(cached, "sprig-cached") as url:
        yield cached, url


def _visit(page, path: str):
    response = page.goto(path)
    assert response.status == 200
    page.wait_for_selector("#tree[data-ready='1'] svg.tree")
    return response


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_a_cached_tree_is_the_same_working_page_until_a_branch_turns_private(
    browser, cached_url, screenshots, size
):
    app, url = cached_url
    writer = app.test_client()
    alice, bob = make_user(app_state(app).engine, "alice"), make_user(app_state(app).engine, "bob")
    root = publish(writer, alice, title="Water Tracker")
    fork(writer, alice, root["id"], "ounces", title="Water Tracker in Ounces")
    secret = fork(writer, bob, root["id"], "secret", title="Secret Sipping Schedule")
    context = browser.new_context(base_url=url, viewport=SIZES[size])
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    try:
        path = f"/s/{root['id']}/tree"
        first = _visit(page, path)
        drawn = page.locator("svg.tree g.node").count()
        assert drawn == 3
        deadline = time.monotonic() + 5
        while (again := _visit(page, path)).headers.get("x-sprig-cache") != "hit":
            assert time.monotonic() < deadline, "the cache never served the page"
        assert first.headers.get("x-sprig-cache") in ("miss", None)
        assert "script-src 'self'" in again.headers["content-security-policy"]
        assert page.locator("svg.tree g.node").count() == drawn
        assert page.locator(f"svg.tree g.node[data-id='{secret['id']}']").count() == 1
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=screenshots / f"tree-from-cache-{size}.png", full_page=True)

        hidden = writer.patch(
            f"/api/v1/subagents/{secret['id']}",
            json={"visibility": "private"},
            headers=bob.headers,
        )
        assert hidden.status_code == 200
        after = _visit(page, path)
        assert after.headers.get("x-sprig-cache") != "hit"
        assert page.locator(f"svg.tree g.node[data-id='{secret['id']}']").count() == 0
        assert page.locator("svg.tree g.node").count() == drawn - 1
        assert problems == []
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_a_fork_is_drawn_at_once_while_another_lineages_tree_stays_cached(
    browser, cached_url, screenshots, size
):
    """A fork changes its own lineage only: the next visit to its tree draws it, and the tree
    of an unrelated lineage is still answered from the cache."""
    app, url = cached_url
    writer = app.test_client()
    alice, bob = make_user(app_state(app).engine, "alice"), make_user(app_state(app).engine, "bob")
    water = publish(writer, alice, title="Water Tracker")
    meals = publish(writer, alice, title="Meal Planner")
    fork(writer, alice, meals["id"], "vegan", title="Vegan Meal Planner")
    context = browser.new_context(base_url=url, viewport=SIZES[size])
    page = context.new_page()
    try:
        trees = {name: f"/s/{sub['id']}/tree" for name, sub in (("water", water), ("meals", meals))}
        for path in trees.values():
            deadline = time.monotonic() + 5
            while _visit(page, path).headers.get("x-sprig-cache") != "hit":
                assert time.monotonic() < deadline, "the cache never served the page"

        made = fork(writer, bob, water["id"], "reminders", title="Water Reminders")
        after = _visit(page, trees["water"])
        assert after.headers.get("x-sprig-cache") != "hit"
        assert page.locator(f"svg.tree g.node[data-id='{made['id']}']").count() == 1
        assert page.locator("svg.tree g.node").count() == 2
        page.screenshot(path=screenshots / f"tree-fork-drawn-{size}.png", full_page=True)
        other = _visit(page, trees["meals"])
        assert other.headers.get("x-sprig-cache") == "hit"
        assert page.locator("svg.tree g.node").count() == 2
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        context.close()
