"""Reading the catalog: browse and search, fork children, lineage and subtrees."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import and_, bindparam, literal, literal_column, or_
from sqlalchemy.orm import aliased
from sqlmodel import Session, func, select

from evolution.clones import collapse, first_groups, spread_lineages
from market.catalog.models import NearCopyOffer, Report, SubAgent, SubAgentTag
from market.catalog.search import TextMatcher, relevant_ids
from market.identity.access import (
    can_moderate,
    can_view,
    hidden_among,
    listed_clause,
    tree_visible,
)
from market.identity.models import User
from market.identity.tokens import Principal
from market.platform.db import PerDatabase, id_in, in_bound_ids, ranked_in
from market.platform.errors import BadRequest, Forbidden
from market.platform.pagination import decode_cursor, decode_offset, encode_cursor
from market.ranking.models import SubAgentScore

if TYPE_CHECKING:
    from market.catalog.services import Link

MAX_SEARCH_OFFSET = 1000
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class CardAuthor:
    handle: str
    display_name: str


@dataclass
class Card:
    """What a list shows of a sub-agent. ``parent_id`` is None for a root, and for a fork of
    something the viewer may not see."""

    id: int
    title: str
    summary: str
    category: str
    tags: list[str]
    author: CardAuthor
    visibility: str
    status: str
    parent_id: int | None
    depth: int
    install_count: int
    fork_count: int
    created_at: datetime
    # In a collapsed list: the clones hidden under this card (``evolution.clones``).
    similar_count: int = 0


@dataclass
class CardPage:
    items: list[Card]
    next_cursor: str | None


@dataclass
class Ancestor:
    """One step of a lineage: the ancestor's card, or ``hidden`` (and no card) for one the
    viewer may not see."""

    depth: int
    hidden: bool = False
    subagent: Card | None = None


@dataclass
class LineagePath:
    subagent_id: int
    root_id: int | None
    ancestors: list[Ancestor]  # root first, parent last


@dataclass
class SubtreeNode:
    id: int
    parent_id: int | None
    depth: int
    title: str
    status: str
    install_count: int
    fork_count: int
    shown_children: int


@dataclass
class Subtree:
    root_id: int
    depth: int
    nodes: list[SubtreeNode]
    truncated: bool


# Only what a card shows: loading whole rows (stories of up to 4,000 characters) into ORM
# objects cost more than the query on every page.
_CARD_COLUMNS = (
    SubAgent.id,
    SubAgent.title,
    SubAgent.summary,
    SubAgent.category,
    SubAgent.tags,
    SubAgent.visibility,
    SubAgent.status,
    SubAgent.parent_id,
    SubAgent.depth,
    SubAgent.install_count,
    SubAgent.fork_count,
    SubAgent.created_at,
    SubAgent.author_id,
    User.handle,
    User.display_name,
)


def _with_author(*where):
    """Card columns joined to their authors: one round trip for a page of cards."""
    return select(*_CARD_COLUMNS).join(User, User.id == SubAgent.author_id).where(*where)


def _card(row) -> Card:
    return Card(
        id=row.id,
        title=row.title,
        summary=row.summary,
        category=row.category,
        tags=row.tags,
        author=CardAuthor(handle=row.handle, display_name=row.display_name),
        visibility=row.visibility,
        status=row.status,
        parent_id=row.parent_id,
        depth=row.depth,
        install_count=row.install_count,
        fork_count=row.fork_count,
        created_at=row.created_at,
    )


# Per database: on PostgreSQL the ids are one array parameter, so the text is the same at
# any depth and is prepared once.
_ancestors_query = PerDatabase(
    lambda dialect: _with_author(in_bound_ids(dialect, SubAgent.id, "ids"))
)


def _cards(
    rows,
    session: Session | None = None,
    viewer: Principal | None = None,
    *,
    known: dict[int, bool] | None = None,
) -> list[Card]:
    """Cards for rows; with a session and viewer, parents the viewer may not see are blanked.
    ``known`` maps ids whose visibility the caller already holds to "hidden?", so the query
    asks only about the others (often none)."""
    cards = [_card(row) for row in rows]
    if session is not None and viewer is not None:
        known = known or {}
        parents = {c.parent_id for c in cards if c.parent_id is not None}
        hidden = {i for i in parents if known.get(i)}
        hidden |= hidden_among(session, viewer, parents - known.keys())
        for card in cards:
            # A fork of something the viewer may not see names no parent: the id alone
            # would reveal that the hidden one exists.
            if card.parent_id in hidden:
                card.parent_id = None
    return cards


def search_terms(q: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(q)][:12]


# A search ranks the best matches of one engine (``market.catalog.search``), the same for every
# script; a collapsed list (a search, or the top and trending sorts) is cut from this many of
# its best rows, so a page costs the same at 100k sub-agents as at 1k.
COLLAPSED_POOL = 300
# Variety across lineages in the top and trending sorts: any LINEAGE_WINDOW consecutive cards
# (a web page) hold at most PER_LINEAGE of one fork family while others are left to show.
LINEAGE_WINDOW = 24
PER_LINEAGE = 2


def _search_clause(
    session: Session, viewer: Principal, q: str, category: str | None, matcher: TextMatcher
):
    """The clause, the ORDER BY and the join (``market.platform.db.ranked_in``) of a search:
    the listed sub-agents the engine finds, best first, and the viewer's own unlisted ones whose
    title or summary contains the text (the engine indexes only what is listed)."""
    ids = relevant_ids(matcher, q, category=category, limit=COLLAPSED_POOL)
    match, position, join = ranked_in(session, SubAgent.id, ids)
    if viewer.user_id is not None:
        contains = or_(
            SubAgent.title.contains(q, autoescape=True),
            SubAgent.summary.contains(q, autoescape=True),
        )
        match = or_(match, and_(SubAgent.author_id == viewer.user_id, contains))
    if not ids:  # only the viewer's own, if any: newest first
        return match, literal(0), join
    # The viewer's own unlisted matches are not among ``ids``: they follow the ranked ones.
    return match, func.coalesce(position, len(ids) + 1), join


def browse(
    session: Session,
    viewer: Principal,
    *,
    q: str | None,
    category: str | None,
    tag: str | None,
    sort: str | None,
    limit: int,
    cursor: str | None,
    matcher: TextMatcher,
) -> CardPage:
    """A page of listed sub-agents; ``matcher`` (``market.catalog.search``) answers searches.

    A search in relevance order and the top and trending sorts show one card per tool: clones
    (``evolution.clones``) are hidden under the best placed one, which counts them in
    ``similar_count``; top and trending also spread the fork families (LINEAGE_WINDOW)."""
    searching = bool(q and _WORD.search(q))
    sort = sort or ("relevance" if searching else "new")
    where = [listed_clause(viewer)]
    if category:
        where.append(SubAgent.category == category)
    if tag:
        where.append(
            SubAgent.id.in_(select(SubAgentTag.subagent_id).where(SubAgentTag.tag == tag.lower()))
        )
    rank = None
    if searching:
        match, rank, join = _search_clause(session, viewer, q, category, matcher)
        where.append(match)

    if sort == "relevance" and rank is not None:
        order = (rank, SubAgent.id.desc())
        return _collapsed_page(
            session, viewer, where, order, limit, cursor, spread=False, join=join
        )
    if sort in SCORE_SORTS:
        return _by_score(session, viewer, where, sort, limit, cursor)
    statement = _with_author(*where)
    if sort == "installs":
        key_column, shape = SubAgent.install_count, (int, int)
    else:
        key_column, shape = SubAgent.created_at, (str, int)
    if cursor:
        key, last_id = decode_cursor(cursor, shape)
        if shape[0] is str:
            try:
                key = datetime.fromisoformat(key)
            except ValueError:
                raise BadRequest("The cursor is not one this API made.") from None
        statement = statement.where(
            or_(key_column < key, and_(key_column == key, SubAgent.id < last_id))
        )
    rows = list(
        session.exec(statement.order_by(key_column.desc(), SubAgent.id.desc()).limit(limit + 1))
    )
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        key = last.install_count if sort == "installs" else last.created_at.isoformat()
        next_cursor = encode_cursor(key, last.id)
    return CardPage(items=_cards(rows[:limit], session, viewer), next_cursor=next_cursor)


def _collapsed_page(
    session: Session,
    viewer: Principal,
    where: list,
    order: tuple,
    limit: int,
    cursor: str | None,
    *,
    spread: bool,
    sort_key=None,
    join=None,
) -> CardPage:
    """A page of the list's first COLLAPSED_POOL rows in ``order``, collapsed into one card per
    tool (and with ``spread``, families spread), cut by offset: the collapsed order depends only
    on the pool, so no card is on two pages, and a hidden clone is reached from its card's
    lineage. When a full pool of a score sort (``sort_key``) is shown, the cursor continues
    after its last row in the plain order (``_by_score``). ``join`` adds what ``order`` reads
    from outside the sub-agent table (a search's positions)."""
    offset = min(decode_offset(cursor), MAX_SEARCH_OFFSET)
    # What collapsing reads of a row (``evolution.clones.Listing``): the rows are collapsed as
    # they come, with no object built per row.
    columns = [
        SubAgent.id,
        SubAgent.root_id,
        SubAgent.title,
        SubAgent.summary,
    ]
    if sort_key is not None:
        columns.append(sort_key.label("sort_key"))
    statement = select(*columns).where(*where)
    if sort_key is not None:
        statement = statement.join(SubAgentScore, SubAgentScore.subagent_id == SubAgent.id)
    if join is not None:
        statement = join(statement)
    rows = list(session.execute(statement.order_by(*order).limit(COLLAPSED_POOL)))
    if spread:
        # Spreading reorders every group, so all of them are needed.
        groups = spread_lineages(collapse(rows), window=LINEAGE_WINDOW, per_lineage=PER_LINEAGE)
        more = offset + limit < len(groups)
    else:
        groups, more = first_groups(rows, offset + limit)
    shown = groups[offset : offset + limit]
    next_cursor = None
    if more:
        next_cursor = encode_cursor(offset + limit)
    elif sort_key is not None and len(rows) == COLLAPSED_POOL:
        next_cursor = encode_cursor(rows[-1].sort_key, rows[-1].id)
    ids = [group.representative.id for group in shown]
    found = (
        {row.id: row for row in session.exec(_with_author(id_in(session, SubAgent.id, ids)))}
        if ids
        else {}
    )
    cards = _cards([found[i] for i in ids], session, viewer)
    for card, group in zip(cards, shown, strict=True):
        card.similar_count = len(group.members)
    return CardPage(items=cards, next_cursor=next_cursor)


# The ranking's sorts (market/ranking/services.py writes the scores; /ranking explains them). A
# sub-agent appears in them once a ranking run has scored it (within minutes of publishing).
SCORE_SORTS = {
    "top": SubAgentScore.display,
    "trending": SubAgentScore.trending,
    "rising": SubAgentScore.rising,
}
# The sorts whose first COLLAPSED_POOL rows are collapsed and spread across families.
COLLAPSED_SORTS = ("top", "trending")


def _by_score(session, viewer, where: list, sort: str, limit: int, cursor: str | None) -> CardPage:
    column = SCORE_SORTS[sort]
    where = [*where, column.is_not(None)]
    if column is SubAgentScore.rising:
        # Only forks that more likely than not beat their parent are "rising".
        where.append(column > 0)
    order = (column.desc(), SubAgent.id.desc())
    if sort in COLLAPSED_SORTS and (cursor is None or _is_offset_cursor(cursor)):
        return _collapsed_page(
            session, viewer, where, order, limit, cursor, spread=True, sort_key=column
        )
    statement = _with_author(*where).join(SubAgentScore, SubAgentScore.subagent_id == SubAgent.id)
    if cursor:
        key, last_id = decode_cursor(cursor, (float, int))
        statement = statement.where(or_(column < key, and_(column == key, SubAgent.id < last_id)))
    rows = list(
        session.exec(
            statement.add_columns(column.label("sort_key")).order_by(*order).limit(limit + 1)
        )
    )
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        next_cursor = encode_cursor(last.sort_key, last.id)
    return CardPage(items=_cards(rows[:limit], session, viewer), next_cursor=next_cursor)


def _is_offset_cursor(cursor: str) -> bool:
    """Whether a score sort's cursor is a place in its collapsed pool (one number), rather than
    a row to continue after in the plain order (a score and an id)."""
    try:
        decode_cursor(cursor, (int,))
    except BadRequest:
        return False
    return True


def _forks_query(signed_in: bool, after: bool):
    """A page of a sub-agent's forks, most installed first, as a viewer sees the tree; with
    ``after``, those after a cursor's (installs, id). Built once per kind of viewer and
    page (a sub-agent page reads its forks at every view)."""
    viewer_id = bindparam("viewer_id") if signed_in else None
    statement = _with_author(
        SubAgent.parent_id == bindparam("parent_id"), tree_visible(SubAgent, viewer_id)
    )
    if after:
        installs = bindparam("installs")
        statement = statement.where(
            or_(
                SubAgent.install_count < installs,
                and_(SubAgent.install_count == installs, SubAgent.id > bindparam("last_id")),
            )
        )
    return statement.order_by(SubAgent.install_count.desc(), SubAgent.id).limit(bindparam("limit"))


_FORKS_QUERIES = {
    (signed_in, after): _forks_query(signed_in, after)
    for signed_in in (False, True)
    for after in (False, True)
}


def forks_of(
    session: Session, viewer: Principal, parent: SubAgent, *, limit: int, cursor: str | None
) -> CardPage:
    values = {"parent_id": parent.id, "viewer_id": viewer.user_id, "limit": limit + 1}
    if cursor:
        values["installs"], values["last_id"] = decode_cursor(cursor, (int, int))
    statement = _FORKS_QUERIES[viewer.user_id is not None, bool(cursor)]
    rows = list(session.execute(statement, values))
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        next_cursor = encode_cursor(last.install_count, last.id)
    # Every card's parent is ``parent``, whose visibility is at hand.
    known = {parent.id: not can_view(viewer, parent)}
    return CardPage(
        items=_cards(rows[:limit], session, viewer, known=known), next_cursor=next_cursor
    )


def lineage(session: Session, viewer: Principal, subagent: SubAgent) -> LineagePath:
    """Ancestors root first. One an ordinary viewer may not see stays a hidden placeholder so
    the path still ends at its root without revealing what the hidden one is."""
    ids = _ancestry_ids(subagent)
    nodes = _ancestors(session, viewer, list(enumerate(ids)))
    root_id = subagent.root_id if (not ids or not nodes[0].hidden) else None
    return LineagePath(subagent_id=subagent.id, root_id=root_id, ancestors=nodes)


# A sub-agent page's breadcrumb names a lineage's ancestors up to CRUMBS_WHOLE of them; a
# deeper one's root and its last CRUMBS_LAST, with how many forks lie between (the fork tree
# shows them). A lineage may be 300 forks deep (``services.MAX_FORK_DEPTH``).
CRUMBS_WHOLE = 5
CRUMBS_LAST = 3


@dataclass
class Breadcrumb:
    ancestors: list[Ancestor]  # those named, root first, parent last
    elided: int  # ancestors between the root and the last named ones


def breadcrumb(session: Session, viewer: Principal, subagent: SubAgent) -> Breadcrumb:
    """The ancestors a sub-agent page names, read alone (not the whole lineage)."""
    ids = _ancestry_ids(subagent)
    named = list(enumerate(ids))
    if len(ids) > CRUMBS_WHOLE:
        named = [named[0], *named[-CRUMBS_LAST:]]
    return Breadcrumb(_ancestors(session, viewer, named), elided=len(ids) - len(named))


def _ancestry_ids(subagent: SubAgent) -> list[int]:
    return [int(i) for i in subagent.ancestry.split("/") if i]


def _ancestors(session: Session, viewer: Principal, steps: list[tuple[int, int]]) -> list[Ancestor]:
    """(depth, id) steps of a lineage as the viewer sees them: a card, or a hidden placeholder."""
    ids = [i for _depth, i in steps]
    statement = _ancestors_query(session)
    rows = {row.id: row for row in session.execute(statement, {"ids": ids})} if ids else {}
    hidden = {i: not can_view(viewer, row) for i, row in rows.items()}
    visible = [rows[i] for i in ids if not hidden[i]]
    # An ancestor's parent is the ancestor before it: its visibility is known already (when
    # it was read too).
    cards = {card.id: card for card in _cards(visible, session, viewer, known=hidden)}
    return [
        Ancestor(depth=depth, subagent=cards[i])
        if i in cards
        else Ancestor(depth=depth, hidden=True)
        for depth, i in steps
    ]


_TREE_COLUMNS = (
    SubAgent.id,
    SubAgent.parent_id,
    SubAgent.depth,
    SubAgent.title,
    SubAgent.status,
    SubAgent.install_count,
    SubAgent.fork_count,
)


def subtree(
    session: Session,
    viewer: Principal,
    top: SubAgent,
    parent: Link | None,
    *,
    depth: int,
    max_children: int,
    max_nodes: int,
) -> Subtree:
    """Breadth first: under each node only its ``max_children`` most installed children, at
    most ``depth`` levels down and ``max_nodes`` nodes, cut in breadth-first order (level,
    then parent id, then rank), so a root with thousands of forks costs the same as one with
    twenty. ``parent`` is ``top``'s (``get_visible_with_parent``), named only if the viewer
    may see it."""
    rows = subtree_rows(
        session, viewer, top, depth=depth, max_children=max_children, max_nodes=max_nodes
    )
    nodes = [_tree_node(row) for row in rows]
    if parent is not None and not can_view(viewer, parent):
        nodes[0].parent_id = None
    by_id = {node.id: node for node in nodes}
    for node in nodes[1:]:
        by_id[node.parent_id].shown_children += 1
    # Some forks were left out: by the per-node cap, the node cap, or the depth.
    truncated = any(n.fork_count > n.shown_children for n in nodes)
    return Subtree(root_id=top.id, depth=depth, nodes=nodes, truncated=truncated)


# One recursive query reads the whole capped tree when its worst case (a full tree of
# ``max_children`` per node, ``depth`` levels down) is at most this many rows; wider caps are
# read a level at a time instead, so a level past the node cap is never read.
WHOLE_QUERY_MAX_ROWS = 2000


def _full_tree_size(depth: int, max_children: int) -> int:
    return sum(max_children**level for level in range(depth + 1))


def subtree_rows(
    session: Session,
    viewer: Principal,
    top: SubAgent,
    *,
    depth: int,
    max_children: int,
    max_nodes: int,
) -> list:
    """The rows ``subtree`` draws, ``top`` first, in breadth-first order: id, parent_id,
    depth, title, status, install_count, fork_count."""
    if _full_tree_size(depth, max_children) <= WHOLE_QUERY_MAX_ROWS:
        return _subtree_in_one_query(session, viewer, top, depth, max_children, max_nodes)
    return _subtree_by_level(session, viewer, top, depth, max_children, max_nodes)


def _subtree_in_one_query(session, viewer, top, depth, max_children, max_nodes) -> list:
    statement = _ONE_QUERY_SUBTREE[viewer.user_id is not None]
    return list(
        session.execute(
            statement,
            {
                "top_id": top.id,
                "depth": depth,
                "max_children": max_children,
                "max_nodes": max_nodes,
                "viewer_id": viewer.user_id,
            },
        )
    )


def _one_query_subtree(signed_in: bool):
    """A recursive CTE walks down the parent index taking each node's ``max_children`` most
    installed visible children (a correlated LIMIT: a recursive step may not use window
    functions on SQLite), through the (parent, installs, id) index. The columns travel in the
    recursion, so nothing is joined back by id. Built once per kind of viewer: composing it
    costs more than running it."""
    child = aliased(SubAgent, name="child")
    sibling = aliased(SubAgent, name="sibling")
    viewer_id = bindparam("viewer_id") if signed_in else None
    shown = (
        select(*_TREE_COLUMNS, literal_column("0").label("level"))
        .where(SubAgent.id == bindparam("top_id"))
        .cte("shown", recursive=True)
    )
    top_children = (
        select(sibling.id)
        .where(sibling.parent_id == shown.c.id, tree_visible(sibling, viewer_id))
        .order_by(sibling.install_count.desc(), sibling.id)
        .limit(bindparam("max_children"))
    )
    shown = shown.union_all(
        select(
            child.id,
            child.parent_id,
            child.depth,
            child.title,
            child.status,
            child.install_count,
            child.fork_count,
            (shown.c.level + 1).label("level"),
        )
        .join(shown, child.parent_id == shown.c.id)
        .where(shown.c.level < bindparam("depth"), child.id.in_(top_children))
    )
    return (
        select(shown)
        .order_by(shown.c.level, shown.c.parent_id, shown.c.install_count.desc(), shown.c.id)
        .limit(bindparam("max_nodes"))
    )


_ONE_QUERY_SUBTREE = {signed_in: _one_query_subtree(signed_in) for signed_in in (False, True)}


def _subtree_by_level(session, viewer, top, depth, max_children, max_nodes) -> list:
    """One query per level; under each node a window function cuts its ``max_children`` most
    installed children in the database."""
    statement = _LEVEL_QUERIES[session.get_bind().dialect.name, viewer.user_id is not None]
    rows = [top]
    frontier = [top.id]
    for _level in range(depth):
        if not frontier or len(rows) >= max_nodes:
            break
        level = session.execute(
            statement,
            {
                "frontier": frontier,
                "max_children": max_children,
                "viewer_id": viewer.user_id,
                "room": max_nodes - len(rows),
            },
        ).all()
        frontier = [row.id for row in level]
        rows.extend(level)
    return rows


def _level_query(dialect: str, signed_in: bool):
    """One level of ``_subtree_by_level``: the ``max_children`` most installed visible
    children of each node in ``frontier``. Built once per database and kind of viewer, for the
    same reason as ``_one_query_subtree``; on PostgreSQL the frontier is one array parameter
    (``platform.db.in_bound_ids``), so the statement's text, prepared once, is the same at any
    width."""
    in_frontier = in_bound_ids(dialect, SubAgent.parent_id, "frontier")
    rank = (
        func.row_number()
        .over(
            partition_by=SubAgent.parent_id,
            order_by=(SubAgent.install_count.desc(), SubAgent.id),
        )
        .label("rank")
    )
    viewer_id = bindparam("viewer_id") if signed_in else None
    ranked = (
        select(*_TREE_COLUMNS, rank)
        .where(in_frontier, tree_visible(SubAgent, viewer_id))
        .subquery()
    )
    # Only as many rows as the node cap leaves room for: a last level under 400 parents can
    # rank 8,000 children, and reading them all cost more than the rest of the tree.
    return (
        select(ranked)
        .where(ranked.c.rank <= bindparam("max_children"))
        .order_by(ranked.c.parent_id, ranked.c.rank)
        .limit(bindparam("room"))
    )


_LEVEL_QUERIES = {
    (dialect, signed_in): _level_query(dialect, signed_in)
    for dialect in ("postgresql", "sqlite")
    for signed_in in (False, True)
}


def _tree_node(row: SubAgent) -> SubtreeNode:
    return SubtreeNode(
        id=row.id,
        parent_id=row.parent_id,
        depth=row.depth,
        title=row.title,
        status=row.status,
        install_count=row.install_count,
        fork_count=row.fork_count,
        shown_children=0,
    )


# ---- the moderators' queue -----------------------------------------------------------------


@dataclass(frozen=True)
class OpenReport:
    report: Report
    subagent: SubAgent
    offer: NearCopyOffer | None  # a near-copy report's evidence
    original: SubAgent | None  # and the sub-agent it copies


@dataclass(frozen=True)
class ReportPage:
    items: list[OpenReport]
    next_cursor: str | None


_ORIGINAL = aliased(SubAgent, name="original")


def open_reports(session: Session, viewer: Principal, *, limit: int, cursor: str | None):
    """Open reports, oldest first, with a near-copy report's evidence: moderators only."""
    viewer.require()
    if not can_moderate(viewer):
        raise Forbidden("Only moderators read reports.")
    statement = (
        select(Report, SubAgent, NearCopyOffer, _ORIGINAL)
        .join(SubAgent, SubAgent.id == Report.subagent_id)
        .outerjoin(NearCopyOffer, NearCopyOffer.id == Report.near_copy_offer_id)
        .outerjoin(_ORIGINAL, _ORIGINAL.id == NearCopyOffer.original_id)
        .where(Report.status == "open")
    )
    if cursor:
        (last_id,) = decode_cursor(cursor, (int,))
        statement = statement.where(Report.id > last_id)
    rows = session.execute(statement.order_by(Report.id).limit(limit + 1)).all()
    items = [OpenReport(*row) for row in rows[:limit]]
    next_cursor = encode_cursor(rows[limit - 1][0].id) if len(rows) > limit else None
    return ReportPage(items, next_cursor)
