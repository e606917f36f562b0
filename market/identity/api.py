"""Who the caller is, and health. (The caller's installs, the fork-request queue and the
reports are catalog rows: ``market.catalog.api`` serves them under this tag.)"""

from __future__ import annotations

from apiflask import APIBlueprint
from pydantic import BaseModel

from market.identity.tokens import caller

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
@bp.doc(operation_id="getHealth")
def health():
    """Liveness: answers without touching the database."""
    return Health(status="ok")


@bp.get("/me")
@bp.output(Me)
@bp.doc(operation_id="getMe")
def me():
    """Who the token belongs to and what it may do."""
    who = caller()
    who.require()
    return Me(handle=who.handle, kind=who.kind, role=who.role, scopes=sorted(who.scopes))
