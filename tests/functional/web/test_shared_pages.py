"""What marking a page ``shared_page`` promises, held on the demo community: for an anonymous
reader, every shared page answers without a session (no cookie set, no CSRF form, nobody
signed in), so the read cache may hand one reader's copy to the next (PostgreSQL; the cache
itself is tested in tests/integration/platform/test_read_cache.py). A page added to
``SHARED_PAGES`` must be added here too."""

from __future__ import annotations

from sqlalchemy import select
from sqlmodel import Session

from market.catalog.models import SubAgent
from market.web.blueprint import SHARED_PAGES


def _a_public_fork(engine) -> tuple[int, int]:
    """(its id, its root's) for the most forked public fork with a parent version."""
    with Session(engine) as session:
        return session.execute(
            select(SubAgent.id, SubAgent.root_id)
            .where(
                SubAgent.parent_id.is_not(None),
                SubAgent.parent_version_id.is_not(None),
                SubAgent.visibility == "public",
                SubAgent.status == "active",
            )
            .order_by(SubAgent.fork_count.desc(), SubAgent.id)
        ).first()


def test_every_shared_page_is_the_same_for_every_anonymous_reader(demo_app):
    fork, root = _a_public_fork(demo_app.engine)
    urls = {
        "web.browse_page": ["/", "/?q=water", "/?q=喝水", "/?sort=top", "/?lang=ja"],
        "web.subagent_page": [f"/s/{root}", f"/s/{fork}"],
        "web.tree_page": [f"/s/{root}/tree", f"/s/{fork}/tree"],
        "web.tree_children": [f"/s/{root}/tree/children"],
        "web.tree_all": [f"/s/{root}/tree/all"],
        "web.diff_page": [f"/s/{fork}/diff"],
        "web.ranking_page": ["/ranking"],
    }
    assert set(urls) == SHARED_PAGES
    client = demo_app.app.test_client()
    routes = demo_app.app.url_map.bind("localhost")
    for endpoint, paths in urls.items():
        for path in paths:
            client.delete_cookie("sprig_lang")
            response = client.get(path, headers={"Accept-Language": "en"})
            assert response.status_code == 200, path
            assert routes.match(path.split("?")[0])[0] == endpoint
            body = response.get_data(as_text=True)
            assert 'name="csrf"' not in body, path
            assert (
                "Cache-Control" not in response.headers
                or "private" not in (response.headers["Cache-Control"])
            ), path
            if "lang=" not in path:  # choosing a language sets its cookie: never stored
                assert "Set-Cookie" not in response.headers, path
            assert "Accept-Language" in response.headers.get("Vary", ""), path
