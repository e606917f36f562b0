"""The preview's sandbox lets an app's forms fire their submit handlers, never send anything,
and a sub-agent that talks to the network says in plain words, above its preview, that this
part is missing there."""

from __future__ import annotations

import re

from tests.factories import bundle, make_user, publish

FRAMED = {"Sec-Fetch-Dest": "iframe"}


def _iframe(page: str) -> tuple[str, set[str]]:
    """The preview frame's address and its sandbox tokens."""
    tag = re.search(r"<iframe [^>]*>", page).group(0)
    src = re.search(r'src="([^"]+)"', tag).group(1)
    return src, set(re.search(r'sandbox="([^"]*)"', tag).group(1).split())


def _directives(csp: str) -> dict[str, list[str]]:
    directives = {}
    for part in csp.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


def test_the_preview_frame_allows_forms_and_scripts_and_nothing_else(client, engine):
    alice = make_user(engine, "alice")
    created = publish(client, alice, title="Water Tracker")
    page = client.get(f"/s/{created['id']}").get_data(as_text=True)
    src, tokens = _iframe(page)
    assert tokens == {"allow-scripts", "allow-forms"}

    response = client.get(src, headers=FRAMED)
    assert response.status_code == 200
    csp = _directives(response.headers["Content-Security-Policy"])
    # The document's own sandbox says the same, so opened any other way it is no freer.
    assert set(csp["sandbox"]) == {"allow-scripts", "allow-forms"}
    # Handlers run in the frame; a submission itself may go nowhere, not even to this site.
    assert csp["form-action"] == ["'none'"]
    assert csp["connect-src"] == ["'none'"] and csp["frame-ancestors"] == ["'self'"]
    shim = client.get("/static/web/preview-shim.js").get_data(as_text=True)
    assert '<script src="/static/web/preview-shim.js"></script>' in response.get_data(as_text=True)
    assert "sprigPreview" in shim and "localStorage" in shim


def test_a_networked_sub_agent_says_its_preview_is_offline(client, engine):
    alice = make_user(engine, "alice")
    networked = publish(
        client,
        alice,
        title="Water Tracker with weather",
        bundle=bundle("weather", hosts=("api.open-meteo.com", "api.example.org")),
    )
    page = client.get(f"/s/{networked['id']}").get_data(as_text=True)
    note = re.search(r'<p class="notice preview-offline" role="note">(.*?)</p>', page).group(1)
    words = re.sub(r"<[^>]+>", "", note)
    assert words == (
        "This one fetches data from api.example.org and api.open-meteo.com (the weather); "
        "previews run offline, so those parts are missing here; it works once imported."
    )
    # The note sits with the preview, before its frame.
    assert page.index("preview-offline") < page.index("<iframe ")

    offline = publish(client, alice, title="Water Tracker offline", bundle=bundle("offline"))
    assert "preview-offline" not in client.get(f"/s/{offline['id']}").get_data(as_text=True)


def test_one_host_is_named_as_one_part(client, engine):
    alice = make_user(engine, "alice")
    networked = publish(
        client, alice, title="Trip splitter", bundle=bundle("rates", hosts=("api.frankfurter.app",))
    )
    page = client.get(f"/s/{networked['id']}").get_data(as_text=True)
    assert (
        "This one fetches data from <code>api.frankfurter.app</code> (exchange rates); "
        "previews run offline, so that part is missing here" in page
    )
