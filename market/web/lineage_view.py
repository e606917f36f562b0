"""What the fork tree view draws: nodes of a lineage with their size, colour and flags.

The first answer is small whatever the lineage's size: the top few children under each node
(most installed first), a few levels deep, plus every node on the path to the sub-agent being
viewed and on the path to the lineage's best branch. The page then asks for more under any
node ("show more") a page at a time, or for the whole lineage when it is small enough to draw.
"""

from __future__ import annotations

from sqlalchemy import and_, func, or_, select
from sqlmodel import Session

from market import browse
from market.access import hidden_among, tree_clause
from market.auth import Principal
from market.db import id_in
from market.models import SubAgent
from market.pagination import encode_cursor
from market.web import figures

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
        best_ancestry = session.execute(
            select(SubAgent.ancestry).where(SubAgent.id == best_id)
        ).scalar()
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


def _below(top: SubAgent):
    """SQL for the nodes strictly below ``top`` (its ancestry ids are a prefix of theirs)."""
    if top.parent_id is None:
        return and_(SubAgent.root_id == top.id, SubAgent.id != top.id)
    prefix = f"{top.ancestry}/{top.id}" if top.ancestry else str(top.id)
    return and_(
        SubAgent.root_id == top.root_id,
        or_(SubAgent.ancestry == prefix, SubAgent.ancestry.startswith(prefix + "/")),
    )


def _lineage_size(session: Session, viewer: Principal, top: SubAgent) -> int:
    """Nodes of the lineage the viewer may see (an upper bound when some hang under hidden
    ones), counted through the root index."""
    statement = select(func.count(SubAgent.id)).where(_below(top), tree_clause(viewer))
    return int(session.execute(statement).scalar_one()) + 1


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
            .where(_below(top), tree_clause(viewer))
            .order_by(SubAgent.depth, SubAgent.install_count.desc(), SubAgent.id)
            .limit(WHOLE_TREE_MAX + 1)
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
