"""The web pages through Flask's test client, on every backend: status, escaping, access rules,
sign-in and CSRF, security headers, the preview sandbox, the dashboard and its CSV."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace

import pytest
from sqlmodel import select

from market.catalog import views as catalog_views
from market.catalog.models import ForkRequest, Install, SubAgent
from market.identity.tokens import revoke_token
from market.platform.db import session_scope
from market.platform.state import app_state, install_state
from market.platform.time import utcnow
from market.usage import rollups
from market.usage import views as usage_views
from tests.factories import bundle, fork, make_user, publish, rank

SCRIPT_TITLE = "<script>window.__pwned=1</script>Water"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(client, path: str = "/signin") -> str:
    page = client.get(path)
    match = CSRF.search(page.get_data(as_text=True))
    assert match, f"no CSRF field on {path}"
    return match.group(1)


def sign_in(client, actor) -> None:
    token = csrf_of(client)
    response = client.post("/signin", data={"csrf": token, "token": actor.token, "next": "/"})
    assert response.status_code == 302, response.get_data(as_text=True)


def text(response) -> str:
    return response.get_data(as_text=True)


@pytest.fixture
def world(client, engine):
    alice = make_user(engine, "alice", display_name="Alice Creator")
    bob = make_user(engine, "bob", display_name="Bob Importer")
    root = publish(client, alice, title="Water Tracker", summary="Three litres a day.")
    child = fork(
        client,
        bob,
        root["id"],
        note="reminders",
        title="Water Tracker with reminders",
        bundle=bundle("reminders", scopes=("hydration.read", "hydration.write", "calendar.read")),
    )
    secret = publish(client, alice, title="Alice Private Diary", visibility="private")
    return {"alice": alice, "bob": bob, "root": root, "child": child, "secret": secret}


# ---- browse ------------------------------------------------------------------------------


def test_front_door_is_the_browse_page_with_cards(client, world):
    response = client.get("/")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    body = text(response)
    assert "Water Tracker" in body and "Alice Creator" in body
    assert "Alice Private Diary" not in body  # private: never listed to others
    assert 'href="/s/{}"'.format(world["root"]["id"]) in body


def test_search_category_and_paging(client, world, engine):
    alice = world["alice"]
    publish(
        client,
        alice,
        title="Sleep Diary",
        category="sleep",
        summary="Bedtime notes.",
        story="I sleep badly.",
        tags=["sleep"],
        bundle=bundle("sleep"),
    )
    assert "Sleep Diary" in text(client.get("/?q=sleep"))
    assert "Sleep Diary" not in text(client.get("/?q=water"))
    publish(
        client,
        alice,
        title="睡眠日記",
        category="sleep",
        summary="寝た時間と起きた時間を記録します。",
        story="毎晩の睡眠の記録。",
        tags=["sleep"],
        bundle=bundle("ja-sleep"),
    )
    assert "睡眠日記" in text(client.get("/?q=睡眠"))  # no spaces: cut into words
    assert "睡眠日記" not in text(client.get("/?q=喝水"))
    by_category = text(client.get("/?category=sleep"))
    assert "Sleep Diary" in by_category and "Water Tracker with reminders" not in by_category
    for i in range(30):
        publish(client, alice, title=f"Tracker {i}", bundle=bundle(f"n{i}"))
    first = text(client.get("/?sort=new"))
    next_link = re.search(r'href="(/\?[^"]*cursor=[^"]+)"', first)
    assert next_link, "a first page of 24 links to the next"
    partial = client.get(next_link.group(1).replace("&amp;", "&") + "&partial=1")
    assert partial.status_code == 200
    assert "<html" not in text(partial) and 'class="card"' in text(partial)


@pytest.mark.parametrize(
    "query", ["/?category=nope", "/?sort=sideways", "/?cursor=garbage", "/?q=" + "x" * 201]
)
def test_bad_browse_input_is_a_400_page(client, world, query):
    response = client.get(query)
    assert response.status_code == 400
    assert response.mimetype == "text/html"


def test_ranked_sorts_are_offered_and_answer(client, world):
    for sort in ("top", "trending", "new", "installs"):
        response = client.get(f"/?sort={sort}")
        assert response.status_code == 200, sort
        assert "Water Tracker" in text(response)


# ---- security headers and escaping -------------------------------------------------------


def test_every_page_has_security_headers(client, world):
    sign_in(client, world["alice"])
    root = world["root"]["id"]
    for path in [
        "/",
        f"/s/{root}",
        f"/s/{root}/tree",
        f"/s/{world['child']['id']}/diff",
        "/me/installs",
        "/creators/alice",
        "/signin",
        "/s/999999",
    ]:
        response = client.get(path)
        csp = response.headers["Content-Security-Policy"]
        script_src = re.search(r"script-src ([^;]+)", csp).group(1)
        assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src, path
        assert "frame-ancestors 'none'" in csp, path
        assert response.headers["X-Content-Type-Options"] == "nosniff", path
        assert response.headers["X-Frame-Options"] == "DENY", path
        assert response.headers["Referrer-Policy"], path
        assert "app;dur=" in response.headers["Server-Timing"], path
        # Pages for a signed-in person are never kept by shared caches.
        assert "no-store" in response.headers["Cache-Control"], path


def test_user_text_is_escaped_everywhere(client, engine, world):
    alice = world["alice"]
    evil = publish(
        client,
        alice,
        title=SCRIPT_TITLE,
        summary='"><img src=x onerror="window.__pwned=2">',
        story="</blockquote><script>window.__pwned=3</script>",
    )
    evil_fork = fork(client, world["bob"], evil["id"], note="x", title="</script><b>fork</b>")
    installed = client.post(f"/api/v1/subagents/{evil['id']}/install", headers=world["bob"].headers)
    assert installed.status_code == 201
    rate = client.post(
        "/api/v1/feedback",
        json={
            "version_id": evil["latest_version"]["id"],
            "stars": 1,
            "comment": "<script>window.__pwned=4</script>",
        },
        headers=world["bob"].headers,
    )
    assert rate.status_code == 201
    pages = [
        "/",
        "/?q=water",
        f"/s/{evil['id']}",
        f"/s/{evil['id']}/tree",
        f"/s/{evil_fork['id']}",
        f"/s/{evil_fork['id']}/diff",
    ]
    for path in pages:
        body = text(client.get(path))
        assert "<script>window.__pwned" not in body, path
        assert "<img src=x" not in body and "</script><b>" not in body, path
    detail = text(client.get(f"/s/{evil['id']}"))
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;Water" in detail
    assert "&lt;script&gt;window.__pwned=4&lt;/script&gt;" in detail  # the comment
    tree = text(client.get(f"/s/{evil['id']}/tree"))
    data = re.search(r'<script type="application/json" id="tree-data">(.*?)</script>', tree, re.S)
    assert data and "\\u003cscript\\u003e" in data.group(1)
    # Every script tag on the page loads a file of this site.
    for page in pages:
        for tag in re.findall(r"<script\b[^>]*>", text(client.get(page))):
            assert 'src="/static/' in tag or 'type="application/json"' in tag, (page, tag)


# ---- the sub-agent page and access ------------------------------------------------------


def test_subagent_page_shows_story_data_versions_and_preview(client, world):
    body = text(client.get(f"/s/{world['child']['id']}"))
    assert "Water Tracker with reminders" in body
    assert "your calendar" in body and "calendar.read" in body  # personal data, in words
    assert "Water Tracker</a>" in body  # forked from, linked
    assert "please change it: reminders" in body  # the fork request
    assert 'sandbox="allow-scripts allow-forms"' in body and "allow-same-origin" not in body
    assert "Sign in to import" in body


def test_private_things_are_invisible_to_others_on_every_page(client, world):
    secret = world["secret"]["id"]
    for path in [f"/s/{secret}", f"/s/{secret}/tree", f"/s/{secret}/diff"]:
        response = client.get(path)
        assert response.status_code == 404, path
        assert "Alice Private Diary" not in text(response)
    assert client.get(f"/s/{secret}/tree/children").status_code == 404
    sign_in(client, world["bob"])
    assert client.get(f"/s/{secret}").status_code == 404
    client.post("/signout", data={"csrf": csrf_of(client, "/")})
    sign_in(client, world["alice"])
    assert "Alice Private Diary" in text(client.get(f"/s/{secret}"))


def test_a_private_fork_stays_out_of_others_trees(client, world):
    alice, root = world["alice"], world["root"]["id"]
    hidden = fork(
        client, alice, root, note="hidden", title="Alice Hidden Fork", visibility="private"
    )
    assert "Alice Hidden Fork" not in text(client.get(f"/s/{root}/tree"))
    assert "Alice Hidden Fork" not in text(client.get(f"/s/{root}/tree/children"))
    assert "Alice Hidden Fork" not in text(client.get(f"/s/{root}/tree/all"))
    sign_in(client, alice)
    assert "Alice Hidden Fork" in text(client.get(f"/s/{root}/tree/all"))
    assert client.get(f"/s/{hidden['id']}/tree").status_code == 200


def _tree_data(client, path: str) -> dict:
    page = text(client.get(path))
    data = re.search(r'<script type="application/json" id="tree-data">(.*?)</script>', page, re.S)
    return json.loads(data.group(1))


def test_the_tree_always_draws_the_way_down_to_the_viewed_fork(client, engine, world):
    """Under a root with more popular forks than the first view shows, the path to the
    viewed fork is drawn anyway, and "show more" continues after the ranked children."""
    bob, root = world["bob"], world["root"]["id"]
    popular = [fork(client, bob, root, note=f"popular {i}")["id"] for i in range(4)]
    quiet = fork(client, bob, root, note="quiet")["id"]
    focus = fork(client, bob, quiet, note="viewed", title="The Viewed Fork")["id"]
    with session_scope(engine) as session:
        for installs, subagent_id in enumerate(popular, start=10):
            session.get(SubAgent, subagent_id).install_count = installs
    view = _tree_data(client, f"/s/{focus}/tree")
    nodes = {node["id"]: node for node in view["nodes"]}
    assert view["top"] == root and view["focus"] == focus
    # The three most installed children of the root, then the path to the viewed fork.
    assert set(nodes) == {root, *popular[1:], quiet, focus}
    assert nodes[focus]["focus"] and not nodes[root]["focus"]
    assert nodes[quiet]["parent"] == root and nodes[focus]["parent"] == quiet
    assert nodes[root]["parent"] is None
    assert nodes[root]["shown"] == 4 and nodes[root]["more"]
    rest = client.get(f"/s/{root}/tree/children?cursor={nodes[root]['more']}").get_json()
    # After the three ranked ones: the least installed popular fork, the quiet one and the
    # world's fork (the page merges the repeat of the quiet one).
    assert popular[0] in {node["id"] for node in rest["nodes"]}
    assert quiet in {node["id"] for node in rest["nodes"]}
    assert view["size"] == 8  # root, the world's fork, four popular, quiet, viewed


def test_a_tree_under_a_hidden_root_starts_at_the_highest_node_the_viewer_sees(client, world):
    """Alice's root is private and her fork of it public: others' tree starts at the fork and
    counts only what lies below it (ancestry paths that start with the fork's path and a
    slash), not the root's other branches, even one whose id starts with the fork's digits
    (below the fork 7 the paths start "1/7/"; below its sibling 70, "1/70")."""
    alice, bob = world["alice"], world["bob"]
    secret = publish(client, alice, title="Alice Private Root", visibility="private")["id"]
    shown = fork(client, alice, secret, note="shown", visibility="public")["id"]
    others = [fork(client, alice, secret, note="other branch 0")["id"]]
    while not str(others[-1]).startswith(str(shown)):
        others.append(fork(client, alice, secret, note=f"other branch {len(others)}")["id"])
    others.append(fork(client, alice, others[-1], note="below the other branch")["id"])
    first = fork(client, bob, shown, note="first")["id"]
    fork(client, bob, shown, note="second")
    deep = fork(client, bob, first, note="deep")["id"]
    view = _tree_data(client, f"/s/{deep}/tree")
    assert view["top"] == shown
    assert view["size"] == 4  # shown, first, second, deep
    whole = client.get(f"/s/{shown}/tree/all").get_json()
    assert whole["top"] == shown and len(whole["nodes"]) == 3
    sign_in(client, alice)  # her root is hers to see: the whole lineage
    assert _tree_data(client, f"/s/{deep}/tree")["size"] == 1 + len(others) + 4


def test_a_private_fork_stays_out_of_the_parent_creators_dashboard_and_tree(client, world):
    alice, bob, root = world["alice"], world["bob"], world["root"]["id"]
    fork(client, bob, root, note="secret", title="Bob Secret Fork", visibility="private")
    shared = fork(client, bob, root, note="open", title="Bob Open Fork")
    fork(client, bob, shared["id"], note="deep", title="Bob Deep Secret", visibility="private")
    sign_in(client, alice)
    dashboard = text(client.get("/creators/alice"))
    assert "Bob Open Fork" in dashboard
    assert "Bob Secret Fork" not in dashboard and "Bob Deep Secret" not in dashboard
    for path in (
        f"/s/{root}/tree",
        f"/s/{root}/tree/children",
        f"/s/{root}/tree/all",
        f"/s/{shared['id']}/tree",
        f"/s/{shared['id']}/tree/children",
    ):
        body = text(client.get(path))
        assert "Bob Open Fork" in body or path.endswith(f"{shared['id']}/tree/children"), path
        assert "Bob Secret Fork" not in body and "Bob Deep Secret" not in body, path
    client.post("/signout", data={"csrf": csrf_of(client, "/")})
    sign_in(client, bob)
    assert "Bob Deep Secret" in text(client.get(f"/s/{shared['id']}/tree"))


def test_the_better_branch_notice_reads_the_ranking(client, engine, world):
    root, child = world["root"]["id"], world["child"]["id"]
    assert "loved more" not in text(client.get(f"/s/{root}"))
    rank(engine, {root: 0.1, child: 1.2}, best=child, better_than={root: 0.8})
    body = text(client.get(f"/s/{root}"))
    assert "A newer branch of this is loved more" in body
    assert f'href="/s/{child}">Water Tracker with reminders' in body
    assert "loved more" not in text(client.get(f"/s/{child}"))  # it is the best one itself
    tree = text(client.get(f"/s/{child}/tree"))
    assert '"best":' + str(child) in tree.replace(" ", "")


# ---- sign-in, CSRF, import, customize --------------------------------------------------


def test_sign_in_with_a_token_then_import_then_my_installs(client, engine, world):
    bob, root = world["bob"], world["root"]["id"]
    assert client.get("/me/installs").status_code == 302  # to the sign-in page
    sign_in(client, bob)
    page = text(client.get(f"/s/{root}"))
    assert ">Import<" in page and "Sign out" in page
    token = CSRF.search(page).group(1)
    response = client.post(f"/s/{root}/import", data={"csrf": token})
    assert response.status_code == 302
    with session_scope(engine) as session:
        assert session.exec(
            select(Install).where(Install.user_id == bob.id, Install.subagent_id == root)
        ).one()
    assert "In your agent" in text(client.get(f"/s/{root}"))
    installs = text(client.get("/me/installs"))
    assert f'href="/s/{root}">Water Tracker</a>' in installs


def test_customize_sends_a_fork_request(client, engine, world):
    bob, root = world["bob"], world["root"]["id"]
    sign_in(client, bob)
    token = csrf_of(client, f"/s/{root}")
    short = client.post(f"/s/{root}/customize", data={"csrf": token, "text": "x"})
    assert short.status_code == 302
    asked = client.post(f"/s/{root}/customize", data={"csrf": token, "text": "use millilitres"})
    assert asked.status_code == 302
    with session_scope(engine) as session:
        requests = session.exec(select(ForkRequest).where(ForkRequest.subagent_id == root)).all()
    assert [r.text for r in requests] == ["use millilitres"]


def test_forms_without_the_csrf_token_or_from_elsewhere_change_nothing(client, engine, world):
    bob, root = world["bob"], world["root"]["id"]
    sign_in(client, bob)
    assert client.post(f"/s/{root}/import", data={}).status_code == 400
    assert client.post(f"/s/{root}/import", data={"csrf": "forged"}).status_code == 400
    token = csrf_of(client, f"/s/{root}")
    cross = client.post(
        f"/s/{root}/import", data={"csrf": token}, headers={"Origin": "https://evil.example"}
    )
    assert cross.status_code == 403
    with session_scope(engine) as session:
        assert session.exec(select(Install).where(Install.user_id == bob.id)).first() is None


def test_bad_service_and_revoked_tokens(client, engine, world):
    token = csrf_of(client)
    bad = client.post("/signin", data={"csrf": token, "token": "sprig_nope"})
    assert bad.status_code == 400 and "unknown" in text(bad)
    service = make_user(engine, "robot", kind="service", scopes=["events:write"])
    refused = client.post("/signin", data={"csrf": token, "token": service.token})
    assert refused.status_code == 400 and "Service tokens" in text(refused)
    sign_in(client, world["bob"])
    assert client.get("/me/installs").status_code == 200
    with session_scope(engine) as session:
        assert revoke_token(session, world["bob"].token)
    assert client.get("/me/installs").status_code == 302  # signed out by the revocation


def test_the_cookie_never_authenticates_the_api(client, world):
    sign_in(client, world["bob"])
    assert client.get("/api/v1/me").status_code == 401


def test_sign_in_redirects_only_to_this_site(client, world):
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        token = csrf_of(client)  # each sign-in starts a new session with a new token
        response = client.post(
            "/signin", data={"csrf": token, "token": world["bob"].token, "next": target}
        )
        assert response.headers["Location"] == "/", target


def test_demo_picker_only_when_enabled(client, app, world):
    assert "demo_handle" not in text(client.get("/signin"))
    token = csrf_of(client)
    refused = client.post("/signin", data={"csrf": token, "demo_handle": "alice"})
    assert refused.status_code == 400 and "embedded demo" in text(refused)
    state = app_state(app)
    install_state(
        app, replace(state, settings=state.settings.with_overrides({"demo_signin": True}))
    )
    page = text(client.get("/signin"))
    assert 'value="alice"' in page
    picked = client.post("/signin", data={"csrf": csrf_of(client), "demo_handle": "alice"})
    assert picked.status_code == 302
    assert "Alice Private Diary" in text(client.get(f"/s/{world['secret']['id']}"))


# ---- diff, tree data -------------------------------------------------------------------


def test_diff_shows_an_added_permission_and_changed_files(client, world):
    body = text(client.get(f"/s/{world['child']['id']}/diff"))
    assert 'class="perm-added"' in body and "calendar.read" in body and "your calendar" in body
    assert "status-modified" in body and "line-add" in body
    root = text(client.get(f"/s/{world['root']['id']}/diff"))
    assert "not a fork" in root


def test_tree_children_and_whole_tree_json(client, engine, world):
    root = world["root"]["id"]
    for i in range(15):
        fork(client, world["bob"], root, note=f"f{i}")
    first = client.get(f"/s/{root}/tree/children").get_json()
    assert len(first["nodes"]) == 12 and first["more"]
    rest = client.get(f"/s/{root}/tree/children?cursor={first['more']}").get_json()
    ids = {n["id"] for n in first["nodes"]} | {n["id"] for n in rest["nodes"]}
    assert len(ids) == 16 and rest["more"] is None
    whole = client.get(f"/s/{root}/tree/all").get_json()
    assert len(whole["nodes"]) == 16 and not whole["too_large"]
    assert {"active", "quality", "word"} <= set(whole["nodes"][0])
    assert client.get(f"/s/{root}/tree/children?cursor=bogus").status_code == 400


# ---- preview ---------------------------------------------------------------------------


def test_preview_is_sandboxed_and_its_ticket_checked(client, world):
    page = text(client.get(f"/s/{world['root']['id']}"))
    src = re.search(r'<iframe src="([^"]+)"', page).group(1)
    framed = {"Sec-Fetch-Dest": "iframe"}  # only ever served into a frame
    response = client.get(src, headers=framed)
    assert response.status_code == 200 and response.mimetype == "text/html"
    csp = response.headers["Content-Security-Policy"]
    assert csp.startswith("sandbox allow-scripts allow-forms;") and "allow-same-origin" not in csp
    assert "connect-src 'none'" in csp and "frame-ancestors 'self'" in csp
    assert response.headers["X-Frame-Options"] == "SAMEORIGIN"
    assert "/static/web/preview-shim.js" in text(response)
    script = client.get(src.replace("index.html", "app.js"))
    assert script.mimetype == "text/javascript"
    ticket = src.split("/")[2]
    forged = src.replace(ticket, ticket[:-2] + ("AA" if not ticket.endswith("AA") else "BB"))
    assert client.get(forged, headers=framed).status_code == 404
    assert client.get(src.replace("index.html", "nope.js")).status_code == 404


CRUMB = re.compile(r'<nav class="crumbs".*?</nav>', re.S)


def test_a_deep_lineage_shows_its_root_and_last_ancestors_and_links_the_rest_to_its_tree(
    client, world
):
    chain = [world["root"]]
    for n in range(1, 8):
        actor = world["bob"] if n % 2 else world["alice"]
        chain.append(fork(client, actor, chain[-1]["id"], f"level{n}", title=f"Level {n}"))
    crumbs = CRUMB.search(text(client.get(f"/s/{chain[7]['id']}"))).group(0)
    linked = [int(i) for i in re.findall(r'href="/s/(\d+)"', crumbs)]
    assert linked == [chain[0]["id"], chain[4]["id"], chain[5]["id"], chain[6]["id"]]
    assert f'href="/s/{chain[7]["id"]}/tree">3 more forks</a>' in crumbs
    # Five ancestors or fewer are all shown.
    crumbs = CRUMB.search(text(client.get(f"/s/{chain[5]['id']}"))).group(0)
    assert [int(i) for i in re.findall(r'href="/s/(\d+)"', crumbs)] == [c["id"] for c in chain[:5]]


def test_a_private_ancestor_is_a_placeholder_in_the_breadcrumb_and_only_counted_when_elided(
    client, world
):
    """Bob forks Alice's root privately, then publishes forks below it: to anyone else the
    private one is "a private sub-agent" where the breadcrumb names it, and one of the forks
    counted in "N more forks" where it does not; its title never shows."""
    alice, bob = world["alice"], world["bob"]
    hidden = fork(client, bob, world["root"]["id"], "hidden", title="Bob Hidden Draft",
                  visibility="private")  # fmt: skip
    chain = [world["root"], hidden]
    for n in range(2, 8):
        chain.append(fork(client, bob, chain[-1]["id"], f"below{n}", title=f"Below {n}"))
    sign_in(client, alice)
    near = text(client.get(f"/s/{chain[2]['id']}"))
    crumbs = CRUMB.search(near).group(0)
    assert [int(i) for i in re.findall(r'href="/s/(\d+)"', crumbs)] == [world["root"]["id"]]
    assert "a private sub-agent" in crumbs and "Bob Hidden Draft" not in near
    deep = text(client.get(f"/s/{chain[7]['id']}"))
    crumbs = CRUMB.search(deep).group(0)
    linked = [int(i) for i in re.findall(r'href="/s/(\d+)"', crumbs)]
    assert linked == [world["root"]["id"], chain[4]["id"], chain[5]["id"], chain[6]["id"]]
    assert "3 more forks" in crumbs and "a private sub-agent" not in crumbs
    assert "Bob Hidden Draft" not in deep
    # Bob sees his own fork by name.
    sign_in(client, bob)
    mine = CRUMB.search(text(client.get(f"/s/{chain[2]['id']}"))).group(0)
    assert "Bob Hidden Draft" in mine and "a private sub-agent" not in mine


VERSION_ROW = re.compile(r"<li><strong>v(\d+)</strong>")


def test_a_sub_agent_page_lists_its_newest_versions_and_pages_back_to_the_first(
    client, world, monkeypatch
):
    """Versions a few at a time, newest first; the version a reader installed and the one
    they rated are named although neither is among the versions listed."""
    monkeypatch.setattr(catalog_views, "VERSIONS_SHOWN", 3)
    alice, bob = world["alice"], world["bob"]
    sub = publish(client, alice, title="Streak Counter", bundle=bundle("streak1"))
    first = sub["latest_version"]["id"]
    installed = client.post(f"/api/v1/subagents/{sub['id']}/install", json={}, headers=bob.headers)
    assert installed.status_code in (200, 201), installed.get_json()
    rated = client.post(
        "/api/v1/feedback", json={"version_id": first, "stars": 4}, headers=bob.headers
    )
    assert rated.status_code == 201, rated.get_json()
    url = f"/api/v1/subagents/{sub['id']}/versions"
    for n in range(2, 8):
        made = client.post(url, json={"bundle": bundle(f"streak{n}")}, headers=alice.headers)
        assert made.status_code == 201, made.get_json()

    sign_in(client, bob)
    shown, path = [], f"/s/{sub['id']}"
    while path:
        body = text(client.get(path))
        numbers = [int(n) for n in VERSION_ROW.findall(body)]
        assert 1 <= len(numbers) <= 3, path
        assert ("Newest versions" in body) == bool(shown)
        if not shown:  # bob's install and rating are of v1, on the last page only
            assert '<span class="muted small">v1</span>' in body
        shown += numbers
        older = re.search(r'<a class="button" rel="next" href="([^"]+)"', body)
        path = older.group(1).replace("&amp;", "&") if older else None
    assert shown == [7, 6, 5, 4, 3, 2, 1]

    again = client.post(
        f"/api/v1/subagents/{sub['id']}/install",
        json={"version_id": client.get(url).get_json()["items"][-1]["id"]},
        headers=bob.headers,
    )
    assert again.status_code in (200, 201), again.get_json()
    body = text(client.get(f"/s/{sub['id']}"))
    assert "You rated v1; saving rates v7." in body  # v1 is not among the versions listed
    assert '<span class="muted small">v7</span>' in body
    assert not VERSION_ROW.findall(text(client.get(f"/s/{sub['id']}?versions_before=1")))
    for hostile in ("²", "-1", "x", "9" * 400):
        refused = client.get(f"/s/{sub['id']}", query_string={"versions_before": hostile})
        assert refused.status_code == 400, hostile


# ---- dashboard ---------------------------------------------------------------------------


def test_dashboard_for_its_creator_only_with_charts_and_csv(client, engine, world):
    alice, root = world["alice"], world["root"]
    publish(client, alice, title="=HYPERLINK(1)", bundle=bundle("formula"))
    client.post(f"/api/v1/subagents/{root['id']}/install", json={}, headers=world["bob"].headers)
    rated = client.post(
        "/api/v1/feedback",
        json={"version_id": root["latest_version"]["id"], "stars": 5},
        headers=world["bob"].headers,
    )
    assert rated.status_code == 201, rated.get_json()
    # Someone else's dashboard answers what an unknown handle does: no enumeration.
    assert client.get("/creators/alice").status_code == 302  # anonymous: asked to sign in
    sign_in(client, world["bob"])
    assert client.get("/creators/alice").status_code == 404
    assert client.get("/creators/alice/stats.csv").status_code == 404
    client.post("/signout", data={"csrf": csrf_of(client, "/")})
    sign_in(client, alice)
    assert client.get("/dashboard").headers["Location"] == "/creators/alice"
    for window in (7, 30, 90, 365):
        response = client.get(f"/creators/alice?window={window}")
        assert response.status_code == 200, window
        body = text(response)
        for chart in ("chart-installs", "chart-active", "chart-ratings"):
            assert f'id="{chart}"' in body
        assert 'class="spark"' in body
    body = text(client.get("/creators/alice"))
    assert 'id="chart-retention"' in body  # bob installed today: a cohort
    assert client.get("/creators/alice?window=12").status_code == 400
    assert client.get("/creators/nobody").status_code == 404
    download = client.get("/creators/alice/stats.csv?window=7")
    assert download.mimetype == "text/csv"
    assert "attachment" in download.headers["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(text(download))))
    assert rows[0][:3] == ["day", "subagent_id", "title"]
    assert any(row[1] == str(root["id"]) and row[6] == "1" for row in rows[1:])  # the install
    assert not any(row[2].startswith("=") for row in rows[1:])


TABLE_ROW = re.compile(r'<th scope="row"><a href="/s/(\d+)">')


def test_a_prolific_creators_table_comes_a_page_at_a_time_most_installed_first(
    client, world, monkeypatch
):
    """The dashboard's table shows a page of a creator's sub-agents (the window's installs
    first, then installs now, then id); the pages hold each sub-agent once; what is out of
    range or not a row number is refused or said, never a server error."""
    monkeypatch.setattr(usage_views, "TABLE_ROWS", 3)
    alice, bob = world["alice"], world["bob"]
    extra = [
        publish(client, alice, title=f"Tracker {n}", bundle=bundle(f"tracker{n}"))["id"]
        for n in range(5)
    ]
    # Bob installs the two newest and uninstalls the older of them: in the window both lead,
    # the one still installed first, then the other ahead of the older ids.
    for subagent_id in extra[-2:]:
        installed = client.post(
            f"/api/v1/subagents/{subagent_id}/install", json={}, headers=bob.headers
        )
        assert installed.status_code in (200, 201), installed.get_json()
    removed = client.delete(f"/api/v1/subagents/{extra[-2]}/install", headers=bob.headers)
    assert removed.status_code in (200, 204), removed.get_data(as_text=True)
    everything = {world["root"]["id"], world["secret"]["id"], *extra}
    sign_in(client, alice)

    shown, path = [], "/creators/alice"
    while path:
        body = text(client.get(path))
        rows = [int(i) for i in TABLE_ROW.findall(body)]
        assert 1 <= len(rows) <= 3, path
        first = len(shown) + 1
        assert f"{first} to {first + len(rows) - 1} of 7" in body
        assert ('rel="prev"' in body) == (first > 1)
        shown += rows
        following = re.search(r'<a class="button" rel="next" href="([^"]+)"', body)
        path = following.group(1).replace("&amp;", "&") if following else None
    assert len(shown) == len(everything) and set(shown) == everything  # each once
    assert shown[:2] == [extra[-1], extra[-2]]  # installed in the window; one is still
    assert shown[2:] == sorted(everything - set(extra[-2:]))  # none installed now either
    # A table that fits on one page reads every row's days at once: in the same order.
    monkeypatch.setattr(usage_views, "TABLE_ROWS", 10)
    whole = text(client.get("/creators/alice"))
    assert [int(i) for i in TABLE_ROW.findall(whole)] == shown
    assert 'rel="next"' not in whole and " of 7" not in whole
    tail = text(client.get("/creators/alice?from=5"))
    assert [int(i) for i in TABLE_ROW.findall(tail)] == shown[5:] and "6 to 7 of 7" in tail
    monkeypatch.setattr(usage_views, "TABLE_ROWS", 3)

    # The second page's "previous" goes back to the first rows.
    second = text(client.get("/creators/alice?window=30&from=3"))
    back = re.search(r'<a class="button" rel="prev" href="([^"]+)"', second).group(1)
    assert "from" not in back and TABLE_ROW.findall(text(client.get(back)))[0] == str(shown[0])

    past = text(client.get("/creators/alice?from=40"))
    assert "there are none from row 41" in past and not TABLE_ROW.findall(past)
    assert 'href="/creators/alice?window=30"' in past  # back to the first rows
    for hostile in ("-1", "²", "٣", "1e3", "3.0", "9" * 5000, ""):
        refused = client.get("/creators/alice", query_string={"from": hostile})
        assert refused.status_code == 400, hostile
    assert client.get("/creators/alice", query_string={"window": "³⁰"}).status_code == 400


def test_the_dashboard_rolls_up_pending_usage_first_and_skips_the_rollup_when_none(
    client, engine, world, monkeypatch
):
    alice, root = world["alice"], world["root"]
    service = make_user(
        engine,
        "collector",
        kind="service",
        scopes=["events:write"],
    )
    sent = client.post(
        "/api/v1/events",
        json={
            "events": [
                {
                    "event_id": "0f0e0d0c-0b0a-4908-8706-050403020100",
                    "user_id": world["bob"].id,
                    "subagent_id": root["id"],
                    "version_id": root["latest_version"]["id"],
                    "kind": "open",
                    "occurred_at": utcnow().isoformat(),
                }
            ]
        },
        headers=service.headers,
    )
    assert sent.status_code == 202, sent.get_json()
    sign_in(client, alice)
    csv_rows = list(csv.reader(io.StringIO(text(client.get("/creators/alice/stats.csv")))))
    assert any(row[1] == str(root["id"]) and row[3] == "1" for row in csv_rows[1:])

    # Nothing waits for the rollup now: the page reads without starting one.
    def no_rollup(_session):
        raise AssertionError("a rollup ran with nothing pending")

    monkeypatch.setattr(rollups, "run_rollup", no_rollup)
    assert client.get("/creators/alice").status_code == 200
    assert client.get("/creators/alice/stats.csv").status_code == 200


def test_how_ranking_works_page_publishes_the_formulas(client):
    response = client.get("/ranking")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert "How ranking works" in page
    assert "E[θ] − 1.64" in page  # the display score's formula
    assert "No ranking run yet" in page
    assert response.headers["X-Content-Type-Options"] == "nosniff"
