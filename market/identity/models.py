"""People and services, their API tokens, and browser sign-ins."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, DateTime
from sqlmodel import Field, SQLModel

from market.platform.time import timestamp_field


class User(SQLModel, table=True):
    __tablename__ = "user_account"

    id: int | None = Field(default=None, primary_key=True)
    handle: str = Field(max_length=40, unique=True, index=True)
    display_name: str = Field(max_length=80)
    kind: str = Field(default="person", max_length=16)  # person | service
    role: str = Field(default="user", max_length=16)  # user | moderator
    # Personal values: never shown to others, and never allowed inside a published bundle.
    email: str | None = Field(default=None, max_length=254)
    phone: str | None = Field(default=None, max_length=40)
    address: str | None = Field(default=None, max_length=300)
    bio: str = Field(default="", max_length=500)
    locale: str = Field(default="en-US", max_length=16)
    share_feedback_for_training: bool = Field(default=False)
    created_at: datetime = timestamp_field()


class ApiToken(SQLModel, table=True):
    __tablename__ = "api_token"

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    # SHA-256 of the token: tokens are 256-bit random, so a fast hash is enough to make a
    # stolen table useless while keeping lookup O(1).
    token_hash: str = Field(max_length=64, unique=True)
    prefix: str = Field(max_length=16)
    name: str = Field(default="", max_length=80)
    scopes: str = Field(default="", max_length=500)  # space-separated
    created_at: datetime = timestamp_field()
    # None: never expires. Past it the token is refused exactly like a revoked one.
    expires_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    # Written at most every few minutes (tokens.LAST_USED_EVERY), so a person can tell a
    # token still in use from a forgotten one before revoking it.
    last_used_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    revoked_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class WebSession(SQLModel, table=True):
    """A browser's sign-in. The session cookie holds a random key, the table only its SHA-256
    (a copied table signs no one in); every web request looks the key up, so ending the row
    (signing out) signs out every copy of the cookie."""

    __tablename__ = "web_session"

    id: int | None = Field(default=None, primary_key=True)
    key_hash: str = Field(max_length=64, unique=True)
    user_id: int = Field(foreign_key="user_account.id")
    # The token signed in with: its scopes apply and revoking it ends the session. None for
    # the embedded demo's picker, honoured only while the demo sign-in is on.
    api_token_id: int | None = Field(default=None, foreign_key="api_token.id")
    created_at: datetime = timestamp_field()
    last_seen_at: datetime = timestamp_field()
    expires_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    ended_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
