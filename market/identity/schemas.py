"""Response and query models of the account API's tokens (also what ``sprig tokens … --json``
prints, so scripts read one shape from either)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from market.platform.schemas import StrictInput, UtcDatetime


class TokenState(StrEnum):
    active = "active"
    expired = "expired"
    revoked = "revoked"


class TokenOut(BaseModel):
    """One of the caller's tokens: what it is for and whether it still works, never the
    secret or anything derived from it but its first characters."""

    id: int = Field(description="what revoking names it by")
    prefix: str = Field(description="the token's first characters, to tell copies apart")
    name: str
    scopes: list[str]
    state: TokenState
    current: bool = Field(description="the token this request was made with")
    created_at: UtcDatetime
    last_used_at: UtcDatetime | None = Field(
        description="recorded at most every five minutes; null if never used"
    )
    expires_at: UtcDatetime | None = Field(description="null: never expires")
    revoked_at: UtcDatetime | None


class TokenList(BaseModel):
    items: list[TokenOut]
    next_cursor: str | None


class TokenQuery(StrictInput):
    limit: int = Field(20, ge=1, le=100)
    cursor: Annotated[str, StringConstraints(max_length=200)] | None = None
