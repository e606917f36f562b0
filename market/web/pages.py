"""Browse, the sub-agent page (the share link), the fork tree, the diff, my installs, sign-in."""

from __future__ import annotations

from flask import (
    current_app,
    flash,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from sqlmodel import select

import evolution.ranking
from evolution.models import RankingRun
from market import browse, bundles, catalog, installs
from market.access import can_read_files
from market.api.deps import caller, commit, db
from market.auth import ANONYMOUS
from market.character_search import matcher_for
from market.errors import BadRequest, NotFound, SprigError
from market.models import Install, SubAgent, User
from market.schemas import CATEGORIES, BrowseSort
from market.web import figures, lineage_view, preview, signin
from market.web.blueprint import bp

ID = "int(max=2147483647)"
PAGE_SIZE = 24
MAX_QUERY_CHARS = 200

# The sorts the page offers, in order. "top", "trending" and "rising" read the ranking's
# scores (market/ranking.py); before any ranking has run, top and trending fall back to the
# most installed, and the page says so.
SORTS = {
    "top": "Top",
    "trending": "Trending",
    "rising": "Rising",
    "new": "New",
    "installs": "Most installed",
}
RANKED_SORTS = {"top", "trending", "rising"}


def _browse_sort(requested: str | None, has_query: bool) -> tuple[str | None, str | None]:
    """(sort to pass to browse, notice for the page)."""
    if not requested:
        return (None, None) if has_query else ("new", None)
    supported = {s.value for s in BrowseSort}
    if requested in supported:
        return requested, None
    if requested in RANKED_SORTS:
        return "installs", "Rankings are not computed yet: showing the most installed first."
    raise BadRequest(f"Unknown sort {requested!r}.")


def _text_arg(name: str) -> str | None:
    value = request.args.get(name, "").strip()
    if "\x00" in value:
        raise BadRequest(f"`{name}` must not contain NUL characters.")
    return value or None


@bp.get("/")
def browse_page():
    q = _text_arg("q")
    if q and len(q) > MAX_QUERY_CHARS:
        raise BadRequest(f"A search is at most {MAX_QUERY_CHARS} characters.")
    category = _text_arg("category")
    if category and category not in CATEGORIES:
        raise BadRequest(f"Unknown category {category!r}.")
    requested_sort = _text_arg("sort")
    sort, notice = _browse_sort(requested_sort, bool(q))
    cursor = _text_arg("cursor")
    if cursor and len(cursor) > 200:
        raise BadRequest("The cursor is not one this site made.")
    session = db()
    # Browse lists the public catalog, the same for everyone (a person's own private and
    # unlisted things are on their dashboard): the "public and active" listing indexes then
    # serve every query, where "public or mine" cannot use them.
    page = browse.browse(
        session,
        ANONYMOUS,
        q=q,
        category=category,
        tag=None,
        sort=sort,
        limit=PAGE_SIZE,
        cursor=cursor,
        character_matches=matcher_for(current_app, session),
    )
    if not page.items and not cursor and requested_sort in ("top", "trending"):
        notice = "No ranking has run yet: showing the most installed first."
        requested_sort = "installs"  # so "show more" continues this list
        page = browse.browse(
            session,
            ANONYMOUS,
            q=q,
            category=category,
            tag=None,
            sort="installs",
            limit=PAGE_SIZE,
            cursor=None,
            character_matches=matcher_for(current_app, session),
        )
    ratings = figures.ratings(session, [card.id for card in page.items])
    next_url = None
    if page.next_cursor:
        args = {k: v for k, v in (("q", q), ("category", category), ("sort", requested_sort)) if v}
        next_url = url_for("web.browse_page", cursor=page.next_cursor, **args)
    template = "web/_cards.html" if request.args.get("partial") == "1" else "web/browse.html"
    return render_template(
        template,
        cards=page.items,
        ratings=ratings,
        q=q or "",
        category=category,
        sort=requested_sort or ("" if q else "new"),
        sorts=SORTS,
        categories=CATEGORIES,
        notice=notice,
        next_url=next_url,
        continued=bool(cursor),
    )


def _installed_version(session, viewer, subagent_id: int) -> int | None:
    if viewer.user_id is None:
        return None
    row = session.exec(
        select(Install.version_id).where(
            Install.user_id == viewer.user_id,
            Install.subagent_id == subagent_id,
            Install.active,
        )
    ).first()
    return row


def _scope_words(scopes: list[str]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(reads, writes) as (scope, what it touches in plain words) pairs."""
    reads, writes = [], []
    for scope in sorted(scopes):
        words = bundles.SCOPE_DESCRIPTIONS.get(scope, scope)
        words = words.removeprefix("reads ").removeprefix("adds to and changes ")
        (writes if scope.endswith(".write") else reads).append((scope, words))
    return reads, writes


@bp.get(f"/s/<{ID}:subagent_id>")
def subagent_page(subagent_id: int):
    session = db()
    viewer = caller()
    subagent, author, latest = catalog.get_visible_detail(session, viewer, subagent_id)
    lineage = browse.lineage(session, viewer, subagent)
    parent = lineage.ancestors[-1].subagent if lineage.ancestors else None
    versions = list(reversed(catalog.list_versions(session, subagent)))
    manifest = latest.manifest if latest else {}
    reads, writes = _scope_words(list(manifest.get("scopes", [])))
    rating, histogram = figures.rating_with_histogram(session, subagent.id)
    score = figures.scores(session, [subagent.id]).get(subagent.id)
    better = None
    if score is not None and score.best_descendant_id not in (None, subagent.id):
        try:
            better = catalog.get_visible(session, viewer, score.best_descendant_id)
        except NotFound:
            better = None
    forks = browse.forks_of(session, viewer, subagent, limit=6, cursor=None)
    preview_url = None
    if latest is not None and can_read_files(session, viewer, subagent, latest):
        preview_url = preview.url_for_version(viewer, subagent.id, latest)
    return render_template(
        "web/subagent.html",
        subagent=subagent,
        author=author,
        latest=latest,
        manifest=manifest,
        reads=reads,
        writes=writes,
        hosts=sorted(manifest.get("hosts", [])),
        versions=versions,
        lineage=lineage,
        parent=parent,
        rating=rating,
        histogram=histogram,
        comments=figures.recent_comments(session, subagent.id),
        better=better,
        better_chance=score.p_descendant_better if score and better else None,
        forks=forks.items,
        more_forks=forks.next_cursor is not None,
        installed_version=_installed_version(session, viewer, subagent.id),
        preview_url=preview_url,
    )


def _sign_in_first(subagent_id: int):
    """Importing and customizing need a person: sign in, then come back to the page."""
    back = url_for("web.subagent_page", subagent_id=subagent_id)
    return redirect(url_for("web.signin_page", next=back))


@bp.post(f"/s/<{ID}:subagent_id>/import")
def import_subagent(subagent_id: int):
    session, viewer = db(), caller()
    if not viewer.is_authenticated:
        return _sign_in_first(subagent_id)
    subagent = catalog.get_visible(session, viewer, subagent_id)
    try:
        result, created = installs.install(
            session, viewer, subagent, version_id=None, source="link", exposure_id=None
        )
    except SprigError as error:
        flash(error.detail, "error")
        return redirect(url_for("web.subagent_page", subagent_id=subagent_id))
    commit()
    message = (
        "Imported into your agent."
        if created
        else "Already in your agent (now the newest version)."
    )
    if result.new_scopes:
        message += (
            " It now also asks to "
            + ", ".join(bundles.SCOPE_DESCRIPTIONS.get(s, s) for s in result.new_scopes)
            + "."
        )
    flash(message, "ok")
    return redirect(url_for("web.subagent_page", subagent_id=subagent_id))


@bp.post(f"/s/<{ID}:subagent_id>/customize")
def customize_subagent(subagent_id: int):
    session, viewer = db(), caller()
    if not viewer.is_authenticated:
        return _sign_in_first(subagent_id)
    subagent = catalog.get_visible(session, viewer, subagent_id)
    text = request.form.get("text", "").strip()
    if not 3 <= len(text) <= 2000 or "\x00" in text:
        flash("Say what to change in 3 to 2,000 characters.", "error")
        return redirect(url_for("web.subagent_page", subagent_id=subagent_id) + "#customize")
    try:
        _row, created = installs.request_fork(session, viewer, subagent, text)
    except SprigError as error:
        flash(error.detail, "error")
        return redirect(url_for("web.subagent_page", subagent_id=subagent_id))
    commit()
    flash(
        "Your request is with the coding agent: it will fork this and make it yours."
        if created
        else "You already asked for exactly that; it is in the queue.",
        "ok",
    )
    return redirect(url_for("web.subagent_page", subagent_id=subagent_id))


@bp.get(f"/s/<{ID}:subagent_id>/tree")
def tree_page(subagent_id: int):
    session = db()
    viewer = caller()
    subagent = catalog.get_visible(session, viewer, subagent_id)
    view = lineage_view.first_view(session, viewer, subagent)
    top = next(n for n in view["nodes"] if n["id"] == view["top"])
    return render_template("web/tree.html", subagent=subagent, view=view, top=top)


@bp.get(f"/s/<{ID}:subagent_id>/tree/children")
def tree_children(subagent_id: int):
    """The next page of a node's forks, as JSON for the tree view."""
    session = db()
    viewer = caller()
    parent = catalog.get_visible(session, viewer, subagent_id)
    cursor = request.args.get("cursor", "")
    if len(cursor) > 200:
        raise BadRequest("The cursor is not one this site made.")
    return jsonify(lineage_view.more_children(session, viewer, parent, cursor))


@bp.get(f"/s/<{ID}:subagent_id>/tree/all")
def tree_all(subagent_id: int):
    """Every node below this one, as JSON, when the lineage is small enough to draw whole."""
    session = db()
    viewer = caller()
    top = catalog.get_visible(session, viewer, subagent_id)
    return jsonify(lineage_view.whole_tree(session, viewer, top))


def _diff_lines(text: str) -> list[tuple[str, str]]:
    """Unified diff text as (kind, line) pairs for colouring: add, remove, hunk or context."""
    kinds = []
    for index, line in enumerate(text.splitlines()):
        if index < 2 and line.startswith(("---", "+++")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "remove"
        else:
            kind = "context"
        kinds.append((kind, line))
    return kinds


@bp.get(f"/s/<{ID}:subagent_id>/diff")
def diff_page(subagent_id: int):
    session = db()
    viewer = caller()
    subagent, author, latest = catalog.get_visible_detail(session, viewer, subagent_id)
    if latest is None:
        raise NotFound(f"Sub-agent {subagent_id} has no version yet.")
    latest = catalog.get_readable_version(session, viewer, subagent, latest.id)
    base = catalog.diff_base(session, viewer, subagent, latest, "parent")
    parent = session.get(SubAgent, subagent.parent_id) if base is not None else None
    diff = bundles.diff_bundles(
        catalog.load_bundle(session, base) if base else None,
        catalog.load_bundle(session, latest),
    )
    for entry in diff["files"]:
        entry["lines"] = _diff_lines(entry["diff"])
    manifest = diff["manifest"]
    return render_template(
        "web/diff.html",
        subagent=subagent,
        author=author,
        latest=latest,
        parent=parent,
        base=base,
        diff=diff,
        scopes_added=[(s, bundles.SCOPE_DESCRIPTIONS.get(s, s)) for s in manifest["scopes_added"]],
        scopes_removed=[
            (s, bundles.SCOPE_DESCRIPTIONS.get(s, s)) for s in manifest["scopes_removed"]
        ],
    )


@bp.get("/me/installs")
def my_installs_page():
    viewer = caller()
    if not viewer.is_authenticated:
        return redirect(url_for("web.signin_page", next=request.full_path))
    cursor = _text_arg("cursor")
    if cursor and len(cursor) > 200:
        raise BadRequest("The cursor is not one this site made.")
    session = db()
    page = installs.my_installs(session, viewer, limit=PAGE_SIZE, cursor=cursor)
    ratings = figures.ratings(session, [item.subagent_id for item in page.items])
    next_url = (
        url_for("web.my_installs_page", cursor=page.next_cursor) if page.next_cursor else None
    )
    return render_template(
        "web/installs.html", items=page.items, ratings=ratings, next_url=next_url
    )


def _demo_people(limit: int = 16) -> list[User]:
    """The demo picker: the most installed creators first, then some people who only import."""
    from sqlmodel import func

    session = db()
    creators = list(
        session.exec(
            select(User)
            .join(SubAgent, SubAgent.author_id == User.id)
            .where(User.kind == "person")
            .group_by(User.id)
            .order_by(func.sum(SubAgent.install_count).desc(), User.id)
            .limit(limit - 4)
        )
    )
    seen = {u.id for u in creators}
    importers = [
        u
        for u in session.exec(
            select(User)
            .join(Install, Install.user_id == User.id)
            .where(User.kind == "person")
            .group_by(User.id)
            .order_by(func.count(Install.id).desc(), User.id)
            .limit(limit)
        )
        if u.id not in seen
    ][:4]
    return creators + importers


@bp.route("/signin", methods=["GET", "POST"])
def signin_page():
    target = signin.same_site_path(request.values.get("next"))
    error = None
    if request.method == "POST":
        try:
            if request.form.get("demo_handle"):
                signin.sign_in_demo_user(request.form["demo_handle"])
            else:
                signin.sign_in_with_token(request.form.get("token", ""))
        except SprigError as problem:
            error = problem.detail
        else:
            return redirect(target)
    demo = signin.demo_signin_enabled()
    return render_template(
        "web/signin.html",
        next=target,
        error=error,
        demo_people=_demo_people() if demo else [],
    ), (400 if error else 200)


@bp.post("/signout")
def signout():
    signin.sign_out()
    return redirect(url_for("web.browse_page"))


@bp.get("/ranking")
def ranking_page():
    """How ranking works: the published formulas and the last run's estimated parameters."""
    session = db()
    last = session.scalars(
        select(RankingRun).where(RankingRun.mode != "skipped").order_by(RankingRun.id.desc())
    ).first()
    return render_template(
        "web/ranking.html", formulas=evolution.ranking.__doc__.strip(), last_run=last
    )
