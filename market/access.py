"""Who may see what. One place, so every endpoint applies the same rules.

- private: only its author;
- quarantined: only its author and moderators;
- unlisted: anyone with the link, never listed;
- yanked: readable by link (with the reason), hidden from browse, no new installs; its
  bundles stay downloadable by those who installed them.
"""

from __future__ import annotations

from sqlalchemy import and_, or_

from market.auth import Principal
from market.db import id_in
from market.models import SubAgent


def can_view(viewer: Principal, subagent: SubAgent) -> bool:
    is_author = viewer.user_id is not None and viewer.user_id == subagent.author_id
    if is_author:
        return True
    if subagent.visibility == "private":
        return False
    if subagent.status == "quarantined":
        return viewer.is_moderator
    return True


def listed_clause(viewer: Principal):
    """SQL filter for what a viewer sees in lists (browse, search, forks, tree)."""
    public_active = and_(SubAgent.visibility == "public", SubAgent.status == "active")
    if viewer.user_id is None:
        return public_active
    own = SubAgent.author_id == viewer.user_id
    return or_(public_active, own)


def tree_clause(viewer: Principal):
    """Fork lists and trees also show yanked branches, so a lineage never breaks in the middle."""
    return tree_visible(SubAgent, viewer.user_id)


def tree_visible(subagent, user_id):
    """``tree_clause`` for any alias of the table, with the viewer's id as a value or a bound
    parameter (for statements built once); None is an anonymous viewer."""
    public = and_(subagent.visibility == "public", subagent.status.in_(("active", "yanked")))
    if user_id is None:
        return public
    return or_(public, subagent.author_id == user_id)


def counted_fork_clause(child):
    """What a sub-agent's ``fork_count`` counts among its children (any alias of the table):
    exactly the forks its fork list shows an anonymous viewer."""
    return tree_visible(child, None)


def hidden_among(session, viewer: Principal, ids) -> set[int]:
    """Which of these sub-agent ids the viewer may not see (to blank references to them)."""
    from sqlmodel import select

    wanted = {i for i in ids if i is not None}
    if not wanted:
        return set()
    rows = session.exec(
        select(SubAgent.id, SubAgent.author_id, SubAgent.visibility, SubAgent.status).where(
            id_in(session, SubAgent.id, wanted)
        )
    )
    hidden = set()
    for subagent_id, author_id, visibility, status in rows:
        if author_id == viewer.user_id:
            continue
        if visibility == "private" or (status == "quarantined" and not viewer.is_moderator):
            hidden.add(subagent_id)
    return hidden
