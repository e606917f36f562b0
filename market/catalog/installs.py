"""Importing sub-agents into a user's agent, and the queue of customization requests."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_
from sqlmodel import Session, select

from market.catalog.counters import count_install_change, lock_subagent
from market.catalog.models import ForkRequest, Install, SubAgent
from market.catalog.services import get_version
from market.identity.access import can_view, sees_every_fork_request, viewable_clause
from market.identity.models import User
from market.identity.tokens import Principal
from market.platform.db import id_in
from market.platform.errors import Conflict, Forbidden
from market.platform.pagination import decode_cursor, encode_cursor, newest_first_page
from market.platform.time import utcnow
from market.usage.ingest import log_install


@dataclass
class Installed:
    """What an install did: the caller's install row, the scopes this version asks for that
    were not granted before, and whether the install was made (or turned back on) now."""

    install: Install
    new_scopes: list[str]
    created: bool


@dataclass
class InstalledRow:
    """One of the caller's installs with the sub-agent and its author, for a list."""

    install: Install
    subagent: SubAgent
    author: User


@dataclass
class InstallPage:
    items: list[InstalledRow]
    next_cursor: str | None


@dataclass
class QueuedRequest:
    request: ForkRequest
    requester: User


@dataclass
class ForkRequestPage:
    items: list[QueuedRequest]
    next_cursor: str | None


def _previously_granted(session: Session, user_id: int, subagent: SubAgent) -> set[str] | None:
    """Scopes the user granted before: for this sub-agent (an update) or for its parent."""
    for candidate in (subagent.id, subagent.parent_id):
        if candidate is None:
            continue
        earlier = session.exec(
            select(Install).where(Install.user_id == user_id, Install.subagent_id == candidate)
        ).first()
        if earlier is not None:
            return set(earlier.granted_scopes)
    return None


def scopes_to_ask(session: Session, user_id: int, subagent: SubAgent, version) -> list[str]:
    """The scopes ``version`` asks for that the user has not granted before (for this
    sub-agent, or its parent): what installing it must ask them again. Empty for a first
    install with nothing granted before: the install itself is the asking."""
    granted_before = _previously_granted(session, user_id, subagent)
    if granted_before is None:
        return []
    return sorted(set(version.manifest.get("scopes", [])) - granted_before)


def install(
    session: Session,
    caller: Principal,
    subagent: SubAgent,
    *,
    version_id: int | None,
    source: str,
    exposure_id: str | None,
) -> Installed:
    caller.require("install")
    # Installs of one sub-agent take turns: the install row read below is what the previous
    # request committed, so concurrent first installs make one row and one 201, and only the
    # request that turns the install on counts it.
    subagent = lock_subagent(session, subagent.id)
    version = get_version(session, subagent, version_id)
    existing = _install_row(session, caller.user_id, subagent.id)
    already_has_version = existing is not None and existing.version_id == version.id
    is_author = subagent.author_id == caller.user_id
    if subagent.status == "quarantined":
        raise Conflict(f"This sub-agent is quarantined: {subagent.status_reason}")
    if not already_has_version and not is_author:
        if subagent.status == "yanked":
            raise Conflict(f"This sub-agent was yanked: {subagent.status_reason}")
        if version.status == "yanked":
            raise Conflict(f"Version {version.number} was yanked: {version.status_reason}")
    scopes = sorted(set(version.manifest.get("scopes", [])))
    new_scopes = scopes_to_ask(session, caller.user_id, subagent, version)
    now = utcnow()
    if existing is None:
        existing = Install(
            user_id=caller.user_id,
            subagent_id=subagent.id,
            version_id=version.id,
            source=source,
            exposure_id=exposure_id,
            granted_scopes=scopes,
        )
        created = True
    else:
        created = not existing.active
        existing.active = True
        existing.version_id = version.id
        existing.granted_scopes = scopes
        existing.updated_at = now
    session.add(existing)
    if created:
        count_install_change(session, subagent.id, +1)
        log_install(session, caller.user_id, subagent.id, "install", now)
    return Installed(existing, new_scopes, created)


def uninstall(session: Session, caller: Principal, subagent: SubAgent) -> bool:
    caller.require("install")
    lock_subagent(session, subagent.id)  # see install()
    existing = _install_row(session, caller.user_id, subagent.id)
    if existing is None or not existing.active:
        return False
    existing.active = False
    existing.updated_at = utcnow()
    session.add(existing)
    count_install_change(session, subagent.id, -1)
    log_install(session, caller.user_id, subagent.id, "uninstall", existing.updated_at)
    return True


def _install_row(session: Session, user_id: int, subagent_id: int) -> Install | None:
    return session.exec(
        select(Install)
        .where(Install.user_id == user_id, Install.subagent_id == subagent_id)
        .execution_options(populate_existing=True)
    ).first()


def my_installs(
    session: Session, caller: Principal, *, limit: int, cursor: str | None
) -> InstallPage:
    caller.require()
    statement = (
        select(Install, SubAgent, User)
        .join(SubAgent, SubAgent.id == Install.subagent_id)
        .join(User, User.id == SubAgent.author_id)
        .where(Install.user_id == caller.user_id, Install.active)
    )
    rows, next_cursor = newest_first_page(
        session, statement, Install.id, limit=limit, cursor=cursor, row_id=lambda row: row[0].id
    )
    items = [
        InstalledRow(inst, sa, author)
        for inst, sa, author in rows
        # An installed sub-agent that later went private or quarantined drops out of view.
        if can_view(caller, sa)
    ]
    return InstallPage(items=items, next_cursor=next_cursor)


def request_fork(
    session: Session, caller: Principal, subagent: SubAgent, text: str
) -> tuple[ForkRequest, bool]:
    caller.require("request")
    text = text.strip()
    # Requests for one sub-agent take turns, so concurrent identical requests find the first
    # one's row instead of each adding their own (there is no unique key on the text).
    subagent = lock_subagent(session, subagent.id)
    existing = session.exec(
        select(ForkRequest).where(
            ForkRequest.subagent_id == subagent.id,
            ForkRequest.requester_id == caller.user_id,
            ForkRequest.status == "open",
            ForkRequest.text == text,
        )
    ).first()
    if existing is not None:
        return existing, False
    if subagent.status != "active":
        raise Conflict(f"This sub-agent is {subagent.status}; ask for a fork of another.")
    row = ForkRequest(subagent_id=subagent.id, requester_id=caller.user_id, text=text)
    session.add(row)
    session.flush()
    return row, True


def fork_request_queue(
    session: Session, caller: Principal, *, status: str, limit: int, cursor: str | None
) -> ForkRequestPage:
    """The coding agent's queue. Services with publish:on-behalf and moderators see every
    request; a person sees their own."""
    caller.require()
    statement = (
        select(ForkRequest, User, SubAgent)
        .join(User, User.id == ForkRequest.requester_id)
        .join(SubAgent, SubAgent.id == ForkRequest.subagent_id)
        .where(ForkRequest.status == status)
    )
    if not sees_every_fork_request(caller):
        if caller.kind != "person":
            raise Forbidden("The fork-request queue needs the publish:on-behalf scope.")
        statement = statement.where(ForkRequest.requester_id == caller.user_id)
    # Requests for what the caller may no longer see (made private, quarantined) drop out.
    statement = statement.where(viewable_clause(caller))
    if cursor:
        (last_id,) = decode_cursor(cursor, (int,))
        statement = statement.where(and_(ForkRequest.id > last_id))
    rows = list(session.exec(statement.order_by(ForkRequest.id).limit(limit + 1)))
    items = [QueuedRequest(req, user) for req, user, _sa in rows[:limit]]
    next_cursor = encode_cursor(rows[limit - 1][0].id) if len(rows) > limit else None
    return ForkRequestPage(items=items, next_cursor=next_cursor)


@dataclass
class MyForkRequest:
    """One of the caller's fork requests, with the sub-agent it asks to fork and, once
    fulfilled, the fork that answered it (None while open, or if the fork is out of view)."""

    request: ForkRequest
    subagent: SubAgent
    fork: SubAgent | None


@dataclass
class MyForkRequestPage:
    items: list[MyForkRequest]
    next_cursor: str | None


def my_fork_requests(
    session: Session, caller: Principal, *, limit: int, cursor: str | None
) -> MyForkRequestPage:
    """The caller's own fork requests in every status, newest first. Requests for what the
    caller may no longer see (made private, quarantined) drop out, as in the queue."""
    caller.require()
    statement = (
        select(ForkRequest, SubAgent)
        .join(SubAgent, SubAgent.id == ForkRequest.subagent_id)
        .where(ForkRequest.requester_id == caller.user_id, viewable_clause(caller))
    )
    rows, next_cursor = newest_first_page(
        session, statement, ForkRequest.id, limit=limit, cursor=cursor, row_id=lambda row: row[0].id
    )
    fork_ids = [req.fulfilled_by_id for req, _sa in rows if req.fulfilled_by_id]
    forks = {
        fork.id: fork
        for fork in (
            session.exec(select(SubAgent).where(id_in(session, SubAgent.id, fork_ids)))
            if fork_ids
            else ()
        )
        if can_view(caller, fork)
    }
    items = [MyForkRequest(req, sa, forks.get(req.fulfilled_by_id)) for req, sa in rows]
    return MyForkRequestPage(items=items, next_cursor=next_cursor)
