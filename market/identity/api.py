"""Who the caller is, their API tokens, and health. (The caller's installs, the fork-request
queue and the reports are catalog rows: ``market.catalog.api`` serves them under this tag.)"""

from __future__ import annotations

from apiflask import APIBlueprint
from pydantic import BaseModel

from market.identity.schemas import TokenList, TokenQuery
from market.identity.serialize import token_out
from market.identity.tokens import caller, list_tokens, revoke_token_id
from market.platform.api_deps import commit, db

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


@bp.get("/tokens")
@bp.input(TokenQuery, location="query", arg_name="query")
@bp.output(TokenList)
@bp.doc(operation_id="listTokens")
def tokens(query: TokenQuery):
    """The caller's own API tokens, newest first, revoked and expired ones included."""
    who = caller()
    who.require()
    page = list_tokens(db(), who.user_id, limit=query.limit, cursor=query.cursor)
    return TokenList(
        items=[token_out(row, who.token_id) for row in page.items], next_cursor=page.next_cursor
    )


@bp.delete("/tokens/<int(max=2147483647):token_id>")
@bp.output({}, status_code=204)
@bp.doc(operation_id="revokeToken")
def revoke(token_id: int):
    """Revoke one of the caller's own tokens (it is refused from the next request on; revoking
    one already revoked changes nothing). Another person's token is a 404, as a missing one."""
    who = caller()
    who.require()
    revoke_token_id(db(), token_id, owner_id=who.user_id)
    commit()
    return ""
