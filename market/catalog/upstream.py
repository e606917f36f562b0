"""Upstream updates: a parent's new version offered to each of its forks.

When a sub-agent gets a new version, a task (``market.catalog.tasks``, enqueued once the
publish commits) makes, for each direct fork, one proposal: the three-way merge
(``evolution.merge``) of the parent's change since the fork's base onto the fork's newest
version. The base is the parent's version the fork was made from, or the upstream version
of the fork's last accepted proposal. The fork's author accepts a clean proposal (a new
version of the fork, "merged from <parent> vN") or declines it; a conflicted one waits in the
coding agent's queue, which resolves it by publishing the resolved version on the author's
behalf, naming the proposal (``upstream_update_id``).

Proposals for one fork take turns on the fork's row lock (``lock_subagent``), as its new
versions do, and ``uq_upstream_proposal`` keeps one per fork and upstream version however many
times, or by however many workers, the task runs. Who sees a proposal is
``market.identity.access``'s rule (``can_see_upstream_update``); a parent's change is offered
only while the fork's author may read it (``may_be_offered_upstream``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, func, select

from evolution.merge import ABSENT, MergeResult, merge_update
from market.catalog import bundles
from market.catalog import services as catalog
from market.catalog.bundles.diff import diff_bundles
from market.catalog.bundles.limits import BundleError
from market.catalog.counters import lock_subagent
from market.catalog.models import SubAgent, UpstreamProposal, Version
from market.identity.access import (
    can_decide_upstream_update,
    can_see_upstream_update,
    may_be_offered_upstream,
    sees_every_fork_request,
)
from market.identity.models import User
from market.identity.tokens import Principal
from market.platform.db import NEW_VERSIONS, AfterCommit, insert_unless_exists, session_scope
from market.platform.errors import Conflict, Forbidden, NotFound, Unprocessable
from market.platform.pagination import newest_first_page
from market.platform.time import utcnow

log = logging.getLogger(__name__)

OPEN, ACCEPTED, DECLINED, SUPERSEDED = "open", "accepted", "declined", "superseded"
STATUSES = (OPEN, ACCEPTED, DECLINED, SUPERSEDED)


@dataclass
class Offer:
    """A proposal with the rows it names, as a caller may see it."""

    proposal: UpstreamProposal
    fork: SubAgent
    parent: SubAgent
    base: Version
    upstream: Version
    fork_version: Version  # the fork's version the merge was made onto
    current: Version  # the fork's newest version now

    @property
    def stale(self) -> bool:
        """The fork has a newer version than the one the merge was made onto."""
        return self.current.id != self.fork_version.id


@dataclass
class OfferPage:
    items: list[Offer]
    next_cursor: str | None
    open_count: int
    conflicted_count: int


# ---- making proposals ------------------------------------------------------------------


def propose_updates(engine, upstream_version_id: int) -> list[int]:
    """The proposals a parent's new version makes (their ids), one per direct fork that should
    get one (found, not made again, when it exists). Each fork in a transaction of its own,
    committed before the next: a parent with many forks never holds them all locked while
    their merges are made."""
    with session_scope(engine) as session:
        upstream = session.get(Version, upstream_version_id)
        if upstream is None:
            return []
        if upstream.status != "active":
            upstream.offer_pending = False  # yanked before it was offered: never offered
            session.add(upstream)
            return []
        fork_ids = session.exec(
            select(SubAgent.id)
            .where(SubAgent.parent_id == upstream.subagent_id, SubAgent.status == "active")
            .order_by(SubAgent.id)
        ).all()
    made = []
    for fork_id in fork_ids:
        with session_scope(engine) as session:
            upstream = session.get(Version, upstream_version_id)
            parent = session.get(SubAgent, upstream.subagent_id)
            proposal = _propose(session, fork_id, parent, upstream)
            if proposal is not None:
                made.append(proposal.id)
    with session_scope(engine) as session:
        # Every fork has its proposal (or needs none): the sweep may pass this version now. A
        # run that died before here is run again by the sweep, and finds what it had made.
        session.execute(
            update(Version).where(Version.id == upstream_version_id).values(offer_pending=False)
        )
    return made


def offer_pending(engine, *, older_than: timedelta, limit: int = 500) -> dict[int, list[int]]:
    """Offer the versions still pending ``older_than`` after they were stored (their task was
    lost: the process killed between the commit and the enqueue, the queue away), oldest
    first, at most ``limit`` a run: version id → the proposals it has. Younger ones are left to
    the task their commit enqueued."""
    with session_scope(engine) as session:
        pending = session.exec(
            select(Version.id)
            .where(Version.offer_pending, Version.created_at < utcnow() - older_than)
            .order_by(Version.id)
            .limit(limit)
        ).all()
    offered = {}
    for version_id in pending:
        offered[version_id] = propose_updates(engine, version_id)
        log.warning("upstream updates of version %s offered by the sweep", version_id)
    return offered


def offer_in_process(engine) -> AfterCommit:
    """An after-commit hook that makes a new version's proposals at once, in this process:
    for ``sprig mcp`` on stdio, which has no task queue (the web app enqueues the task). The
    version has committed by now, so a failure to offer it is logged, never raised."""

    def offer(_session: Session, changes) -> None:
        for version_id in sorted(changes.get(NEW_VERSIONS, ())):
            try:
                propose_updates(engine, version_id)
            except Exception:
                log.exception("upstream updates of version %s were not offered", version_id)

    return offer


def _propose(
    session: Session, fork_id: int, parent: SubAgent, upstream: Version
) -> UpstreamProposal | None:
    fork = lock_subagent(session, fork_id)
    if fork.status != "active" or fork.latest_version_id is None:
        return None
    existing = _proposal_for(session, fork.id, upstream.id)
    if existing is not None:
        return existing
    if not may_be_offered_upstream(session, _author(session, fork), parent, upstream):
        return None
    base = base_version(session, fork)
    if base.number >= upstream.number or _offered_newer(session, fork.id, upstream.number):
        return None
    head = session.get(Version, fork.latest_version_id)
    proposal = UpstreamProposal(
        fork_id=fork.id,
        parent_id=parent.id,
        base_version_id=base.id,
        upstream_version_id=upstream.id,
        fork_version_id=head.id,
    )
    if not _merge_into(session, proposal, base, upstream, head):
        return None  # the fork has the parent's change already: nothing to offer
    proposal, created = insert_unless_exists(
        session, proposal, lambda: _proposal_for(session, fork.id, upstream.id)
    )
    if created:
        _supersede_older(session, proposal)
    return proposal


def _merge_into(
    session: Session, proposal: UpstreamProposal, base: Version, upstream: Version, head: Version
) -> bool:
    """Merge the parent's change onto ``head`` and store the result in ``proposal``; False
    when the merge leaves the fork exactly as it is."""
    head_bundle = catalog.load_bundle(session, head)
    result = merge_update(
        _snapshot(catalog.load_bundle(session, base)),
        _snapshot(catalog.load_bundle(session, upstream)),
        _snapshot(head_bundle),
    )
    if result.manifest == head_bundle.manifest and result.files == head_bundle.files:
        return False
    conflicts = _conflicts_out(result)
    merged_sha256 = None
    try:
        merged = bundles.build_bundle(result.manifest, result.files, source="the merged bundle")
    except BundleError as error:
        conflicts["bundle"] = error.detail
    else:
        catalog.store_blob(session, merged)
        merged_sha256 = merged.sha256
    proposal.fork_version_id = head.id
    proposal.merged_sha256 = merged_sha256
    proposal.conflicted = not result.clean or "bundle" in conflicts
    proposal.file_summary = [
        {"path": f.path, "status": f.status.value, "reason": f.reason} for f in result.file_merges
    ]
    proposal.conflicts = conflicts
    proposal.added_scopes = list(result.added_scopes)
    return True


def _snapshot(bundle: bundles.Bundle) -> tuple[Mapping[str, Any], Mapping[str, str]]:
    return bundle.manifest, bundle.files


def _conflicts_out(result: MergeResult) -> dict:
    """The merge's conflicts as JSON: a side that removed a manifest value is left out."""
    return {
        "files": [
            {
                "path": f.path,
                "reason": f.reason,
                "regions": [
                    {
                        "base": "".join(c.base),
                        "fork": "".join(c.fork),
                        "upstream": "".join(c.upstream),
                    }
                    for c in f.conflicts
                ],
            }
            for f in result.file_merges
            if f.path in result.conflicted_paths
        ],
        "manifest": [
            {
                "key": c.key,
                "reason": c.reason,
                **{
                    side: value
                    for side, value in (
                        ("base", c.base),
                        ("fork", c.fork),
                        ("upstream", c.upstream),
                    )
                    if value is not ABSENT
                },
            }
            for c in result.manifest_conflicts
        ],
    }


def base_version(session: Session, fork: SubAgent) -> Version:
    """The parent's version the fork has everything of: the upstream version it last merged
    (an accepted proposal), else the one it was forked from."""
    merged = session.exec(
        select(Version)
        .join(UpstreamProposal, UpstreamProposal.upstream_version_id == Version.id)
        .where(UpstreamProposal.fork_id == fork.id, UpstreamProposal.status == ACCEPTED)
        .order_by(Version.number.desc())
    ).first()
    return merged or session.get(Version, fork.parent_version_id)


def _proposal_for(session: Session, fork_id: int, upstream_version_id: int):
    return session.exec(
        select(UpstreamProposal)
        .where(
            UpstreamProposal.fork_id == fork_id,
            UpstreamProposal.upstream_version_id == upstream_version_id,
        )
        .execution_options(populate_existing=True)
    ).first()


def _offered_newer(session: Session, fork_id: int, number: int) -> bool:
    """Whether the fork was offered a newer parent version already (tasks may run out of
    order): an older one would only undo part of it."""
    newer = session.exec(
        select(func.count(UpstreamProposal.id))
        .join(Version, Version.id == UpstreamProposal.upstream_version_id)
        .where(UpstreamProposal.fork_id == fork_id, Version.number > number)
    ).one()
    return newer > 0


def _supersede_older(session: Session, proposal: UpstreamProposal) -> None:
    older = session.exec(
        select(UpstreamProposal).where(
            UpstreamProposal.fork_id == proposal.fork_id,
            UpstreamProposal.status == OPEN,
            UpstreamProposal.id != proposal.id,
        )
    )
    for row in older:
        row.status, row.decided_at = SUPERSEDED, utcnow()
        session.add(row)


def _author(session: Session, fork: SubAgent) -> Principal:
    return catalog.viewer_for(session.get(User, fork.author_id))


# ---- reading them ----------------------------------------------------------------------


def _offer(session: Session, viewer: Principal, proposal: UpstreamProposal) -> Offer:
    """The proposal with its rows if ``viewer`` may see it; a 404 otherwise (never a 403:
    whether a fork was offered anything is its author's business)."""
    fork = session.get(SubAgent, proposal.fork_id)
    parent = session.get(SubAgent, proposal.parent_id)
    upstream = session.get(Version, proposal.upstream_version_id)
    if not (
        can_see_upstream_update(viewer, fork, parent, proposal.conflicted)
        and may_be_offered_upstream(session, _author(session, fork), parent, upstream)
    ):
        raise NotFound(f"No upstream update {proposal.id}.")
    return Offer(
        proposal=proposal,
        fork=fork,
        parent=parent,
        base=session.get(Version, proposal.base_version_id),
        upstream=upstream,
        fork_version=session.get(Version, proposal.fork_version_id),
        current=session.get(Version, fork.latest_version_id),
    )


def get_offer(session: Session, viewer: Principal, proposal_id: int) -> Offer:
    proposal = session.get(UpstreamProposal, proposal_id)
    if proposal is None:
        raise NotFound(f"No upstream update {proposal_id}.")
    return _offer(session, viewer, proposal)


def _visible(session: Session, viewer: Principal, proposals) -> list[Offer]:
    offers = []
    for proposal in proposals:
        try:
            offers.append(_offer(session, viewer, proposal))
        except NotFound:
            continue
    return offers


def offers_for(
    session: Session,
    viewer: Principal,
    fork: SubAgent,
    *,
    status: str | None,
    limit: int,
    cursor: str | None,
) -> OfferPage:
    """A fork's proposals the viewer may see, newest first, with how many are open and how
    many of those conflict. Only its author and moderators list them (the coding agent reads
    the conflicted ones from its queue); anyone else gets an empty page, without even a
    cursor that would tell there is something to page through."""
    if viewer.user_id != fork.author_id and not viewer.is_moderator:
        return OfferPage(items=[], next_cursor=None, open_count=0, conflicted_count=0)
    statement = select(UpstreamProposal).where(UpstreamProposal.fork_id == fork.id)
    opened = _visible(
        session, viewer, session.exec(statement.where(UpstreamProposal.status == OPEN))
    )
    if status is not None:
        statement = statement.where(UpstreamProposal.status == status)
    rows, next_cursor = newest_first_page(
        session, statement, UpstreamProposal.id, limit=limit, cursor=cursor
    )
    return OfferPage(
        items=_visible(session, viewer, rows),
        next_cursor=next_cursor,
        open_count=len(opened),
        conflicted_count=sum(1 for offer in opened if offer.proposal.conflicted),
    )


def open_offers(session: Session, viewer: Principal, fork: SubAgent) -> list[Offer]:
    """The open proposals of a fork for its author (its page's "updates from upstream")."""
    if viewer.user_id != fork.author_id:
        return []
    rows = session.exec(
        select(UpstreamProposal)
        .where(UpstreamProposal.fork_id == fork.id, UpstreamProposal.status == OPEN)
        .order_by(UpstreamProposal.id.desc())
    )
    return _visible(session, viewer, rows)


def conflict_queue(
    session: Session, viewer: Principal, *, limit: int, cursor: str | None
) -> tuple[list[Offer], str | None]:
    """Open proposals that conflict, for the coding agent to resolve (oldest last, newest
    first): every one for a service with ``publish:on-behalf`` and for moderators, a
    person's own forks' for a person."""
    viewer.require()
    statement = select(UpstreamProposal).where(
        UpstreamProposal.status == OPEN, UpstreamProposal.conflicted
    )
    if not sees_every_fork_request(viewer):
        if viewer.kind != "person":
            raise Forbidden("The upstream-conflict queue needs the publish:on-behalf scope.")
        statement = statement.join(SubAgent, SubAgent.id == UpstreamProposal.fork_id).where(
            SubAgent.author_id == viewer.user_id
        )
    rows, next_cursor = newest_first_page(
        session, statement, UpstreamProposal.id, limit=limit, cursor=cursor
    )
    return _visible(session, viewer, rows), next_cursor


def merged_bundle(session: Session, offer: Offer) -> bundles.Bundle | None:
    sha256 = offer.proposal.merged_sha256
    return catalog.load_blob(session, sha256) if sha256 else None


def offer_diff(session: Session, offer: Offer) -> dict | None:
    """What accepting would change: the merged bundle against the fork's newest version
    (``diff_bundles``'s shape); None when the merged files are not a bundle."""
    merged = merged_bundle(session, offer)
    if merged is None:
        return None
    return diff_bundles(catalog.load_bundle(session, offer.current), merged)


# ---- deciding --------------------------------------------------------------------------


def _decidable(session: Session, who: Principal, proposal_id: int) -> Offer:
    """The proposal, read once its fork is locked (accepts, declines, refreshes and new
    proposals of one fork take turns), if ``who`` may decide it."""
    who.require("publish")
    offer = get_offer(session, who, proposal_id)
    if not can_decide_upstream_update(who, offer.fork):
        raise Forbidden("Only the fork's author accepts or declines its upstream updates.")
    lock_subagent(session, offer.fork.id)
    session.refresh(offer.proposal)
    return get_offer(session, who, proposal_id)


def _refuse_unless_open(offer: Offer) -> None:
    status = offer.proposal.status
    if status != OPEN:
        raise Conflict(f"Upstream update {offer.proposal.id} is {status}; nothing to decide.")


def accept(session: Session, who: Principal, proposal_id: int) -> tuple[Offer, Version, bool]:
    """Make the merged bundle the fork's next version ("merged from <parent> vN"); the next
    proposal's base is then this one's upstream version. (offer, version, made now); an
    accepted proposal accepted again answers with the version it made."""
    offer = _decidable(session, who, proposal_id)
    proposal = offer.proposal
    if proposal.status == ACCEPTED:
        return offer, session.get(Version, proposal.merged_version_id), False
    _refuse_unless_open(offer)
    rerun = f"POST /api/v1/upstream-updates/{proposal.id}/refresh merges it again onto v"
    if offer.stale:
        raise Conflict(
            f"The fork has moved on to v{offer.current.number} since this update was merged "
            f"onto v{offer.fork_version.number}: {rerun}{offer.current.number}, then review "
            "and accept it."
        )
    if proposal.conflicted:
        where = ", ".join(_conflicted_parts(proposal)) or "the merge"
        raise Conflict(
            f"Upstream update {proposal.id} conflicts ({where}): the coding agent resolves "
            "it from its queue (GET /api/v1/upstream-conflicts), or publish a version "
            f"that resolves it with `upstream_update_id: {proposal.id}`."
        )
    author = session.get(User, offer.fork.author_id)
    changelog = f"merged from {offer.parent.title} v{offer.upstream.number}"
    version, created = catalog.publish_version(
        session, author, offer.fork, merged_bundle(session, offer), changelog
    )
    proposal.status, proposal.decided_at = ACCEPTED, utcnow()
    proposal.merged_version_id = version.id
    session.add(proposal)
    offer.current = version
    return offer, version, created


def resolve(
    session: Session, who: Principal, proposal_id: int, fork: SubAgent, version: Version
) -> Offer:
    """Record ``version`` of ``fork``, just published by its author or on their behalf, as
    the resolution of proposal ``proposal_id``: it is accepted with that version, whose
    upstream version is the fork's next base. The same version resolving it again is a no-op."""
    offer = get_offer(session, who, proposal_id)
    proposal = offer.proposal
    if offer.fork.id != fork.id:
        raise Unprocessable(
            f"Upstream update {proposal_id} is for sub-agent {offer.fork.id}, not {fork.id}.",
            errors=[{"location": "upstream_update_id", "message": "not an update of this"}],
        )
    if proposal.status == ACCEPTED and proposal.merged_version_id == version.id:
        return offer
    _refuse_unless_open(offer)
    proposal.status, proposal.decided_at = ACCEPTED, utcnow()
    proposal.merged_version_id = version.id
    session.add(proposal)
    offer.current = version
    return offer


def _conflicted_parts(proposal: UpstreamProposal) -> list[str]:
    conflicts = proposal.conflicts
    parts = [f["path"] for f in conflicts.get("files", [])]
    parts += [f"manifest {m['key']}" for m in conflicts.get("manifest", [])]
    if conflicts.get("bundle"):
        parts.append(conflicts["bundle"])
    return parts


def decline(session: Session, who: Principal, proposal_id: int) -> Offer:
    """Decline (a declined proposal declined again stays declined)."""
    offer = _decidable(session, who, proposal_id)
    if offer.proposal.status == DECLINED:
        return offer
    _refuse_unless_open(offer)
    offer.proposal.status, offer.proposal.decided_at = DECLINED, utcnow()
    session.add(offer.proposal)
    return offer


def refresh(session: Session, who: Principal, proposal_id: int) -> Offer:
    """Merge an open proposal again onto the fork's newest version (after the fork moved on)."""
    offer = _decidable(session, who, proposal_id)
    _refuse_unless_open(offer)
    if not offer.stale:
        return offer
    head = offer.current
    if not _merge_into(session, offer.proposal, offer.base, offer.upstream, head):
        # The fork took the parent's change itself: nothing is left to offer.
        offer.proposal.status, offer.proposal.decided_at = SUPERSEDED, utcnow()
    session.add(offer.proposal)
    offer.fork_version = head
    return offer
