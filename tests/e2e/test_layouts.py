"""Every page the web serves, laid out in Chromium on a phone (390×844, a mobile viewport that
honours the viewport meta) and on a desktop: nothing wider than the screen, dashboard axis
labels readable, its table scrolling inside its card, retention cohorts told apart, fork-tree
labels fitted to the frame with an ellipsis, icons that exist. Screenshots of each page at both
sizes: ``page-<name>-{phone,desktop}.png``."""

from __future__ import annotations

import re

import pytest
from sqlmodel import func, select

from market.catalog.models import SubAgent
from market.identity.models import User
from market.platform.db import session_scope
from market.platform.state import app_state

pytestmark = pytest.mark.browser

SIZES = {
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
    "desktop": {"viewport": {"width": 1280, "height": 900}},
}
SMALLEST_LABEL_PX = 10


@pytest.fixture(scope="module")
def places(live_app) -> dict:
    """The demo's pages worth looking at: its deepest fork (the tree with the longest labels),
    a Chinese listing, a fork with a diff, and the creator with the most installs."""
    with session_scope(app_state(live_app).engine) as session:
        public = (SubAgent.visibility == "public", SubAgent.status == "active")
        deepest = session.exec(
            select(SubAgent.id).where(*public).order_by(SubAgent.depth.desc(), SubAgent.id)
        ).first()
        chinese = session.exec(
            select(SubAgent.id)
            .where(*public, SubAgent.title.contains("汉字"))
            .order_by(SubAgent.id)
        ).first()
        fork = session.exec(
            select(SubAgent.id)
            .where(*public, SubAgent.parent_version_id.is_not(None))
            .order_by(SubAgent.id)
        ).first()
        creator = session.exec(
            select(User.handle)
            .join(SubAgent, SubAgent.author_id == User.id)
            .where(User.kind == "person")
            .group_by(User.id)
            .order_by(func.sum(SubAgent.install_count).desc(), User.id)
        ).first()
    return {"deepest": deepest, "chinese": chinese, "fork": fork, "creator": creator}


@pytest.fixture(params=list(SIZES))
def sized(request, browser, base_url):
    size = request.param
    context = browser.new_context(base_url=base_url, device_scale_factor=1, **SIZES[size])
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.problems = problems
    yield size, page
    context.close()


def fits_the_screen(page, name: str, width: int) -> None:
    inner, scroll = page.evaluate("[window.innerWidth, document.documentElement.scrollWidth]")
    # A phone lays a page without a viewport meta out 980 px wide: the page must say its width.
    assert inner == width, f"{name}: laid out {inner} px wide on a {width} px screen"
    assert scroll <= inner, f"{name}: {scroll} px wide on a {inner} px screen"


def icon_exists(page, name: str) -> None:
    href = page.locator("link[rel='icon']").first.get_attribute("href")
    assert href, f"{name}: no icon"
    assert page.request.get(href).status == 200, f"{name}: icon {href} is missing"


def visit(
    page, screenshots, size: str, name: str, path: str, status: int = 200, ready: str = "main"
) -> None:
    response = page.goto(path)
    assert response.status == status, f"{name}: {response.status}"
    page.wait_for_load_state("networkidle")
    page.wait_for_selector(ready)
    fits_the_screen(page, name, SIZES[size]["viewport"]["width"])
    icon_exists(page, name)
    page.screenshot(path=screenshots / f"page-{name}-{size}.png", full_page=True)


def check_dashboard(page, size: str) -> None:
    smallest = page.evaluate(
        """() => Math.min(...[...document.querySelectorAll('.chart svg')].flatMap(svg => {
            const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
            return [...svg.querySelectorAll('text.tick')].map(
              t => parseFloat(getComputedStyle(t).fontSize) * scale);
        }))"""
    )
    assert smallest >= SMALLEST_LABEL_PX, f"{size}: axis labels {smallest:.1f} px"
    heights = page.locator(".chart text.tick").evaluate_all(
        "ticks => ticks.map(t => t.getBoundingClientRect().height)"
    )
    assert heights and min(heights) >= SMALLEST_LABEL_PX

    table = page.evaluate(
        """() => {
          const wrap = document.querySelector('.table-wrap');
          const box = wrap.getBoundingClientRect();
          const before = wrap.scrollLeft;
          wrap.scrollLeft = 120;
          const style = getComputedStyle(wrap);
          return {overflow: style.overflowX, border: style.borderTopWidth,
                  right: box.right, inner: window.innerWidth,
                  wide: wrap.scrollWidth > wrap.clientWidth, scrolled: wrap.scrollLeft - before};
        }"""
    )
    assert table["overflow"] == "auto" and table["border"] != "0px"  # a card that scrolls
    assert table["right"] <= table["inner"]
    if size == "phone":
        assert table["wide"] and table["scrolled"] > 0  # the table scrolls inside its card

    cohorts = page.locator("#chart-retention polyline[class*='series-cohort-']")
    if cohorts.count():
        colours = cohorts.evaluate_all("lines => lines.map(l => getComputedStyle(l).stroke)")
        assert len(set(colours)) == len(colours), colours
        keys = page.locator("#chart-retention .legend .key[class*='key-cohort-']")
        assert keys.count() == len(colours)
        swatches = keys.evaluate_all(
            "keys => keys.map(k => getComputedStyle(k, '::before').backgroundColor)"
        )
        assert sorted(swatches) == sorted(colours)


def check_tree(page, size: str) -> None:
    labels = page.locator("svg.tree g.node a").evaluate_all(
        """links => links.map(a => {
          const text = a.querySelector('text'), frame = document.getElementById('tree');
          return {shown: text.textContent, title: a.querySelector('title').textContent,
                  right: text.getBoundingClientRect().right,
                  edge: frame.getBoundingClientRect().left + frame.clientWidth};
        })"""
    )
    assert labels
    for label in labels:
        if label["shown"] != label["title"]:
            assert label["shown"].endswith("…"), label
            assert label["title"].startswith(label["shown"][:-1].rstrip()), label
        assert label["right"] <= label["edge"] + 1, label
    cut = [label for label in labels if label["shown"] != label["title"]]
    if size == "phone":
        assert cut, "the deepest lineage's long titles fit a phone uncut?"
    else:
        assert not cut, f"cut on a desktop with room to spare: {cut[:3]}"


def test_every_page_fits_the_screen(sized, places, screenshots):
    size, page = sized
    visit(page, screenshots, size, "signin", "/signin")
    page.locator(f"button[name='demo_handle'][value='{places['creator']}']").click()
    page.wait_for_url(re.compile(r"/$"))

    visit(page, screenshots, size, "browse", "/")
    visit(page, screenshots, size, "search", "/?q=water")
    visit(page, screenshots, size, "subagent", f"/s/{places['chinese']}")
    tree = f"/s/{places['deepest']}/tree"
    visit(page, screenshots, size, "tree", tree, ready="#tree[data-ready='1'] svg.tree")
    check_tree(page, size)
    visit(page, screenshots, size, "diff", f"/s/{places['fork']}/diff")
    visit(page, screenshots, size, "dashboard", f"/creators/{places['creator']}")
    check_dashboard(page, size)
    visit(page, screenshots, size, "ranking", "/ranking")
    assert page.locator(".formulas h2").count() >= 5
    visit(page, screenshots, size, "installs", "/me/installs")
    visit(page, screenshots, size, "error", "/s/999999999", status=404)
    visit(page, screenshots, size, "api-docs", "/api/v1/docs", ready=".swagger-ui .opblock")
    assert page.problems == []
