"""The caller's own things, the fork-request queue, moderation lists and health."""

from __future__ import annotations

from apiflask import APIBlueprint
from pydantic import BaseModel
from sqlmodel import select

from market.catalog import installs
from market.catalog.models import Report
from market.catalog.schemas import (
    ForkRequestList,
    ForkRequestQuery,
    InstallList,
    PageQuery,
    ReportList,
    ReportOut,
)
from market.identity.access import can_moderate
from market.identity.tokens import caller
from market.platform.api_deps import db
from market.platform.errors import Forbidden
from market.platform.pagination import decode_cursor, encode_cursor

bp = APIBlueprint("account", __name__, tag="Account")


class Me(BaseModel):
    handle: str
    kind: str
    role: str
    scopes: list[str]


class Health(BaseModel):
    status: str


@bp.get("/health")
@bp.output(Health)
def health():
    """Liveness: answers without touching the database."""
    return Health(status="ok")


@bp.get("/me")
@bp.output(Me)
def me():
    """Who the token belongs to and what it may do."""
    who = caller()
    who.require()
    return Me(handle=who.handle, kind=who.kind, role=who.role, scopes=sorted(who.scopes))


@bp.get("/me/installs")
@bp.input(PageQuery, location="query", arg_name="query")
@bp.output(InstallList)
def my_installs(query: PageQuery):
    """The caller's imported sub-agents, newest first."""
    return installs.my_installs(db(), caller(), limit=query.limit, cursor=query.cursor)


@bp.get("/fork-requests")
@bp.input(ForkRequestQuery, location="query", arg_name="query")
@bp.output(ForkRequestList)
def fork_requests(query: ForkRequestQuery):
    """The coding agent's queue of customization requests (oldest first)."""
    return installs.fork_request_queue(
        db(), caller(), status=query.status, limit=query.limit, cursor=query.cursor
    )


@bp.get("/reports")
@bp.input(PageQuery, location="query", arg_name="query")
@bp.output(ReportList)
def reports(query: PageQuery):
    """Open reports, for moderators."""
    who = caller()
    who.require()
    if not can_moderate(who):
        raise Forbidden("Only moderators read reports.")
    statement = select(Report).where(Report.status == "open")
    if query.cursor:
        (last_id,) = decode_cursor(query.cursor, (int,))
        statement = statement.where(Report.id > last_id)
    rows = list(db().exec(statement.order_by(Report.id).limit(query.limit + 1)))
    items = [ReportOut.model_validate(r, from_attributes=True) for r in rows[: query.limit]]
    next_cursor = encode_cursor(rows[query.limit - 1].id) if len(rows) > query.limit else None
    return ReportList(items=items, next_cursor=next_cursor)
