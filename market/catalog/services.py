"""Publishing and curating sub-agents: publish, fork, new versions, edits, yank, quarantine.

Every write validates first and changes nothing on failure; the caller commits once.
Fork links are computed here from the parent row and never accepted from the client.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import NamedTuple

from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Bundle, aliased, load_only
from sqlmodel import Session, func, select

from market.catalog import bundles, near_copies
from market.catalog.bundles import scan
from market.catalog.counters import lock_subagent, recount_forks
from market.catalog.models import (
    BundleBlob,
    ForkRequest,
    Install,
    Report,
    SubAgent,
    SubAgentTag,
    Version,
)
from market.catalog.schema_checks import check_fork_data
from market.identity.access import (
    can_fulfil_fork_request,
    can_moderate,
    can_read_files,
    can_view,
    can_yank,
    may_be_credited_as_original,
    may_be_published_for,
    may_inherit_listing,
)
from market.identity.models import User
from market.identity.tokens import Principal
from market.platform.db import (
    CATALOG_CHANGED,
    NEW_VERSIONS,
    SUBAGENTS_PUBLISHED,
    insert_unless_exists,
    note_change,
)
from market.platform.errors import Conflict, Forbidden, NotFound, Unprocessable
from market.platform.read_cache import CHANNEL, Change
from market.platform.time import utcnow
from market.ranking.models import SubAgentScore

# ---- loading -------------------------------------------------------------------------


def mark_catalog_changed(session: Session, *lineages: int | None, added_only: bool = False) -> None:
    """Tell every web worker, at commit, that its cached anonymous reads of ``lineages`` (root
    ids; with none named, or one not known yet, of every lineage) are stale, and its cached
    lists too unless the change only ``added_only`` to those lineages (a publish, a fork, a new
    version), which a list may show up to the cache's time late (``market.platform.read_cache``).
    """
    # One description of the change for this process (at commit) and for the others (NOTIFY).
    payload = Change.of(None if None in lineages else lineages, lists=not added_only).payload()
    note_change(session, CATALOG_CHANGED, payload)
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            text("SELECT pg_notify(:channel, :payload)"),
            {"channel": CHANNEL, "payload": payload},
        )


# A statement built once costs a third less CPU than ``session.get``'s, which is composed at
# each call; the row is still the session's own when it has loaded it before.
_BY_ID = select(SubAgent).where(SubAgent.id == bindparam("subagent_id"))


def get_visible(session: Session, viewer: Principal, subagent_id: int) -> SubAgent:
    """The sub-agent if the viewer may see it; otherwise 404 (never 403: no existence leak)."""
    subagent = session.execute(_BY_ID, {"subagent_id": subagent_id}).scalar_one_or_none()
    if subagent is None or not can_view(viewer, subagent):
        raise NotFound(f"No sub-agent {subagent_id}.")
    return subagent


def lineage_root(session: Session, subagent_id: int) -> int | None:
    """The root id of the sub-agent's lineage, None when there is no such sub-agent (the
    session's own row when it has loaded it: no query)."""
    subagent = session.get(SubAgent, subagent_id)
    return subagent.root_id if subagent is not None else None


class Branch(NamedTuple):
    """What a detail reads of the best descendant its figures name: whether it may be shown
    (``can_view``, its status), its title and depth, and the language of its listing."""

    id: int
    title: str
    summary: str
    depth: int
    author_id: int
    visibility: str
    status: str


class Link(NamedTuple):
    """What a detail reads of the parent or root it links to: whether the viewer may see it
    (``can_view`` reads these three columns)."""

    id: int
    author_id: int
    visibility: str
    status: str


@dataclass(frozen=True)
class Detail:
    """A sub-agent with what its detail shows beside it, read in one round trip: its author
    and latest version; its parent and root (whose visibility decides whether the detail may
    name them); its last ranking figures and the row of the best descendant they name."""

    subagent: SubAgent
    author: User
    version: Version | None
    parent: Link | None
    root: Link | None
    score: SubAgentScore | None
    best: Branch | None


def _columns(name: str, subagent, shape) -> Bundle:
    """The columns of ``shape`` (a Link or a Branch) from that alias of the table, as one
    item of a result row."""
    return Bundle(name, *(getattr(subagent, field) for field in shape._fields))


_PARENT = aliased(SubAgent, name="parent")
_ROOT = aliased(SubAgent, name="root")
_BEST = aliased(SubAgent, name="best")
# Built once: composing a SELECT costs more CPU than running it on a warm connection. The
# linked rows bring only the columns a Link or a Branch reads, and the author only what a
# detail shows of them: every column of a result costs the driver and the ORM time, NULL or
# not (two whole rows more doubled the query's CPU).
_DETAIL_QUERY = (
    select(
        SubAgent,
        User,
        Version,
        _columns("parent", _PARENT, Link),
        _columns("root", _ROOT, Link),
        SubAgentScore,
        _columns("best", _BEST, Branch),
    )
    .join(User, User.id == SubAgent.author_id)
    .outerjoin(Version, Version.id == SubAgent.latest_version_id)
    .outerjoin(_PARENT, _PARENT.id == SubAgent.parent_id)
    .outerjoin(_ROOT, _ROOT.id == SubAgent.root_id)
    .outerjoin(SubAgentScore, SubAgentScore.subagent_id == SubAgent.id)
    .outerjoin(_BEST, _BEST.id == SubAgentScore.best_descendant_id)
    .where(SubAgent.id == bindparam("subagent_id"))
    .options(load_only(User.id, User.handle, User.display_name))
)


_WITH_PARENT_QUERY = (
    select(SubAgent, _columns("parent", _PARENT, Link))
    .outerjoin(_PARENT, _PARENT.id == SubAgent.parent_id)
    .where(SubAgent.id == bindparam("subagent_id"))
)


def get_visible_with_parent(
    session: Session, viewer: Principal, subagent_id: int
) -> tuple[SubAgent, Link | None]:
    """``get_visible`` with what a subtree needs to know of the parent (whether it may be
    named), in the same round trip."""
    row = session.execute(_WITH_PARENT_QUERY, {"subagent_id": subagent_id}).first()
    if row is None or not can_view(viewer, row[0]):
        raise NotFound(f"No sub-agent {subagent_id}.")
    return row[0], _as(Link, row[1])


def _as(shape, columns):
    """A bundle of an outer-joined row as ``shape``, None when nothing was joined."""
    return None if columns[0] is None else shape(*columns)


def get_visible_detail(session: Session, viewer: Principal, subagent_id: int) -> Detail:
    """The sub-agent with its author, latest version, parent, root and ranking figures, in one
    round trip (a detail was four to six), if ``viewer`` may see it."""
    detail = read_detail(session, subagent_id)
    if detail is None or not can_view(viewer, detail.subagent):
        raise NotFound(f"No sub-agent {subagent_id}.")
    return detail


def read_detail(session: Session, subagent_id: int) -> Detail | None:
    """``get_visible_detail`` without asking whether the caller may see the sub-agent: for the
    answer to a write, which its caller has just made. A service publishing a private
    sub-agent for a person may not open it afterwards, yet is answered with what it made.
    What the detail links to is still shown only as the caller may see it
    (``market.catalog.serialize.visible_detail``)."""
    row = session.execute(_DETAIL_QUERY, {"subagent_id": subagent_id}).first()
    if row is None:
        return None
    subagent, author, version, parent, root, score, best = row
    return Detail(
        subagent, author, version, _as(Link, parent), _as(Link, root), score, _as(Branch, best)
    )


def get_author(session: Session, subagent: SubAgent) -> User:
    return session.get(User, subagent.author_id)


def get_version(session: Session, subagent: SubAgent, version_id: int | None) -> Version:
    version_id = version_id or subagent.latest_version_id
    version = session.get(Version, version_id) if version_id else None
    if version is None or version.subagent_id != subagent.id:
        raise NotFound(f"Sub-agent {subagent.id} has no version {version_id}.")
    return version


def get_readable_version(
    session: Session, viewer: Principal, subagent: SubAgent, version_id: int | None
) -> Version:
    """A version whose files the viewer may read (bundle, zip, diff, preview, MCP); a yanked
    one they may not is a 404 that gives the reason."""
    version = get_version(session, subagent, version_id)
    if not can_read_files(session, viewer, subagent, version):
        reason = version.status_reason if version.status == "yanked" else subagent.status_reason
        raise NotFound(f"Version {version.id} was yanked: {reason or ''}".strip())
    return version


# How many forks deep a lineage may go. A sub-agent stores its ancestors' ids as one path
# (``SubAgent.ancestry``, 4,000 characters): 300 ids of 10 digits fit. Past it PostgreSQL
# refused the row (a 500); the pages list every ancestor above a sub-agent.
MAX_FORK_DEPTH = 300


def check_fork_depth(parent: SubAgent) -> None:
    """A fork of ``parent`` (or a copy credited to it) would sit one level below it."""
    if parent.depth + 1 > MAX_FORK_DEPTH:
        raise Conflict(
            f"This lineage is already {parent.depth} forks deep; Sprig keeps lineages to "
            f"{MAX_FORK_DEPTH}: fork an earlier ancestor, or publish it as a new sub-agent."
        )


# A sub-agent's versions a page at a time, by number: oldest first after a number (the API),
# newest first before one (its page). An agent that publishes a version at every change can
# reach thousands; listed whole, 3,000 made a 618 KiB page and a 1.1 MB API answer.
_VERSIONS_OF = Version.subagent_id == bindparam("subagent_id")
_VERSIONS_AFTER = (
    select(Version)
    .where(_VERSIONS_OF, Version.number > bindparam("number"))
    .order_by(Version.number)
    .limit(bindparam("limit"))
)
_VERSIONS_BEFORE = (
    select(Version)
    .where(_VERSIONS_OF, Version.number < bindparam("number"))
    .order_by(Version.number.desc())
    .limit(bindparam("limit"))
)
_VERSION_NUMBERED = select(Version).where(_VERSIONS_OF, Version.number == bindparam("number"))


def versions_after(
    session: Session, subagent: SubAgent, number: int, limit: int
) -> tuple[list[Version], bool]:
    """Up to ``limit`` versions numbered above ``number``, oldest first, and whether more
    follow."""
    return _versions_page(session, _VERSIONS_AFTER, subagent, number, limit)


def versions_before(
    session: Session, subagent: SubAgent, number: int, limit: int
) -> tuple[list[Version], bool]:
    """Up to ``limit`` versions numbered below ``number``, newest first, and whether older
    ones remain."""
    return _versions_page(session, _VERSIONS_BEFORE, subagent, number, limit)


def _versions_page(session, statement, subagent, number, limit) -> tuple[list[Version], bool]:
    values = {"subagent_id": subagent.id, "number": number, "limit": limit + 1}
    found = list(session.execute(statement, values).scalars())
    return found[:limit], len(found) > limit


def diff_base(
    session: Session, viewer: Principal, subagent: SubAgent, version: Version, against: str
) -> Version | None:
    """What a diff compares ``version`` with: the parent version a fork was made from or the
    previous version, when the viewer may read that version's files; None compares with
    nothing."""
    owner, base = subagent, None
    if against == "parent" and subagent.parent_version_id:
        owner = session.get(SubAgent, subagent.parent_id)
        base = session.get(Version, subagent.parent_version_id)
    elif against == "previous" and version.number > 1:
        values = {"subagent_id": subagent.id, "number": version.number - 1}
        base = session.execute(_VERSION_NUMBERED, values).scalar_one()
    if base is None or owner is None or not can_read_files(session, viewer, owner, base):
        return None
    return base


def load_bundle(session: Session, version: Version) -> bundles.Bundle:
    return load_blob(session, version.sha256)


def load_blob(session: Session, sha256: str) -> bundles.Bundle:
    """The bundle stored under ``sha256`` (a version's, or a merge's that is no version yet)."""
    blob = session.get(BundleBlob, sha256)
    payload = json.loads(zlib.decompress(blob.content))
    return bundles.bundle_from_json(payload)


# ---- who publishes -------------------------------------------------------------------


def resolve_publisher(session: Session, caller: Principal, on_behalf_of: str | None) -> User:
    """The user a publish is attributed to: the caller, or a user a service publishes for."""
    if on_behalf_of is None:
        caller.require("publish" if caller.kind == "person" else "publish:on-behalf")
        if caller.kind != "person":
            raise Unprocessable(
                "A service publishes for a user: name them in `on_behalf_of`.",
                errors=[{"location": "on_behalf_of", "message": "required for services"}],
            )
        return session.get(User, caller.user_id)
    caller.require("publish:on-behalf")
    user = session.exec(select(User).where(User.handle == on_behalf_of)).first()
    if user is None or not may_be_published_for(user):
        raise Unprocessable(
            f"No person with handle {on_behalf_of!r} to publish for: a service publishes "
            "for people who are neither moderators nor services.",
            errors=[{"location": "on_behalf_of", "message": "unknown handle"}],
        )
    return user


def viewer_for(user: User) -> Principal:
    return Principal(user_id=user.id, handle=user.handle, kind=user.kind, role=user.role)


def personal_values(user: User) -> dict[str, str | None]:
    return {
        "email": user.email,
        "phone": user.phone,
        "name": user.display_name,
        "address": user.address,
    }


def check_publishable(bundle: bundles.Bundle | None, publisher: User, **listing: str) -> None:
    """Refuse a secret or the publisher's own details in the bundle or in the text published
    with it (title, summary, story, changelog: ``listing``), with the same scanners."""
    scan.check_publishable(bundle, personal_values(publisher), listing)


# ---- storing bundles -------------------------------------------------------------------


def store_blob(session: Session, bundle: bundles.Bundle) -> None:
    """Store the bundle's bytes once under its SHA-256 (a no-op when they are stored)."""
    dialect = session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    statement = (
        insert(BundleBlob)
        .values(
            sha256=bundle.sha256,
            content=zlib.compress(bundle.canonical_bytes(), 6),
            size_bytes=bundle.size,
        )
        .on_conflict_do_nothing(index_elements=["sha256"])
    )
    session.exec(statement)


def _new_version(
    session: Session, subagent: SubAgent, bundle: bundles.Bundle, number: int, changelog: str
) -> Version:
    # A publish, a fork or a new version hides nothing: lists may show it a little late.
    mark_catalog_changed(session, subagent.root_id, added_only=True)
    store_blob(session, bundle)
    version = Version(
        subagent_id=subagent.id,
        number=number,
        sha256=bundle.sha256,
        manifest=bundle.manifest,
        changelog=changelog,
        size_bytes=bundle.size,
        file_count=len(bundle.files),
        offer_pending=number > 1,  # offered to the forks after the commit (NEW_VERSIONS)
    )
    session.add(version)
    session.flush()
    near_copies.sign(session, subagent.id, version.id, bundle)
    subagent.latest_version_id = version.id
    subagent.updated_at = utcnow()
    session.add(subagent)
    note_change(session, SUBAGENTS_PUBLISHED, subagent.id)
    if number > 1:
        note_change(session, NEW_VERSIONS, version.id)
    return version


def _set_tags(session: Session, subagent: SubAgent, tags: list[str]) -> None:
    normalized = sorted({t.strip().lower() for t in tags if t.strip()})
    subagent.tags = normalized
    existing = session.exec(select(SubAgentTag).where(SubAgentTag.subagent_id == subagent.id))
    for row in existing:
        session.delete(row)
    session.flush()
    for tag in normalized:
        session.add(SubAgentTag(tag=tag, subagent_id=subagent.id))


def _create_subagent(session: Session, subagent: SubAgent) -> tuple[SubAgent, bool]:
    """Insert, or return the one a previous identical request made. (row, created)."""
    return insert_unless_exists(
        session,
        subagent,
        lambda: session.exec(
            select(SubAgent).where(SubAgent.dedupe_key == subagent.dedupe_key)
        ).first(),
    )


# ---- publish and fork ------------------------------------------------------------------


def publish(
    session: Session,
    publisher: User,
    *,
    title: str,
    category: str,
    bundle: bundles.Bundle,
    summary: str = "",
    story: str = "",
    tags: list[str] = (),
    visibility: str = "public",
    created_at=None,
) -> tuple[SubAgent, Version, bool]:
    """Publish a new root sub-agent. Identical bytes from the same author return the existing
    one (created=False)."""
    check_publishable(bundle, publisher, title=title, summary=summary, story=story)
    now = created_at or utcnow()
    subagent, created = _create_subagent(
        session,
        SubAgent(
            title=title,
            summary=summary,
            story=story,
            category=category,
            tags=[],
            author_id=publisher.id,
            visibility=visibility,
            dedupe_key=f"{publisher.id}:0:{bundle.sha256}",
            created_at=now,
            updated_at=now,
        ),
    )
    if not created:
        return subagent, session.get(Version, subagent.latest_version_id), False
    subagent.root_id = subagent.id
    _set_tags(session, subagent, list(tags))
    version = _new_version(session, subagent, bundle, 1, "")
    version.created_at = now
    return subagent, version, True


# ---- near-copies: a new root offered as a fork of what it copies ------------------------


def offer_originals(
    session: Session, publisher: User, subagent: SubAgent, bundle: bundles.Bundle, created: bool
) -> list[near_copies.OfferedOriginal]:
    """After ``publish``: the public sub-agents of others a new root nearly copies, offered to
    its publisher (a retried publish gets the offers its first try made)."""
    viewer = viewer_for(publisher)
    if created and subagent.parent_id is None:
        near_copies.find_originals(session, viewer, subagent, bundle)
    return near_copies.open_offers(session, viewer, subagent)


def publish_as_requested(
    session: Session, who: Principal, *, on_behalf_of: str | None, bundle: bundles.Bundle, **listing
) -> tuple[SubAgent, Version, bool, list[near_copies.OfferedOriginal]]:
    """A new root as the caller asks for it (the HTTP API and the MCP tool both call this),
    with the near-copy offers its publisher gets."""
    publisher = resolve_publisher(session, who, on_behalf_of)
    subagent, version, created = publish(session, publisher, bundle=bundle, **listing)
    return (
        subagent,
        version,
        created,
        offer_originals(session, publisher, subagent, bundle, created),
    )


def _decide_near_copies(session: Session, caller: Principal, subagent_id: int) -> SubAgent:
    """The copy whose offers the caller answers, held until the transaction ends: its author,
    or a service publishing on people's behalf (it published the root for them)."""
    copy = get_visible(session, caller, subagent_id)
    if caller.kind == "person":
        caller.require("publish")
        if copy.author_id != caller.user_id:
            raise Forbidden("Only the sub-agent's author answers its near-copy offers.")
    else:
        caller.require("publish:on-behalf")
    return lock_subagent(session, copy.id)


def offers_for(session: Session, caller: Principal, subagent: SubAgent):
    """The open offers of a sub-agent, for its author only (nobody else learns of them)."""
    if caller.user_id is None or caller.user_id != subagent.author_id:
        return []
    return near_copies.open_offers(session, caller, subagent)


def adopt_parent(
    session: Session, caller: Principal, subagent_id: int, original_id: int
) -> tuple[SubAgent, bool]:
    """Accept a near-copy offer: the new root becomes a fork of ``original_id`` (the version it
    was compared with), so lineage, reach and credit flow to it. Only within the offer's
    window and while nobody forked or installed the copy: re-parenting a node with forks would
    rewrite their lineage, and its installs were made of a root. (row, changed); accepting
    again answers the same fork unchanged."""
    copy = _decide_near_copies(session, caller, subagent_id)
    if copy.parent_id == original_id:
        return copy, False  # a retry, or a concurrent accept that went first
    offer = near_copies.find_offer(session, copy.id, original_id)
    if offer is None:
        raise NotFound(f"Sub-agent {copy.id} was not offered as a fork of {original_id}.")
    if copy.parent_id is not None:
        raise Conflict(f"Sub-agent {copy.id} is already a fork of {copy.parent_id}.")
    if offer.status != "open":
        raise Conflict(f"The offer to fork {original_id} was {offer.status}.")
    if near_copies.expired(offer, utcnow()):
        raise Conflict(
            f"The offer expired: a new root becomes a fork within "
            f"{near_copies.OFFER_WINDOW.days} days of publishing."
        )
    forked = session.exec(select(SubAgent.id).where(SubAgent.parent_id == copy.id)).first()
    installed = session.exec(select(Install.id).where(Install.subagent_id == copy.id)).first()
    if forked is not None or installed is not None:
        raise Conflict("It was forked or installed already: its lineage stays as published.")
    original = lock_subagent(session, original_id)
    publisher = viewer_for(get_author(session, copy))
    if original is None or not may_be_credited_as_original(publisher, original):
        raise Conflict(f"Sub-agent {original_id} can no longer be credited as the original.")
    check_fork_depth(original)
    # The copy leaves its own lineage (itself alone) for the original's.
    mark_catalog_changed(session, copy.root_id, original.root_id)
    copy.parent_id = original.id
    copy.parent_version_id = offer.original_version_id
    copy.root_id = original.root_id
    copy.depth = original.depth + 1
    copy.ancestry = f"{original.ancestry}/{original.id}" if original.ancestry else str(original.id)
    copy.updated_at = utcnow()
    session.add(copy)
    near_copies.settle(session, copy, "closed", accepted_id=original.id)
    recount_forks(session, original.id)
    return copy, True


def decline_near_copies(session: Session, caller: Principal, subagent_id: int) -> SubAgent:
    """Decline every open offer of the copy; those at the moderation line go to the
    moderators with their evidence (once, however often it is declined)."""
    copy = _decide_near_copies(session, caller, subagent_id)
    near_copies.settle(session, copy, "declined")
    return copy


@dataclass(frozen=True)
class ForkCommand:
    """A fork as a caller asks for it (the HTTP API's body, the MCP tool's arguments).
    ``category`` None keeps the parent's, empty ``tags`` keep the parent's tags, and
    ``on_behalf_of`` names the person a service publishes for."""

    parent_id: int
    title: str
    fork_request: str
    bundle: bundles.Bundle
    summary: str = ""
    story: str = ""
    tags: list[str] = field(default_factory=list)
    category: str | None = None
    parent_version_id: int | None = None
    fork_request_id: int | None = None
    visibility: str = "public"
    on_behalf_of: str | None = None


def fork_as_requested(
    session: Session, who: Principal, command: ForkCommand
) -> tuple[SubAgent, Version, bool]:
    """A fork as the caller asks for it (the HTTP API and the MCP tool both call this): the
    parent must be visible to the caller, who may publish on behalf of a person."""
    parent = get_visible(session, who, command.parent_id)
    publisher = resolve_publisher(session, who, command.on_behalf_of)
    if command.fork_request_id is not None:
        request = session.get(ForkRequest, command.fork_request_id)
        if not can_fulfil_fork_request(who, publisher, request):
            raise Forbidden(
                "Only the coding agent fulfils a fork request, publishing on behalf of the "
                "person who asked for it."
            )
    return fork(
        session,
        publisher,
        parent,
        title=command.title,
        bundle=command.bundle,
        fork_request=command.fork_request,
        fork_request_id=command.fork_request_id,
        parent_version_id=command.parent_version_id,
        category=command.category,
        summary=command.summary,
        story=command.story,
        tags=command.tags or None,
        visibility=command.visibility,
    )


def fork(
    session: Session,
    publisher: User,
    parent: SubAgent,
    *,
    title: str,
    bundle: bundles.Bundle,
    fork_request: str,
    fork_request_id: int | None = None,
    parent_version_id: int | None = None,
    category: str | None = None,
    summary: str = "",
    story: str = "",
    tags: list[str] | None = None,
    visibility: str = "public",
    created_at=None,
) -> tuple[SubAgent, Version, bool]:
    """Fork ``parent`` (which the publisher must be able to see) into a new sub-agent."""
    if not can_view(viewer_for(publisher), parent):
        raise NotFound(f"No sub-agent {parent.id}.")
    # Forks of one parent take turns (its fork_count is recounted below, and a queued request
    # is fulfilled once), each reading what the previous one committed.
    parent = lock_subagent(session, parent.id)
    if parent.status == "quarantined":
        raise Conflict("A quarantined sub-agent cannot be forked.")
    parent_version = get_version(session, parent, parent_version_id)
    dedupe_key = f"{publisher.id}:{parent.id}:{bundle.sha256}"
    request = None
    if fork_request_id is not None:
        request = session.get(ForkRequest, fork_request_id)
        if request is None or request.subagent_id != parent.id:
            raise Unprocessable(
                f"Fork request {fork_request_id} does not ask for a fork of {parent.id}.",
                errors=[{"location": "fork_request_id", "message": "not a request for this"}],
            )
        if request.status != "open":
            # A retry of the fork that fulfilled it (same publisher, parent and bytes) finds
            # that fork, as any retried fork does; another fork finds the request taken.
            earlier = _fulfilling_fork(session, request, dedupe_key)
            if earlier is not None:
                return earlier, session.get(Version, earlier.latest_version_id), False
            raise Conflict(f"Fork request {fork_request_id} is already {request.status}.")
    check_publishable(bundle, publisher, title=title, summary=summary, story=story)
    check_fork_data(parent_version.manifest, bundle.manifest)
    check_fork_depth(parent)
    now = created_at or utcnow()
    ancestry = f"{parent.ancestry}/{parent.id}" if parent.ancestry else str(parent.id)
    child, created = _create_subagent(
        session,
        SubAgent(
            title=title,
            summary=summary or (parent.summary if may_inherit_listing(parent) else ""),
            story=story,
            category=category or parent.category,
            tags=[],
            author_id=publisher.id,
            visibility=visibility,
            parent_id=parent.id,
            parent_version_id=parent_version.id,
            root_id=parent.root_id,
            depth=parent.depth + 1,
            ancestry=ancestry,
            fork_request_text=fork_request,
            fork_request_id=request.id if request else None,
            dedupe_key=dedupe_key,
            created_at=now,
            updated_at=now,
        ),
    )
    if not created:
        return child, session.get(Version, child.latest_version_id), False
    if tags is None:
        tags = parent.tags if may_inherit_listing(parent) else []
    _set_tags(session, child, list(tags))
    version = _new_version(session, child, bundle, 1, "")
    version.created_at = now
    recount_forks(session, parent.id)
    if request is not None:
        request.status = "fulfilled"
        request.fulfilled_by_id = child.id
        request.fulfilled_at = now
        session.add(request)
    return child, version, True


def _fulfilling_fork(session: Session, request: ForkRequest, dedupe_key: str) -> SubAgent | None:
    """The fork that fulfilled ``request``, if it is the one ``dedupe_key`` names."""
    if request.fulfilled_by_id is None:
        return None
    earlier = session.get(SubAgent, request.fulfilled_by_id)
    return earlier if earlier is not None and earlier.dedupe_key == dedupe_key else None


def publish_version(
    session: Session, publisher: User, subagent: SubAgent, bundle: bundles.Bundle, changelog: str
) -> tuple[Version, bool]:
    if subagent.author_id != publisher.id:
        if not can_view(viewer_for(publisher), subagent):
            raise NotFound(f"No sub-agent {subagent.id}.")
        raise Forbidden("Only the author publishes new versions of a sub-agent.")
    # Versions of one sub-agent take turns: whether these bytes are a version already, and
    # the next number, are read once the previous publish has committed.
    subagent = lock_subagent(session, subagent.id)
    if subagent.status == "quarantined":
        raise Conflict("A quarantined sub-agent takes no new versions.")
    existing = session.exec(
        select(Version).where(Version.subagent_id == subagent.id, Version.sha256 == bundle.sha256)
    ).first()
    if existing is not None:
        return existing, False
    check_publishable(bundle, publisher, changelog=changelog)
    number = (
        session.exec(
            select(func.max(Version.number)).where(Version.subagent_id == subagent.id)
        ).one()
        or 0
    ) + 1
    return _new_version(session, subagent, bundle, number, changelog), True


# ---- edits and moderation --------------------------------------------------------------


def update_listing(session: Session, caller: Principal, subagent: SubAgent, changes: dict) -> None:
    if subagent.author_id != caller.user_id:
        raise Forbidden("Only the author edits a sub-agent's listing.")
    text = {name: changes[name] for name in ("title", "summary", "story") if changes.get(name)}
    check_publishable(None, session.get(User, subagent.author_id), **text)
    mark_catalog_changed(session, subagent.root_id)
    tags = changes.pop("tags", None)
    for name, value in changes.items():
        if value is not None:
            setattr(subagent, name, str(value))
    if tags is not None:
        _set_tags(session, subagent, tags)
    subagent.updated_at = utcnow()
    session.add(subagent)
    if changes.get("visibility") is not None:
        _recount_parent_forks(session, subagent)


def _recount_parent_forks(session: Session, subagent: SubAgent) -> None:
    """After a fork's visibility or status changed: whether its parent counts it may have."""
    if subagent.parent_id is not None:
        lock_subagent(session, subagent.parent_id)
        recount_forks(session, subagent.parent_id)


def yank(
    session: Session, caller: Principal, subagent: SubAgent, reason: str, version_id: int | None
) -> None:
    if not can_yank(caller, subagent):
        raise Forbidden("Only the author or a moderator yanks a sub-agent.")
    mark_catalog_changed(session, subagent.root_id)
    if version_id is not None:
        version = get_version(session, subagent, version_id)
        version.status, version.status_reason = "yanked", reason
        session.add(version)
        return
    if subagent.status == "quarantined":
        raise Conflict("The sub-agent is quarantined; a moderator lifts that first.")
    subagent.status, subagent.status_reason = "yanked", reason
    subagent.updated_at = utcnow()
    session.add(subagent)
    _recount_parent_forks(session, subagent)


def quarantine(
    session: Session, caller: Principal, subagent: SubAgent, reason: str, lift: bool
) -> None:
    if not can_moderate(caller):
        raise Forbidden("Only moderators quarantine.")
    mark_catalog_changed(session, subagent.root_id)
    subagent.status = "active" if lift else "quarantined"
    subagent.status_reason = None if lift else reason
    subagent.updated_at = utcnow()
    session.add(subagent)
    _recount_parent_forks(session, subagent)
    if not lift:
        for report in session.exec(
            select(Report).where(Report.subagent_id == subagent.id, Report.status == "open")
        ):
            report.status = "actioned"
            session.add(report)


def report(
    session: Session, caller: Principal, subagent: SubAgent, reason: str, detail: str
) -> tuple[Report, bool]:
    caller.require()

    def filed() -> Report | None:
        return session.exec(
            select(Report).where(
                Report.subagent_id == subagent.id, Report.reporter_id == caller.user_id
            )
        ).first()

    existing = filed()
    if existing is not None:
        return existing, False
    row = Report(subagent_id=subagent.id, reporter_id=caller.user_id, reason=reason, detail=detail)
    return insert_unless_exists(session, row, filed)
