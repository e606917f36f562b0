"""In a real browser, on a phone and a desktop: "Try it" saves what is typed (the preview's
forms run their app's handlers inside the sandbox), nothing a form submits leaves the frame,
the frame still cannot reach the page, and a sub-agent that fetches data from the network
says in plain words that its preview runs offline."""

from __future__ import annotations

import pytest
from sqlmodel import select

from market.catalog.models import SubAgent
from market.platform.db import session_scope
from market.platform.state import app_state
from tests.factories import listing, make_user

pytestmark = pytest.mark.browser

VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
FRAME = "section.preview iframe"

# Its first form is handled in the frame and cancelled; the second has no handler and posts
# to this site at the top, the third submits the frame to itself. None of them may be sent.
LEAKY_FORMS_BUNDLE = {
    "manifest": {"name": "Forms", "entry": "index.html", "scopes": [], "hosts": []},
    "files": {
        "index.html": "<!doctype html><title>Forms</title><body>"
        '<form id="kept"><input id="word" value="kept"><button id="keep">Keep</button></form>'
        '<form id="away" method="post" action="/leaked-by-form" target="_top">'
        '<input name="note" value="private words"><button id="leak">Leak</button></form>'
        '<form id="self"><input name="again" value="1"><button id="reload">Again</button></form>'
        '<ul id="log"></ul><script src="app.js"></script>',
        "app.js": "document.getElementById('kept').addEventListener('submit', (ev) => {\n"
        "  ev.preventDefault();\n"
        "  try { parent.__pwned = 5; } catch (e) {}\n"
        "  const li = document.createElement('li');\n"
        "  li.textContent = 'handled ' + document.getElementById('word').value;\n"
        "  document.getElementById('log').appendChild(li);\n"
        "});\n",
    },
}


def _demo_subagent(live_app, title: str) -> int:
    with session_scope(app_state(live_app).engine) as session:
        return session.exec(
            select(SubAgent.id).where(SubAgent.title == title).order_by(SubAgent.id)
        ).first()


def _open_preview(page, subagent_id: int, size: str):
    """The sub-agent page at this size, scrolled to its preview; the preview's frame."""
    page.set_viewport_size(VIEWPORTS[size])
    page.goto(f"/s/{subagent_id}")
    page.locator("section.preview").scroll_into_view_if_needed()
    frame = page.frame_locator(FRAME)
    frame.locator("button[type=submit]").first.wait_for()
    return frame


def _blocked_submissions(page) -> list[str]:
    messages: list[str] = []
    page.on(
        "console",
        lambda message: (
            messages.append(message.text) if "Blocked form submission" in message.text else None
        ),
    )
    return messages


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_typing_into_a_preview_form_and_adding_shows_the_entry(live_app, page, screenshots, size):
    blocked = _blocked_submissions(page)
    water = _demo_subagent(live_app, "Water Tracker")
    frame = _open_preview(page, water, size)
    assert set(page.locator(FRAME).get_attribute("sandbox").split()) == {
        "allow-scripts",
        "allow-forms",
    }
    frame.locator("#f-amount").fill("350")
    frame.get_by_role("button", name="Add", exact=True).click()
    entry = frame.locator("#list li:not(.empty)").first
    entry.wait_for()
    assert "350" in entry.inner_text()
    assert frame.locator("#today-total").inner_text().startswith("350")
    frame.locator("#f-amount").fill("250")
    frame.get_by_role("button", name="Add", exact=True).click()
    frame.locator("#list li:not(.empty)").nth(1).wait_for()
    assert frame.locator("#today-total").inner_text().startswith("600")
    page.screenshot(path=screenshots / f"preview-form-{size}.png")

    budget = _demo_subagent(live_app, "シンプル家計簿")  # a budget, in Japanese
    frame = _open_preview(page, budget, size)
    frame.locator("#f-amount").fill("1200")
    frame.locator("#f-note").fill("ランチ")
    frame.get_by_role("button", name="追加", exact=True).click()
    frame.locator("#list li:not(.empty)", has_text="ランチ").wait_for()

    assert blocked == []
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.problems == []


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_no_form_submission_leaves_the_frame_and_it_cannot_reach_the_page(live_app, page, size):
    author = make_user(app_state(live_app).engine, f"form-tester-{size}")
    created = live_app.test_client().post(
        "/api/v1/subagents",
        json=listing(f"Form tester {size}", bundle=LEAKY_FORMS_BUNDLE),
        headers=author.headers,
    )
    assert created.status_code == 201, created.get_json()
    subagent_id = created.get_json()["id"]
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url))
    page.set_viewport_size(VIEWPORTS[size])
    page.goto(f"/s/{subagent_id}")
    frame = page.frame_locator(FRAME)
    frame.locator("#keep").click()
    frame.get_by_text("handled kept").wait_for()  # the app's own handler ran in the frame
    preview_url = page.locator(FRAME).get_attribute("src")
    before = len(sent)

    frame.locator("#leak").click()
    frame.locator("#reload").click()
    page.wait_for_timeout(500)  # long enough for a navigation to have started
    assert sent[before:] == []  # nothing was submitted, to this site or the frame itself
    assert page.url.endswith(f"/s/{subagent_id}")
    assert page.locator(FRAME).element_handle().content_frame().url.endswith(preview_url)
    assert frame.get_by_text("handled kept").is_visible()  # the frame was not reloaded
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.problems == []


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_a_networked_fork_says_its_preview_runs_offline(live_app, page, screenshots, size):
    chicago = _demo_subagent(live_app, "Water Tracker — Chicago weather")
    frame = _open_preview(page, chicago, size)
    note = page.locator(".preview-offline")
    assert note.is_visible()
    assert note.inner_text() == (
        "This one fetches data from api.open-meteo.com (the weather); previews run offline, "
        "so that part is missing here; it works once imported."
    )
    # Inside the app, the weather line says why it is missing rather than reporting a failure.
    weather = frame.locator("#weather")
    weather.filter(has_text="Works once imported").wait_for()
    assert weather.inner_text() == "Weather · Chicago: Works once imported — previews run offline"
    page.screenshot(path=screenshots / f"preview-networked-{size}.png")
    frame.get_by_role("button", name="Add", exact=True).click()  # and the rest of it works
    frame.locator("#list li:not(.empty)").first.wait_for()
    assert page.problems == []
