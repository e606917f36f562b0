"""The switch plan in headless Chromium, on a phone and a desktop: a person with a demo app in
their agent follows the better-branch banner to a branch that changed the app's choices (a
piano timer made a guitar one) and reads, per field, what their data becomes, before anything
happens; a private branch of someone else is a 404 page."""

from __future__ import annotations

import re

import pytest
from sqlmodel import select

from market.catalog.models import SubAgent, Version
from market.platform.db import session_scope
from market.ranking.models import SubAgentScore
from tests.e2e.test_browser import engine_of, sign_in_with_token
from tests.e2e.test_families_browser import SIZES, fits_the_width, inside_the_width
from tests.factories import make_user
from tests.functional.catalog.test_data_switch import fork_tea

pytestmark = pytest.mark.browser


def a_fork_that_migrates(engine) -> tuple[int, int]:
    """(parent, fork) of a public demo fork whose first version declares a data_migration,
    made the parent's better branch."""
    with session_scope(engine) as session:
        rows = session.exec(
            select(SubAgent, Version)
            .join(Version, Version.subagent_id == SubAgent.id)
            .where(
                Version.number == 1,
                SubAgent.parent_id.is_not(None),
                SubAgent.visibility == "public",
                SubAgent.status == "active",
            )
            .order_by(SubAgent.id)
        )
        fork = next(s for s, v in rows if "data_migration" in v.manifest)
        parent_id, fork_id = fork.parent_id, fork.id
        score = session.get(SubAgentScore, parent_id) or SubAgentScore(
            subagent_id=parent_id, quality=0.1, quality_sd=0.1, display=0.0, branch_value=1.0
        )
        score.best_descendant_id, score.p_descendant_better = fork_id, 0.9
        session.add(score)
    return parent_id, fork_id


@pytest.mark.parametrize("size", SIZES)
def test_the_banner_leads_to_the_plan_before_any_switch(live_app, page, screenshots, size):
    engine = engine_of(live_app)
    parent_id, fork_id = a_fork_that_migrates(engine)
    person = make_user(engine, f"switcher-{size}", display_name="Sam Switcher")
    page.set_viewport_size(SIZES[size])
    sign_in_with_token(page, person.token)
    page.goto(f"/s/{parent_id}?lang=en")
    page.get_by_role("button", name="Import").click()
    page.wait_for_selector(".installed")
    banner = page.locator(".better")
    link = banner.get_by_role("link", name="What happens to your data if you switch")
    assert inside_the_width(page, link)
    page.screenshot(path=screenshots / f"switch-banner-{size}.png", full_page=True)

    link.click()
    page.wait_for_url(re.compile(rf"/s/{parent_id}/switch/{fork_id}$"))
    assert page.locator("h1").inner_text().startswith("Your data if you switch to")
    assert "the version in your agent" in page.locator(".page-head").inner_text()
    rows = page.locator("section[aria-labelledby='fields-h'] .plan-list li")
    assert rows.count() >= 2
    verdicts = page.locator("section[aria-labelledby='fields-h'] .verdict").all_inner_texts()
    # The branch replaced the parent's choices: the values it has no counterpart for are
    # left out, which the plan says before anything happens.
    assert "at risk" in verdicts and set(verdicts) <= {
        "carried over",
        "transformed",
        "at risk",
        "lost",
    }
    assert "would not come along" in page.locator(".switch-summary").inner_text()
    for i in range(rows.count()):
        assert inside_the_width(page, rows.nth(i))
    assert fits_the_width(page)
    page.screenshot(path=screenshots / f"switch-plan-{size}.png", full_page=True)
    # Nothing happened yet: the parent is still the one in the agent.
    page.goto(f"/s/{parent_id}")
    assert page.locator(".installed").count() == 1

    page.goto(f"/s/{parent_id}/switch/{fork_id}?lang=ja")
    assert "保存している各項目" in page.locator("main").inner_text()
    page.screenshot(path=screenshots / f"switch-plan-ja-{size}.png", full_page=True)

    page.goto(f"/s/{parent_id}/switch/{fork_id}?lang=en")
    button = page.locator(f"form[action$='/switch/{fork_id}'] button")
    assert "leave behind what is not carried over" in button.inner_text()
    assert inside_the_width(page, button)
    button.click()
    page.wait_for_url(re.compile(rf"/s/{fork_id}$"))
    assert page.locator(".installed").count() == 1
    assert "Switched to" in page.locator(".flashes").inner_text()
    assert page.problems == []


def test_a_private_branch_has_no_plan_page(live_app, page):
    engine = engine_of(live_app)
    parent_id, _fork_id = a_fork_that_migrates(engine)
    owner = make_user(engine, "branch-owner")
    with session_scope(engine) as session:
        parent = session.get(SubAgent, parent_id)
        schema = session.get(Version, parent.latest_version_id).manifest["data_schema"]
    secret = fork_tea(
        live_app.test_client(), owner, parent_id, "secret", schema, visibility="private"
    )
    assert secret.status_code == 201, secret.get_json()
    stranger = make_user(engine, "stranger-of-branches")
    sign_in_with_token(page, stranger.token)
    response = page.goto(f"/s/{parent_id}/switch/{secret.get_json()['id']}?lang=en")
    assert response.status == 404
    assert "Tea secret" not in page.content()
