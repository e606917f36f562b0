"""End to end in headless Chromium against a live server with the demo community."""

from __future__ import annotations

import re

import pytest
from sqlmodel import func, select

from market.catalog import views as catalog_views
from market.catalog.models import SubAgent, Version
from market.identity.models import User
from market.platform.db import session_scope
from market.platform.state import app_state
from market.ranking.models import SubAgentScore
from market.usage import views as usage_views
from tests.factories import fork, make_user, publish

pytestmark = pytest.mark.browser

PAYLOAD = (
    '<img src=x onerror="window.__pwned=1;alert(1)"><script>window.__pwned=2;alert(2)</script>'
)
# Another one for the author's name: a listing that repeats its author's own name is refused
# as personal data, so the name cannot be the payload the listing carries.
NAME_PAYLOAD = '<svg onload="window.__pwned=4;alert(4)"></svg>Mallory'


def engine_of(app):
    return app_state(app).engine


def sign_in_as_demo_person(page, handle: str) -> None:
    page.goto("/signin")
    page.locator(f"button[name='demo_handle'][value='{handle}']").click()
    page.wait_for_url(re.compile(r"/$"))


def sign_in_with_token(page, token: str) -> None:
    page.goto("/signin")
    page.fill("#token", token)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(re.compile(r"/$"))


def test_browse_search_open_import_then_my_installs(live_app, page, screenshots):
    newcomer = make_user(engine_of(live_app), "newcomer", display_name="New Comer")
    sign_in_with_token(page, newcomer.token)
    assert page.locator(".card").count() >= 10
    page.screenshot(path=screenshots / "browse-phone.png")

    page.fill("#q", "water")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"q=water"))
    first = page.locator(".card-title a").first
    title = first.inner_text()
    assert "water" in (title + page.locator(".card").first.inner_text()).lower()
    first.click()
    page.wait_for_selector("h1")
    assert page.locator("h1").inner_text() == title
    page.locator("iframe[sandbox~='allow-scripts']").wait_for()
    page.screenshot(path=screenshots / "subagent-phone.png", full_page=True)

    page.get_by_role("button", name="Import").click()
    page.wait_for_selector(".installed")
    assert "Imported into your agent" in page.locator(".flashes").inner_text()

    page.get_by_role("link", name="My installs").click()
    page.wait_for_url(re.compile(r"/me/installs"))
    assert title in page.locator("#installs").inner_text()
    page.screenshot(path=screenshots / "my-installs-phone.png")
    assert page.problems == []


def test_tree_of_a_deep_lineage_renders_and_opens_a_node(live_app, page, screenshots):
    with session_scope(engine_of(live_app)) as session:
        deepest = session.exec(
            select(SubAgent)
            .where(SubAgent.visibility == "public", SubAgent.status == "active")
            .order_by(SubAgent.depth.desc(), SubAgent.id)
        ).first()
        root_id = deepest.root_id
        # The ranking's verdict for this lineage (the demo runs the ranking when it loads);
        # where it named no better branch, say the deepest node is the best one.
        score = session.get(SubAgentScore, root_id)
        if score is None:
            score = SubAgentScore(
                subagent_id=root_id, quality=0.2, quality_sd=0.1, display=0.0, branch_value=1.0
            )
        if score.best_descendant_id in (None, root_id):
            score.best_descendant_id = deepest.id
            session.add(score)
        best = session.get(SubAgent, score.best_descendant_id)
        deep_id, depth = best.id, best.depth
    page.goto(f"/s/{root_id}/tree")
    page.wait_for_selector("#tree[data-ready='1'] svg.tree")
    nodes = page.locator("svg.tree g.node")
    assert nodes.count() > depth
    # The whole path down to the best branch is drawn and highlighted.
    assert page.locator("svg.tree g.node.best").count() == depth
    assert page.locator(f"svg.tree g.node.best[data-id='{deep_id}']").count() == 1
    assert page.locator("svg.tree path.links-best").get_attribute("d")
    page.screenshot(path=screenshots / "tree-phone.png", full_page=True)

    more = page.locator("svg.tree g.more").first
    if more.count():
        before = nodes.count()
        more.click()
        page.wait_for_function(
            "n => document.querySelectorAll('svg.tree g.node').length > n", arg=before
        )

    target = page.locator(f"svg.tree g.node[data-id='{deep_id}'] a")
    target.click()
    page.wait_for_url(re.compile(rf"/s/{deep_id}$"))
    assert page.locator("h1").count() == 1
    assert page.problems == []


def test_dashboard_renders_charts_from_the_demo(live_app, page, screenshots):
    with session_scope(engine_of(live_app)) as session:
        creator = session.exec(
            select(User.handle)
            .join(SubAgent, SubAgent.author_id == User.id)
            .where(User.kind == "person")
            .group_by(User.id)
            .order_by(func.sum(SubAgent.install_count).desc(), User.id)
        ).first()
    sign_in_as_demo_person(page, creator)
    page.set_viewport_size({"width": 1200, "height": 900})
    page.get_by_role("link", name="Dashboard").click()
    page.wait_for_url(re.compile(rf"/creators/{re.escape(creator)}"))
    assert page.locator("#chart-installs rect.bar").count() == 30
    heights = page.locator("#chart-installs rect.bar").evaluate_all(
        "bars => bars.map(b => Number(b.getAttribute('height')))"
    )
    assert sum(heights) > 0
    assert page.locator("#chart-active polyline.series").get_attribute("points")
    assert page.locator("#chart-retention polyline.series-average").count() == 1
    assert page.locator("#chart-ratings rect.bar").count() == 5
    assert page.locator("svg.spark polyline").count() >= 1
    page.screenshot(path=screenshots / "dashboard-desktop.png", full_page=True)
    page.get_by_role("link", name="90 days").click()
    page.wait_for_url(re.compile(r"window=90"))
    assert page.locator("#chart-installs rect.bar").count() == 90
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    assert download.value.suggested_filename.endswith(".csv")
    assert page.problems == []


def test_a_creators_table_comes_a_page_at_a_time_on_a_phone(
    live_app, page, screenshots, monkeypatch
):
    """The dashboard's table a few rows at a time (fewer per page than the demo's busiest
    creator has sub-agents): the range, the next rows, and back, at phone width."""
    with session_scope(engine_of(live_app)) as session:
        creator, count = session.exec(
            select(User.handle, func.count(SubAgent.id))
            .join(SubAgent, SubAgent.author_id == User.id)
            .where(User.kind == "person")
            .group_by(User.id)
            .order_by(func.count(SubAgent.id).desc(), User.id)
        ).first()
    assert count >= 3, "the demo's busiest creator has a few sub-agents"
    monkeypatch.setattr(usage_views, "TABLE_ROWS", 2)
    sign_in_as_demo_person(page, creator)
    page.goto(f"/creators/{creator}")
    rows = page.locator("table.data-table tbody tr")
    assert rows.count() == 2
    assert page.locator("#table-range").inner_text().startswith(f"1 to 2 of {count}")
    first_rows = rows.locator("th a").all_inner_texts()
    page.get_by_role("link", name="Next 2", exact=False).click()
    page.wait_for_url(re.compile(r"from=2"))
    assert page.locator("#table-range").inner_text().startswith("3 to ")
    assert not set(rows.locator("th a").all_inner_texts()) & set(first_rows)
    # The table scrolls inside its frame; the page itself never scrolls sideways.
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=screenshots / "dashboard-table-pages-phone.png", full_page=True)
    page.get_by_role("link", name="Previous 2").click()
    page.wait_for_url(re.compile(rf"/creators/{re.escape(creator)}\?window=30$"))
    assert rows.locator("th a").all_inner_texts() == first_rows
    assert page.problems == []


def test_a_sub_agents_older_versions_one_page_back_and_to_the_newest_on_a_phone(
    live_app, page, screenshots, monkeypatch
):
    """A sub-agent page lists its newest versions; "Older versions" and "Newest versions"
    move through the rest (one at a time here: the demo's sub-agents have a few)."""
    with session_scope(engine_of(live_app)) as session:
        subagent_id, count = session.exec(
            select(Version.subagent_id, func.count(Version.id))
            .join(SubAgent, SubAgent.id == Version.subagent_id)
            .where(SubAgent.visibility == "public", SubAgent.status == "active")
            .group_by(Version.subagent_id)
            .order_by(func.count(Version.id).desc(), Version.subagent_id)
        ).first()
    assert count >= 2, "a demo sub-agent has more than one version"
    monkeypatch.setattr(catalog_views, "VERSIONS_SHOWN", 1)
    page.goto(f"/s/{subagent_id}")
    listed = page.locator("ul.versions > li strong")
    assert listed.all_inner_texts() == [f"v{count}"]
    page.get_by_role("link", name="Older versions").click()
    page.wait_for_url(re.compile(rf"versions_before={count}#versions-h$"))
    assert listed.all_inner_texts() == [f"v{count - 1}"]
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=screenshots / "versions-older-phone.png")
    page.get_by_role("link", name="Newest versions").click()
    page.wait_for_url(re.compile(rf"/s/{subagent_id}#versions-h$"))
    assert listed.all_inner_texts() == [f"v{count}"]
    assert page.problems == []


def test_a_deep_lineages_breadcrumb_names_its_root_and_last_forks_and_leads_to_its_tree(
    live_app, page, screenshots
):
    """Seven forks deep: the breadcrumb names the root and the last three ancestors, and
    "3 more forks" opens the fork tree; at phone width it wraps inside the page."""
    engine = engine_of(live_app)
    makers = [make_user(engine), make_user(engine)]
    client = live_app.test_client()
    chain = [publish(client, makers[0], title="Deep Lineage Root")]
    for n in range(1, 8):
        chain.append(
            fork(client, makers[n % 2], chain[-1]["id"], f"deep{n}", title=f"Deep Lineage {n}")
        )
    crumbs = page.locator("nav.crumbs li")
    for size, viewport in (("phone", None), ("desktop", {"width": 1280, "height": 900})):
        if viewport:
            page.set_viewport_size(viewport)
        page.goto(f"/s/{chain[-1]['id']}")
        assert crumbs.all_inner_texts() == [
            "Deep Lineage Root",
            "3 more forks",
            "Deep Lineage 4",
            "Deep Lineage 5",
            "Deep Lineage 6",
            "Deep Lineage 7",
        ]
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        for item in crumbs.all():
            box = item.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"]
        page.locator("nav.crumbs").screenshot(path=screenshots / f"crumbs-deep-{size}.png")
    page.get_by_role("link", name="3 more forks").click()
    page.wait_for_url(re.compile(rf"/s/{chain[-1]['id']}/tree$"))
    assert page.locator("h1").inner_text().startswith("Fork tree of")
    page.go_back()
    page.get_by_role("link", name="Deep Lineage Root").click()
    page.wait_for_url(re.compile(rf"/s/{chain[0]['id']}$"))
    assert page.locator("nav.crumbs").count() == 0  # a root has no ancestors
    assert page.problems == []


def test_diff_view_shows_an_added_permission(live_app, page, screenshots):
    with session_scope(engine_of(live_app)) as session:
        found = None
        forks = session.exec(
            select(SubAgent).where(
                SubAgent.parent_version_id.is_not(None), SubAgent.visibility == "public"
            )
        ).all()
        for child in forks:
            parent = session.get(SubAgent, child.parent_id)
            if parent.visibility != "public":
                continue
            mine = set(session.get(Version, child.latest_version_id).manifest.get("scopes", []))
            theirs = set(session.get(Version, child.parent_version_id).manifest.get("scopes", []))
            if mine - theirs:
                found = (child.id, sorted(mine - theirs)[0])
                break
    assert found, "the demo has forks that ask for more personal data"
    subagent_id, scope = found
    page.goto(f"/s/{subagent_id}/diff")
    added = page.locator(".perm-added", has_text=scope)
    assert added.is_visible()
    assert "Added" in added.inner_text()
    page.screenshot(path=screenshots / "diff-phone.png", full_page=True)
    assert page.problems == []


def test_injected_scripts_never_run(live_app, page, screenshots):
    engine = engine_of(live_app)
    mallory = make_user(engine, "mallory", display_name=NAME_PAYLOAD)
    client = live_app.test_client()
    bundle = {
        "manifest": {"name": "Evil", "entry": "index.html", "scopes": [], "hosts": []},
        "files": {
            "index.html": "<!doctype html><title>x</title><script src=app.js></script>",
            # Runs only inside the sandbox: it must reach neither the page nor its cookies.
            "app.js": "try { parent.__pwned = 3; } catch (e) {}\n"
            "try { top.document.body.innerHTML = 'owned'; } catch (e) {}\n"
            "try { alert('from the preview'); } catch (e) {}\n"
            "document.title = String(document.cookie);\n",
        },
    }
    created = client.post(
        "/api/v1/subagents",
        json={
            "title": "Water " + PAYLOAD[:100],
            "summary": PAYLOAD,
            "story": "</blockquote>" + PAYLOAD,
            "category": "hydration",
            "tags": ["water"],
            "bundle": bundle,
        },
        headers=mallory.headers,
    )
    assert created.status_code == 201, created.get_json()
    evil = created.get_json()
    # Authors never rate their own: an accomplice with the same hostile name installs and rates.
    accomplice = make_user(engine, "mallory-friend", display_name=NAME_PAYLOAD)
    installed = client.post(f"/api/v1/subagents/{evil['id']}/install", headers=accomplice.headers)
    assert installed.status_code == 201, installed.get_json()
    rated = client.post(
        "/api/v1/feedback",
        json={"version_id": evil["latest_version"]["id"], "stars": 1, "comment": PAYLOAD},
        headers=accomplice.headers,
    )
    assert rated.status_code == 201, rated.get_json()

    sign_in_with_token(page, mallory.token)
    for path in ["/?sort=new", "/?q=water", f"/s/{evil['id']}", f"/s/{evil['id']}/tree"]:
        page.goto(path)
        page.wait_for_load_state("networkidle")
        assert page.evaluate("typeof window.__pwned") == "undefined", path
        assert page.locator("body").inner_text().strip() != "owned", path
        # Its long unbroken runs wrap: the phone's page is no wider than the phone.
        assert page.evaluate(
            "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        ), path
    page.goto(f"/s/{evil['id']}")
    frame = page.frame_locator("iframe[sandbox~='allow-scripts']")
    frame.locator("title").wait_for(state="attached")
    page.wait_for_timeout(300)  # the preview's script has run by now
    assert page.evaluate("typeof window.__pwned") == "undefined"
    # The comment and title are shown as text.
    assert "window.__pwned=2" in page.locator(".comments").inner_text()
    assert "window.__pwned=4" in page.locator("body").inner_text()  # the author's name
    page.screenshot(path=screenshots / "escaped-payload-phone.png", full_page=True)
    assert [p for p in page.problems if p.startswith("dialog")] == []
