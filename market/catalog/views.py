"""Browse, the sub-agent page (the share link), the fork tree, the diff, my installs."""

from __future__ import annotations

import json

from flask import (
    current_app,
    flash,
    jsonify,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_babel import gettext, lazy_gettext
from sqlalchemy import and_, bindparam, func, or_
from sqlmodel import Session, select

from evolution.language import reads
from market.catalog import installs, upstream
from market.catalog import queries as browse
from market.catalog import services as catalog
from market.catalog.bundles.diff import diff_bundles
from market.catalog.bundles.manifest import SCOPE_DESCRIPTIONS
from market.catalog.customize_examples import customize_placeholder
from market.catalog.models import CATEGORIES, Install, SubAgent, Version
from market.catalog.schemas import BrowseSort
from market.catalog.search import matcher_for
from market.catalog.serialize import install_page_out
from market.catalog.switch_plans import plan_switch, switch_install
from market.identity.access import (
    can_decide_upstream_update,
    can_read_files,
    hidden_among,
    tree_clause,
    tree_visible,
)
from market.identity.tokens import ANONYMOUS, Principal, caller, reader_language
from market.platform.api_deps import commit, db
from market.platform.db import PerDatabase, id_in, in_bound_ids
from market.platform.errors import BadRequest, NotFound, SprigError, Unprocessable
from market.platform.pagination import encode_cursor
from market.platform.schemas import INT32_MAX, typed_number
from market.ranking.services import listing_language, ranking_figures
from market.usage import queries as figures
from market.usage import ratings
from market.web import preview
from market.web.blueprint import bp, shared_page
from market.web.signin import same_site_path

ID = "int(max=2147483647)"


PAGE_SIZE = 24
# A sub-agent page lists its newest versions, this many at a time ("older versions" goes on).
VERSIONS_SHOWN = 20


# What the rating form offers to tick (the rating service takes any tag; these are what people
# most often say about a tool).
SUGGESTED_TAGS = (
    "love it",
    "crashes",
    "too slow",
    "confusing",
    "wants reminders",
    "needs dark mode",
    "wants export",
)


MAX_QUERY_CHARS = 200


# The sorts the page offers, in order. "top", "trending" and "rising" read the ranking's
# scores (market/ranking/services.py); before any ranking has run, top and trending fall back to the
# most installed, and the page says so.
SORTS = {
    "top": lazy_gettext("Top"),
    "trending": lazy_gettext("Trending"),
    "rising": lazy_gettext("Rising"),
    "new": lazy_gettext("New"),
    "installs": lazy_gettext("Most installed"),
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
        return "installs", gettext(
            "Rankings are not computed yet: showing the most installed first."
        )
    raise BadRequest(f"Unknown sort {requested!r}.")


def _cursor_arg() -> str | None:
    """The page's ``cursor`` argument; one longer than any this site makes is a 400."""
    cursor = _text_arg("cursor")
    if cursor and len(cursor) > 200:
        raise BadRequest("The cursor is not one this site made.")
    return cursor


def _text_arg(name: str) -> str | None:
    value = request.args.get(name, "").strip()
    if "\x00" in value:
        raise BadRequest(f"`{name}` must not contain NUL characters.")
    return value or None


@bp.get("/")
@shared_page
def browse_page():
    q = _text_arg("q")
    if q and len(q) > MAX_QUERY_CHARS:
        raise BadRequest(f"A search is at most {MAX_QUERY_CHARS} characters.")
    category = _text_arg("category")
    if category and category not in CATEGORIES:
        raise BadRequest(f"Unknown category {category!r}.")
    requested_sort = _text_arg("sort")
    sort, notice = _browse_sort(requested_sort, bool(q))
    cursor = _cursor_arg()
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
        matcher=matcher_for(current_app, session),
    )
    if not page.items and not cursor and requested_sort in ("top", "trending"):
        notice = gettext("No ranking has run yet: showing the most installed first.")
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
            matcher=matcher_for(current_app, session),
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
        words = SCOPE_DESCRIPTIONS.get(scope, scope)
        words = words.removeprefix("reads ").removeprefix("adds to and changes ")
        (writes if scope.endswith(".write") else reads).append((scope, words))
    return reads, writes


_FORK_REQUESTS = PerDatabase(
    lambda dialect: select(SubAgent.id, SubAgent.fork_request_text).where(
        in_bound_ids(dialect, SubAgent.id, "ids")
    )
)


def _fork_requests(session, ids: list[int]) -> list[str | None]:
    """What each of these forks was asked for, in the order of ``ids``."""
    if not ids:
        return []
    asked = dict(session.execute(_FORK_REQUESTS(session), {"ids": ids}).all())
    return [asked.get(i) for i in ids]


def _version_number(session, version_id: int | None) -> int | None:
    """The number of a version of the page's sub-agent (one the reader rated), if any."""
    version = session.get(Version, version_id) if version_id else None
    return version.number if version is not None else None


@bp.get(f"/s/<{ID}:subagent_id>")
@shared_page
def subagent_page(subagent_id: int):
    session = db()
    viewer = caller()
    read = catalog.get_visible_detail(session, viewer, subagent_id)
    subagent, author, latest = read.subagent, read.author, read.version
    crumbs = browse.breadcrumb(session, viewer, subagent)
    parent = crumbs.ancestors[-1].subagent if crumbs.ancestors else None
    older_than = typed_number(request.args.get("versions_before", str(INT32_MAX)), INT32_MAX)
    if older_than is None:
        raise BadRequest("'versions_before' is a version number.")
    versions, older = catalog.versions_before(session, subagent, older_than, VERSIONS_SHOWN)
    manifest = latest.manifest if latest else {}
    reads, writes = _scope_words(list(manifest.get("scopes", [])))
    rating, histogram = figures.rating_with_histogram(session, subagent.id)
    reading = reader_language(session, viewer)
    ranked = ranking_figures(
        session, viewer, subagent.id, reading, score=read.score, best=read.best
    )
    better = ranked.best_descendant if ranked is not None else None
    forks = browse.forks_of(session, viewer, subagent, limit=6, cursor=None)
    preview_url = None
    if latest is not None and can_read_files(session, viewer, subagent, latest):
        preview_url = preview.url_for_version(viewer, subagent.id, latest)
    installed_version = _installed_version(session, viewer, subagent.id)
    # Updating to the newest version asks again for the scopes it adds (as installing does).
    update_asks = (
        installs.scopes_to_ask(session, viewer.user_id, subagent, latest)
        if installed_version and latest is not None and installed_version != latest.id
        else []
    )
    # A person rates the version in their agent, else the newest; the form shows what they
    # said last, on whichever version.
    rated_version = (
        catalog.get_version(session, subagent, installed_version)
        if installed_version or subagent.latest_version_id
        else None
    )
    own_rating = (
        figures.own_rating(session, viewer.user_id, subagent.id) if viewer.user_id else None
    )
    # Who may rate is the ratings module's rule: the page shows its reason instead of a form.
    rating_refusal = (
        ratings.may_rate(session, viewer.user_id, rated_version)
        if viewer.user_id and rated_version is not None
        else None
    )
    if rating_refusal is not None:
        rating_refusal = gettext(rating_refusal)
    page = make_response(
        render_template(
            "web/subagent.html",
            subagent=subagent,
            author=author,
            latest=latest,
            manifest=manifest,
            reads=reads,
            writes=writes,
            hosts=sorted(manifest.get("hosts", [])),
            preview_hosts=preview.described_hosts(sorted(manifest.get("hosts", []))),
            versions=versions,
            older_versions=older,
            newest_shown=older_than == INT32_MAX,
            crumbs=crumbs,
            parent=parent,
            rating=rating,
            histogram=histogram,
            comments=figures.recent_comments(session, subagent.id),
            better=better,
            better_chance=ranked.best_probability if better else None,
            # Named when the better branch is in a language the reader does not read (when
            # theirs is unknown: another language than this page's).
            better_language=_other_language(
                ranked.best_language if better else None, reading or listing_language(subagent)
            ),
            forks=forks.items,
            fork_ratings=figures.ratings(session, [fork.id for fork in forks.items]),
            customize_example=customize_placeholder(
                subagent.title,
                subagent.summary,
                subagent.category,
                _fork_requests(session, [fork.id for fork in forks.items]),
            ),
            more_forks=forks.next_cursor is not None,
            installed_version=installed_version,
            update_asks=[(scope, SCOPE_DESCRIPTIONS.get(scope, scope)) for scope in update_asks],
            upstream_offers=upstream.open_offers(session, viewer, subagent),
            near_copies=catalog.offers_for(session, viewer, subagent),
            preview_url=preview_url,
            rated_version=rated_version,
            rating_refusal=rating_refusal,
            own_rating=own_rating,
            own_rating_number=_version_number(
                session, own_rating.version_id if own_rating else None
            ),
            # Tags this person used before stay ticked even when the list does not offer them.
            tag_choices=[
                *SUGGESTED_TAGS,
                *(t for t in (own_rating.tags if own_rating else []) if t not in SUGGESTED_TAGS),
            ],
        )
    )
    page.vary.add("Accept-Language")  # the better branch is chosen for the reader's language
    return page


# What a page calls the languages of ``evolution.language.language_of``.
LANGUAGE_NAMES = {
    "zh": lazy_gettext("Chinese"),
    "ja": lazy_gettext("Japanese"),
    "ko": lazy_gettext("Korean"),
    "en": lazy_gettext("English"),
    "es": lazy_gettext("Spanish"),
    "fr": lazy_gettext("French"),
    "de": lazy_gettext("German"),
    "pt": lazy_gettext("Portuguese"),
    "it": lazy_gettext("Italian"),
    "latin": lazy_gettext("another language"),
}


def _other_language(language: str | None, reading: str) -> str | None:
    """How to name ``language`` to someone reading ``reading``, when they do not read it."""
    if language is None or reads(reading, language):
        return None
    return LANGUAGE_NAMES[language]


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
        installed = installs.install(
            session, viewer, subagent, version_id=None, source="link", exposure_id=None
        )
    except SprigError as error:
        flash(error.detail, "error")
        return redirect(url_for("web.subagent_page", subagent_id=subagent_id))
    commit()
    message = (
        gettext("Imported into your agent.")
        if installed.created
        else gettext("Already in your agent (now the newest version).")
    )
    if installed.new_scopes:
        # The scopes' plain words are the manifest's English vocabulary (as on the page).
        asks = ", ".join(SCOPE_DESCRIPTIONS.get(s, s) for s in installed.new_scopes)
        message += " " + gettext("It now also %(asks)s.", asks=asks)
    flash(message, "ok")
    return redirect(url_for("web.subagent_page", subagent_id=subagent_id))


@bp.post(f"/s/<{ID}:subagent_id>/uninstall")
def uninstall_subagent(subagent_id: int):
    """Take it out of the signed-in person's agent (theirs only: the install is looked up by
    who asks), then back to the page the form was on."""
    session, viewer = db(), caller()
    if not viewer.is_authenticated:
        return _sign_in_first(subagent_id)
    back = same_site_path(
        request.form.get("next") or url_for("web.subagent_page", subagent_id=subagent_id)
    )
    subagent = catalog.get_visible(session, viewer, subagent_id)
    try:
        removed = installs.uninstall(session, viewer, subagent)
    except SprigError as error:
        flash(error.detail, "error")
        return redirect(back)
    commit()
    flash(
        gettext("Removed “%(title)s” from your agent.", title=subagent.title)
        if removed
        else gettext("“%(title)s” was not in your agent.", title=subagent.title),
        "ok",
    )
    return redirect(back)


@bp.post(f"/s/<{ID}:subagent_id>/customize")
def customize_subagent(subagent_id: int):
    session, viewer = db(), caller()
    if not viewer.is_authenticated:
        return _sign_in_first(subagent_id)
    subagent = catalog.get_visible(session, viewer, subagent_id)
    text = request.form.get("text", "").strip()
    if not 3 <= len(text) <= 2000 or "\x00" in text:
        flash(gettext("Say what to change in 3 to 2,000 characters."), "error")
        return redirect(url_for("web.subagent_page", subagent_id=subagent_id) + "#customize")
    try:
        _row, created = installs.request_fork(session, viewer, subagent, text)
    except SprigError as error:
        flash(error.detail, "error")
        return redirect(url_for("web.subagent_page", subagent_id=subagent_id))
    commit()
    flash(
        gettext("Your request is with the coding agent: it will fork this and make it yours.")
        if created
        else gettext("You already asked for exactly that; it is in the queue."),
        "ok",
    )
    return redirect(url_for("web.subagent_page", subagent_id=subagent_id))


@bp.post(f"/s/<{ID}:subagent_id>/adopt-parent")
def adopt_parent(subagent_id: int):
    """Accept the near-copy offer the author's page showed: publish it as the original's
    fork."""
    session, viewer = db(), caller()
    if not viewer.is_authenticated:
        return _sign_in_first(subagent_id)
    back = url_for("web.subagent_page", subagent_id=subagent_id)
    parent_id = typed_number(request.form.get("parent_id", ""), INT32_MAX)
    if not parent_id:
        flash(gettext("Choose the sub-agent to fork from the offer."), "error")
        return redirect(back)
    try:
        subagent, _changed = catalog.adopt_parent(session, viewer, subagent_id, parent_id)
    except SprigError as error:
        flash(error.detail, "error")
        return redirect(back)
    commit()
    parent = session.get(SubAgent, subagent.parent_id)
    flash(gettext("Published as a fork of “%(title)s”.", title=parent.title), "ok")
    return redirect(back)


@bp.post(f"/s/<{ID}:subagent_id>/near-copies/decline")
def decline_near_copies(subagent_id: int):
    session, viewer = db(), caller()
    if not viewer.is_authenticated:
        return _sign_in_first(subagent_id)
    back = url_for("web.subagent_page", subagent_id=subagent_id)
    try:
        catalog.decline_near_copies(session, viewer, subagent_id)
    except SprigError as error:
        flash(error.detail, "error")
        return redirect(back)
    commit()
    flash(gettext("Kept as your own sub-agent."), "ok")
    return redirect(back)


@bp.get("/moderation/reports")
def reports_page():
    """The moderators' queue: open reports, a near-copy's with its evidence."""
    viewer = caller()
    if not viewer.is_authenticated:
        return redirect(url_for("web.signin_page", next=request.full_path))
    page = browse.open_reports(db(), viewer, limit=PAGE_SIZE, cursor=_cursor_arg())
    next_url = url_for("web.reports_page", cursor=page.next_cursor) if page.next_cursor else None
    return render_template("web/reports.html", items=page.items, next_url=next_url)


@bp.get(f"/s/<{ID}:subagent_id>/tree")
@shared_page
def tree_page(subagent_id: int):
    session = db()
    viewer = caller()
    subagent = catalog.get_visible(session, viewer, subagent_id)
    view = first_view(session, viewer, subagent)
    top = next(n for n in view["nodes"] if n["id"] == view["top"])
    return render_template("web/tree.html", subagent=subagent, view=view, top=top)


@bp.get(f"/s/<{ID}:subagent_id>/tree/children")
@shared_page
def tree_children(subagent_id: int):
    """The next page of a node's forks, as JSON for the tree view."""
    session = db()
    viewer = caller()
    parent = catalog.get_visible(session, viewer, subagent_id)
    cursor = request.args.get("cursor", "")
    if len(cursor) > 200:
        raise BadRequest("The cursor is not one this site made.")
    return jsonify(more_children(session, viewer, parent, cursor))


@bp.get(f"/s/<{ID}:subagent_id>/tree/all")
@shared_page
def tree_all(subagent_id: int):
    """Every node below this one, as JSON, when the lineage is small enough to draw whole."""
    session = db()
    viewer = caller()
    top = catalog.get_visible(session, viewer, subagent_id)
    return jsonify(whole_tree(session, viewer, top))


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
@shared_page
def diff_page(subagent_id: int):
    session = db()
    viewer = caller()
    read = catalog.get_visible_detail(session, viewer, subagent_id)
    subagent, author, latest = read.subagent, read.author, read.version
    if latest is None:
        raise NotFound(f"Sub-agent {subagent_id} has no version yet.")
    latest = catalog.get_readable_version(session, viewer, subagent, latest.id)
    base = catalog.diff_base(session, viewer, subagent, latest, "parent")
    parent = session.get(SubAgent, subagent.parent_id) if base is not None else None
    diff = diff_bundles(
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
        scopes_added=[(s, SCOPE_DESCRIPTIONS.get(s, s)) for s in manifest["scopes_added"]],
        scopes_removed=[(s, SCOPE_DESCRIPTIONS.get(s, s)) for s in manifest["scopes_removed"]],
    )


def _signed_in_offer(subagent_id: int, proposal_id: int) -> upstream.Offer:
    """The proposal, when it is one of this sub-agent's the signed-in viewer may see."""
    offer = upstream.get_offer(db(), caller(), proposal_id)
    if offer.fork.id != subagent_id:
        raise NotFound(f"No upstream update {proposal_id}.")
    return offer


@bp.get(f"/s/<{ID}:subagent_id>/upstream/<{ID}:proposal_id>")
def upstream_page(subagent_id: int, proposal_id: int):
    """A proposed merge of the parent's new version: per file, what the merge did and the
    change it makes to the fork's newest version (conflicts between their markers)."""
    viewer = caller()
    if not viewer.is_authenticated:
        return redirect(url_for("web.signin_page", next=request.path))
    session = db()
    offer = _signed_in_offer(subagent_id, proposal_id)
    diff = upstream.offer_diff(session, offer)
    for entry in diff["files"] if diff else ():
        entry["lines"] = _diff_lines(entry["diff"])
    return render_template(
        "web/upstream.html",
        offer=offer,
        proposal=offer.proposal,
        diff=diff,
        diffs={entry["path"]: entry for entry in diff["files"]} if diff else {},
        scopes_added=[(s, SCOPE_DESCRIPTIONS.get(s, s)) for s in offer.proposal.added_scopes],
        may_decide=can_decide_upstream_update(viewer, offer.fork),
    )


def _upstream_action(subagent_id: int, proposal_id: int, act):
    """Run a form's decision on a proposal; its refusal is shown on the proposal's page."""
    viewer = caller()
    if not viewer.is_authenticated:
        return _sign_in_first(subagent_id)
    back = url_for("web.upstream_page", subagent_id=subagent_id, proposal_id=proposal_id)
    _signed_in_offer(subagent_id, proposal_id)
    try:
        message, destination = act(db(), viewer)
    except SprigError as error:
        flash(error.detail, "error")
        return redirect(back)
    commit()
    flash(message, "ok")
    return redirect(destination or back)


@bp.post(f"/s/<{ID}:subagent_id>/upstream/<{ID}:proposal_id>/accept")
def accept_upstream(subagent_id: int, proposal_id: int):
    def act(session, viewer):
        offer, version, _created = upstream.accept(session, viewer, proposal_id)
        message = gettext(
            "Merged: v%(number)s has the change of %(title)s v%(upstream)s.",
            number=version.number,
            title=offer.parent.title,
            upstream=offer.upstream.number,
        )
        return message, url_for("web.subagent_page", subagent_id=subagent_id)

    return _upstream_action(subagent_id, proposal_id, act)


@bp.post(f"/s/<{ID}:subagent_id>/upstream/<{ID}:proposal_id>/decline")
def decline_upstream(subagent_id: int, proposal_id: int):
    def act(session, viewer):
        offer = upstream.decline(session, viewer, proposal_id)
        message = gettext(
            "Declined the update from %(title)s v%(upstream)s.",
            title=offer.parent.title,
            upstream=offer.upstream.number,
        )
        return message, url_for("web.subagent_page", subagent_id=subagent_id)

    return _upstream_action(subagent_id, proposal_id, act)


@bp.post(f"/s/<{ID}:subagent_id>/upstream/<{ID}:proposal_id>/refresh")
def refresh_upstream(subagent_id: int, proposal_id: int):
    def act(session, viewer):
        offer = upstream.refresh(session, viewer, proposal_id)
        message = gettext(
            "Merged again onto v%(number)s: review it below.", number=offer.current.number
        )
        return message, None

    return _upstream_action(subagent_id, proposal_id, act)


@bp.get(f"/s/<{ID}:subagent_id>/switch/<{ID}:target_id>")
def switch_plan_page(subagent_id: int, target_id: int):
    """What becomes of the data this sub-agent keeps if the reader switches to ``target_id``
    (the better branch the sub-agent page suggests), before any action."""
    session = db()
    viewer = caller()
    try:
        planned = plan_switch(session, viewer, subagent_id, target_id)
    except Unprocessable as refusal:
        # Both are visible (a hidden one is a 404 before any refusal): say why there is no plan.
        return render_template(
            "web/switch_plan.html",
            current=catalog.get_visible(session, viewer, subagent_id),
            target=catalog.get_visible(session, viewer, target_id),
            planned=None,
            other_lineage=refusal.errors[0]["message"] == "another lineage",
        )
    return render_template(
        "web/switch_plan.html",
        current=planned.current,
        target=planned.target,
        planned=planned,
        # What the page says for each defaulted field: its value as JSON.
        defaults=[(name, json.dumps(value)) for name, value in planned.plan.defaults.items()],
        new_scopes=[(s, SCOPE_DESCRIPTIONS.get(s, s)) for s in planned.new_scopes],
    )


@bp.post(f"/s/<{ID}:subagent_id>/switch/<{ID}:target_id>")
def switch_subagent(subagent_id: int, target_id: int):
    """The plan page's button: the person saw the plan (the losses it names, the scopes it
    asks for, both sent back with the form) and moves their install to the target version
    they were shown; a plan changed since is refused and the page shown again."""
    session, viewer = db(), caller()
    if not viewer.is_authenticated:
        return _sign_in_first(subagent_id)
    back = url_for("web.switch_plan_page", subagent_id=subagent_id, target_id=target_id)
    try:
        shown_version = int(request.form.get("to_version_id", ""))
    except ValueError:
        raise BadRequest("The switch form names the version it showed.") from None
    try:
        switched = switch_install(
            session,
            viewer,
            subagent_id,
            target_id,
            target_version_id=shown_version,
            accept_losses=request.form.get("accept_losses") == "1",
            grant_scopes=request.form.getlist("grant_scopes"),
        )
    except SprigError as error:
        if isinstance(error, NotFound):
            raise
        flash(error.detail, "error")
        return redirect(back)
    commit()
    flash(gettext("Switched to %(title)s.", title=switched.planned.target.title), "ok")
    return redirect(url_for("web.subagent_page", subagent_id=target_id))


@bp.get("/me/installs")
def my_installs_page():
    viewer = caller()
    if not viewer.is_authenticated:
        return redirect(url_for("web.signin_page", next=request.full_path))
    cursor = _cursor_arg()
    session = db()
    page = install_page_out(installs.my_installs(session, viewer, limit=PAGE_SIZE, cursor=cursor))
    ratings = figures.ratings(session, [item.subagent_id for item in page.items])
    next_url = (
        url_for("web.my_installs_page", cursor=page.next_cursor) if page.next_cursor else None
    )
    return render_template(
        "web/installs.html", items=page.items, ratings=ratings, next_url=next_url
    )


@bp.get("/me/fork-requests")
def my_fork_requests_page():
    viewer = caller()
    if not viewer.is_authenticated:
        return redirect(url_for("web.signin_page", next=request.full_path))
    cursor = _cursor_arg()
    page = installs.my_fork_requests(db(), viewer, limit=PAGE_SIZE, cursor=cursor)
    next_url = (
        url_for("web.my_fork_requests_page", cursor=page.next_cursor) if page.next_cursor else None
    )
    return render_template("web/fork_requests.html", items=page.items, next_url=next_url)


# ---- the fork tree view: nodes of a lineage with their size, colour and flags.
# The first answer is small whatever the lineage's size: the top few children under each node
# (most installed first), a few levels deep, plus every node on the path to the sub-agent being
# viewed and on the path to the lineage's best branch. The page then asks for more under any
# node ("show more") a page at a time, or for the whole lineage when it is small enough to draw.


FIRST_DEPTH = 6


FIRST_CHILDREN = 3


FIRST_NODES = 150


PAGE_CHILDREN = 12


WHOLE_TREE_MAX = 5000


_NODE_COLUMNS = (
    SubAgent.id,
    SubAgent.parent_id,
    SubAgent.depth,
    SubAgent.title,
    SubAgent.status,
    SubAgent.install_count,
    SubAgent.fork_count,
)


def top_of_lineage(session: Session, viewer: Principal, subagent: SubAgent) -> int:
    """The highest ancestor from which every node down to ``subagent`` is visible to the
    viewer (the root, unless part of the path is hidden from them)."""
    chain = [int(i) for i in subagent.ancestry.split("/") if i]
    hidden = hidden_among(session, viewer, chain)  # no query for a root
    top = subagent.id
    for node_id in reversed(chain):
        if node_id in hidden:
            break
        top = node_id
    return top


def _path_below(top_id: int, node_id: int, ancestry: str | None) -> list[int]:
    """Ids from just below ``top_id`` down to ``node_id`` (empty if it is not below it)."""
    if ancestry is None:
        return []
    chain = [int(i) for i in ancestry.split("/") if i] + [node_id]
    if top_id not in chain:
        return []
    return chain[chain.index(top_id) + 1 :]


_ANCESTRY_OF = select(SubAgent.ancestry).where(SubAgent.id == bindparam("subagent_id"))


def first_view(session: Session, viewer: Principal, focus: SubAgent) -> dict:
    top_id = top_of_lineage(session, viewer, focus)
    top = focus if top_id == focus.id else session.get(SubAgent, top_id)
    # The top's own parent is never drawn, so the rows are read without the check on it
    # that browse.subtree makes.
    tree = browse.subtree_rows(
        session,
        viewer,
        top,
        depth=FIRST_DEPTH,
        max_children=FIRST_CHILDREN,
        max_nodes=FIRST_NODES,
    )
    rows = {n.id: {**_row(n), "parent": n.parent_id if n.id != top_id else None} for n in tree}
    scores = figures.scores(session, list(rows))
    # The ranking's best branch of the whole lineage, and the way down to the viewed node,
    # are always drawn, even when they are not among the most installed children.
    top_score = scores.get(top_id)
    best_id = top_score.best_descendant_id if top_score else None
    best_path = []
    if best_id and best_id != top_id:
        best_ancestry = session.execute(_ANCESTRY_OF, {"subagent_id": best_id}).scalar()
        best_path = _path_below(top_id, best_id, best_ancestry)
    focus_path = _path_below(top_id, focus.id, focus.ancestry)
    missing = [i for i in dict.fromkeys([*best_path, *focus_path]) if i not in rows]
    if missing:
        for row in session.execute(
            select(*_NODE_COLUMNS).where(id_in(session, SubAgent.id, missing), tree_clause(viewer))
        ):
            rows[row.id] = {**_row(row), "extra": True}
        scores.update(figures.scores(session, missing))
    # A path node the viewer may not see ends the highlighted path there.
    best_path = _visible_prefix(best_path, rows)
    _attach_children_cursors(rows, top_id)
    nodes = _decorate(session, list(rows.values()), scores)
    on_best = set(best_path)
    for node in nodes:
        node["best"] = node["id"] in on_best
        node["focus"] = node["id"] == focus.id
    lineage_size = _lineage_size(session, viewer, top)
    return {
        "top": top_id,
        "focus": focus.id,
        "best": best_path[-1] if best_path else None,
        "size": lineage_size,
        "whole_tree_max": WHOLE_TREE_MAX,
        "nodes": nodes,
    }


def _row(row) -> dict:
    return {
        "id": row.id,
        "parent": row.parent_id,
        "depth": row.depth,
        "title": row.title,
        "status": row.status,
        "installs": row.install_count,
        "forks": row.fork_count,
    }


def _visible_prefix(path: list[int], rows: dict) -> list[int]:
    visible = []
    for node_id in path:
        if node_id not in rows:
            break
        visible.append(node_id)
    return visible


def _attach_children_cursors(rows: dict, top_id: int) -> None:
    """For a node with forks left to show, the cursor that continues its children list after
    the shown ones (the same order and cursor ``browse.forks_of`` uses)."""
    children: dict[int, list[dict]] = {}
    for row in rows.values():
        if row["id"] != top_id and row["parent"] is not None:
            children.setdefault(row["parent"], []).append(row)
    for row in rows.values():
        shown = children.get(row["id"], [])
        # Path nodes drawn out of rank order do not move the cursor: the next page starts
        # after the last child that was drawn for its rank (repeats are merged by the page).
        ranked = sorted(
            (r for r in shown if not r.get("extra")), key=lambda r: (-r["installs"], r["id"])
        )
        row["shown"] = len(shown)
        if row["forks"] > len(shown):
            row["more"] = encode_cursor(ranked[-1]["installs"], ranked[-1]["id"]) if ranked else ""
        else:
            row["more"] = None
    for row in rows.values():
        row.pop("extra", None)


def _decorate(session: Session, rows: list[dict], scores: dict | None = None) -> list[dict]:
    """Size and colour: active users, and quality from the ranking or the ratings.
    ``scores``: the rows' ranking figures when the caller has read them already."""
    ids = [r["id"] for r in rows]
    ratings = figures.ratings(session, ids)
    if scores is None:
        scores = figures.scores(session, ids)
    active = figures.average_daily_users(session, ids)
    for row in rows:
        level = figures.quality_level(scores.get(row["id"]), ratings.get(row["id"]))
        row["active"] = round(active.get(row["id"], 0.0), 1)
        row["quality"] = None if level is None else round(level, 3)
        row["word"] = figures.quality_word(level)
    return rows


def _below(is_root: bool):
    """SQL for the nodes strictly below a top (their ancestry ids start with its path), its
    values bound by ``_below_values``: for a root, its whole lineage but itself."""
    in_lineage = SubAgent.root_id == bindparam("root_id")
    if is_root:
        return and_(in_lineage, SubAgent.id != bindparam("top_id"))
    return and_(
        in_lineage,
        or_(
            SubAgent.ancestry == bindparam("prefix"),
            SubAgent.ancestry.startswith(bindparam("deeper")),
        ),
    )


def _below_values(top: SubAgent) -> dict:
    prefix = f"{top.ancestry}/{top.id}" if top.ancestry else str(top.id)
    root_id = top.id if top.parent_id is None else top.root_id
    return {"root_id": root_id, "top_id": top.id, "prefix": prefix, "deeper": prefix + "/"}


# Per kind of top (a root or not) and of viewer: a tree page counts its lineage at every view.
_LINEAGE_SIZE_QUERIES = {
    (is_root, signed_in): select(func.count(SubAgent.id)).where(
        _below(is_root), tree_visible(SubAgent, bindparam("viewer_id") if signed_in else None)
    )
    for is_root in (False, True)
    for signed_in in (False, True)
}


def _lineage_size(session: Session, viewer: Principal, top: SubAgent) -> int:
    """Nodes of the lineage the viewer may see (an upper bound when some hang under hidden
    ones), counted through the root index."""
    statement = _LINEAGE_SIZE_QUERIES[top.parent_id is None, viewer.user_id is not None]
    values = {**_below_values(top), "viewer_id": viewer.user_id}
    return int(session.execute(statement, values).scalar_one()) + 1


def more_children(
    session: Session, viewer: Principal, parent: SubAgent, cursor: str | None
) -> dict:
    """The next page of a node's children, most installed first."""
    page = browse.forks_of(session, viewer, parent, limit=PAGE_CHILDREN, cursor=cursor or None)
    rows = [
        {
            "id": card.id,
            "parent": parent.id,
            "depth": card.depth,
            "title": card.title,
            "status": card.status,
            "installs": card.install_count,
            "forks": card.fork_count,
            "shown": 0,
            "more": "" if card.fork_count else None,
            "best": False,
            "focus": False,
        }
        for card in page.items
    ]
    return {"parent": parent.id, "nodes": _decorate(session, rows), "more": page.next_cursor}


def whole_tree(session: Session, viewer: Principal, top: SubAgent) -> dict:
    """Every node below ``top`` the viewer may see, when there are at most WHOLE_TREE_MAX.
    A node under a hidden one is left out with it: the tree never shows a gap's far side."""
    rows = list(
        session.execute(
            select(*_NODE_COLUMNS)
            .where(_below(top.parent_id is None), tree_clause(viewer))
            .order_by(SubAgent.depth, SubAgent.install_count.desc(), SubAgent.id)
            .limit(WHOLE_TREE_MAX + 1),
            _below_values(top),
        )
    )
    if len(rows) > WHOLE_TREE_MAX:
        return {"top": top.id, "too_large": True, "nodes": []}
    kept = {top.id}
    nodes = []
    for row in rows:  # by depth: a parent is always seen before its children
        if row.parent_id in kept:
            kept.add(row.id)
            nodes.append(_row(row))
    children: dict[int, int] = {}
    for node in nodes:
        children[node["parent"]] = children.get(node["parent"], 0) + 1
    for node in nodes:
        node["shown"] = children.get(node["id"], 0)
        node["more"] = None
        node["best"] = node["focus"] = False
    return {"top": top.id, "too_large": False, "nodes": _decorate(session, nodes)}
