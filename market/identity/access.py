"""Who may see what. One place, so every endpoint applies the same rules.

- private: only its author;
- quarantined: only its author and moderators;
- unlisted: anyone with the link, never listed;
- yanked: readable by link (with the reason), hidden from browse, no new installs; its
  files (bundle, zip, diff, preview) stay readable by those who installed them.

Everything that shows a sub-agent, its files, its figures, a creator's figures or a person's
recommendations asks a function here (API, pages, previews, MCP, stats, exports), never
restates the rule.
"""

from __future__ import annotations

from sqlalchemy import and_, or_
from sqlmodel import select

from market.catalog.models import Install, SubAgent
from market.identity.models import User
from market.identity.tokens import Principal
from market.platform.db import PerDatabase, in_bound_ids
from market.platform.errors import NotFound


def _hidden(viewer: Principal, author_id: int, visibility: str, status: str) -> bool:
    """The rule itself, on a sub-agent's columns: ``can_view`` and ``hidden_among`` ask it."""
    if viewer.user_id is not None and viewer.user_id == author_id:
        return False
    if visibility == "private":
        return True
    return status == "quarantined" and not viewer.is_moderator


def can_view(viewer: Principal, subagent: SubAgent) -> bool:
    """``subagent`` is a row or anything else with its ``author_id``, ``visibility`` and
    ``status`` (``market.catalog.services.Link``)."""
    return not _hidden(viewer, subagent.author_id, subagent.visibility, subagent.status)


def viewable_clause(viewer: Principal, subagent=SubAgent):
    """``can_view`` as an SQL filter (for any alias of the table): what the viewer may open by
    link, listed or not."""
    not_private = subagent.visibility != "private"
    seen = (
        not_private if viewer.is_moderator else and_(not_private, subagent.status != "quarantined")
    )
    if viewer.user_id is None:
        return seen
    return or_(subagent.author_id == viewer.user_id, seen)


def publicly_listed(visibility: str, status: str) -> bool:
    """Listed to everyone: browse and search for strangers, suggestions, recommendations, the
    ranking's eligible sub-agents and the reward exports."""
    return visibility == "public" and status == "active"


def publicly_listed_clause(subagent=SubAgent):
    """``publicly_listed`` as an SQL filter, for any alias of the table."""
    return and_(subagent.visibility == "public", subagent.status == "active")


def listed_clause(viewer: Principal):
    """SQL filter for what a viewer sees in lists (browse, search, forks, tree)."""
    public_active = publicly_listed_clause()
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


_WHO_MAY_SEE = PerDatabase(
    lambda dialect: select(
        SubAgent.id, SubAgent.author_id, SubAgent.visibility, SubAgent.status
    ).where(in_bound_ids(dialect, SubAgent.id, "ids"))
)


def hidden_among(session, viewer: Principal, ids) -> set[int]:
    """Which of these sub-agent ids the viewer may not see (to blank references to them)."""
    wanted = [i for i in dict.fromkeys(ids) if i is not None]
    if not wanted:
        return set()
    rows = session.execute(_WHO_MAY_SEE(session), {"ids": wanted})
    return {
        subagent_id
        for subagent_id, author_id, visibility, status in rows
        if _hidden(viewer, author_id, visibility, status)
    }


# ---- a version's files -------------------------------------------------------------------


def can_read_files(session, viewer: Principal, subagent: SubAgent, version) -> bool:
    """May the viewer read this version's files: its bundle and zip, either side of a diff,
    its preview. A yanked version (or any version of a yanked sub-agent) stays readable only
    for its author, moderators and those who installed that version."""
    if not can_view(viewer, subagent):
        return False
    if version.status != "yanked" and subagent.status != "yanked":
        return True
    if viewer.user_id == subagent.author_id or viewer.is_moderator:
        return True
    return viewer.user_id is not None and (
        session.exec(
            select(Install.id).where(
                Install.user_id == viewer.user_id, Install.version_id == version.id
            )
        ).first()
        is not None
    )


def may_be_credited_as_original(publisher: Principal, original: SubAgent) -> bool:
    """Whether a new root of ``publisher`` may be offered (and become) a fork of ``original``
    as its near-copy: publicly listed, another author's, and visible to the publisher. Never a
    private or unlisted one: matching those would tell a stranger they exist."""
    return (
        publicly_listed(original.visibility, original.status)
        and original.author_id != publisher.user_id
        and can_view(publisher, original)
    )


def may_inherit_listing(parent: SubAgent) -> bool:
    """A fork starts with its parent's summary and tags only when everyone may read them in
    a listing: otherwise a public fork would carry a private (or unlisted, or quarantined)
    parent's text into browse, search, suggestions and MCP."""
    return parent.visibility == "public" and parent.status != "quarantined"


def may_use(user_id: int, author_id: int, visibility: str) -> bool:
    """Whose usage events a sub-agent takes: a private one is only ever used by its author.
    (The PostgreSQL ingest statement in ``market.usage.ingest`` states it in SQL.)"""
    return visibility != "private" or user_id == author_id


# ---- figures -----------------------------------------------------------------------------


def can_read_full_stats(viewer: Principal, subagent: SubAgent) -> bool:
    """A sub-agent's full usage figures: its author and moderators (others get the public
    install count and rating). The sub-agent must be one the viewer may see at all."""
    if not can_view(viewer, subagent):
        return False
    return viewer.user_id == subagent.author_id or viewer.is_moderator


def can_read_creator_stats(viewer: Principal, creator: User) -> bool:
    """A creator's figures (API, dashboard page and CSV): the creator and moderators. Creators
    are people; a service account publishes nothing of its own."""
    if creator.kind != "person":
        return False
    return viewer.user_id == creator.id or viewer.is_moderator


def creator_for_stats(session, viewer: Principal, handle: str) -> User:
    """The creator named ``handle`` if the viewer may read their figures; otherwise 404, the
    same answer an unknown handle gets, so handles cannot be enumerated."""
    creator = None
    if len(handle) <= User.__table__.c.handle.type.length:
        creator = session.exec(select(User).where(User.handle == handle)).first()
    if creator is None or not can_read_creator_stats(viewer, creator):
        raise NotFound(f"No creator {handle!r}.")
    return creator


def creator_subagents(session, viewer: Principal, creator: User) -> list:
    """The creator's sub-agents whose figures the viewer may read: all of them for the
    creator; for a moderator, none that is private (private is the author's alone). Rows of
    what the figures show of each (id, title, visibility, status, installs and forks now), not
    whole sub-agents: a creator with 3,000 took 130 ms to load whole."""
    return list(
        session.execute(
            select(
                SubAgent.id,
                SubAgent.title,
                SubAgent.visibility,
                SubAgent.status,
                SubAgent.install_count,
                SubAgent.fork_count,
            )
            .where(SubAgent.author_id == creator.id, viewable_clause(viewer))
            .order_by(SubAgent.id)
        )
    )


# ---- moderation --------------------------------------------------------------------------


def can_yank(viewer: Principal, subagent: SubAgent) -> bool:
    return viewer.user_id == subagent.author_id or viewer.is_moderator


def can_moderate(viewer: Principal) -> bool:
    """Quarantine (and lift it), and read the open reports: moderators."""
    return viewer.is_moderator


# ---- acting for someone ------------------------------------------------------------------


def may_recommend_for(caller: Principal, user_id: int) -> bool:
    """Whose slate a caller may ask for (``POST /recommendations``). A person's slate is drawn
    with their taste, which the ranking learned from their own ratings: the order, the
    propensities and the ``personal`` flag tell what they like. So the person themselves, and
    the main agent (a service with ``recommend``) choosing what to show them; nobody else, not
    a moderator, and not a service with other scopes (the coding agent)."""
    if caller.kind == "service":
        return "recommend" in caller.scopes
    return caller.kind == "person" and caller.user_id == user_id


def may_be_published_for(user: User) -> bool:
    """Whom a service may publish for (``on_behalf_of``): an ordinary person. Never another
    service, and never a moderator, whose authorship would lend the service their powers."""
    return user.kind == "person" and user.role != "moderator"


def sees_every_fork_request(caller: Principal) -> bool:
    """The whole fork-request queue: moderators and the coding agent; a person sees theirs."""
    return caller.is_moderator or "publish:on-behalf" in caller.scopes


def can_fulfil_fork_request(caller: Principal, publisher: User, request) -> bool:
    """Only the coding agent (a service with ``publish:on-behalf``) fulfils a fork request,
    and only by publishing for the person who asked: the fork is then theirs, so they can
    always see what fulfilled their request. ``request`` None (an unknown id) is left for the
    fork's own check to refuse."""
    if caller.kind != "service" or "publish:on-behalf" not in caller.scopes:
        return False
    return request is None or request.requester_id == publisher.id


# ---- upstream updates ----------------------------------------------------------------------


def may_be_offered_upstream(session, author: Principal, parent: SubAgent, upstream) -> bool:
    """Whether a fork's author is offered the parent's version ``upstream`` (made into a
    proposal, listed, shown, accepted): only while they may read its files, so a private (or
    quarantined, or yanked) parent's change never reaches an author who cannot see it."""
    return can_read_files(session, author, parent, upstream)


def can_see_upstream_update(
    viewer: Principal, fork: SubAgent, parent: SubAgent, conflicted: bool
) -> bool:
    """A proposal to merge a parent's change into a fork: the fork's author and moderators;
    a conflicted one also the coding agent (``sees_every_fork_request``), which resolves it.
    It carries the parent's files, so the viewer must be able to see both sub-agents."""
    if not (can_view(viewer, fork) and can_view(viewer, parent)):
        return False
    if viewer.user_id == fork.author_id or viewer.is_moderator:
        return True
    return conflicted and sees_every_fork_request(viewer)


def can_decide_upstream_update(viewer: Principal, fork: SubAgent) -> bool:
    """Accepting or declining a proposal makes or refuses a version of the fork: its author's
    call alone (the coding agent resolves a conflicted one by publishing on their behalf)."""
    return viewer.kind == "person" and viewer.user_id == fork.author_id
