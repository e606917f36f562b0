"""Catalog tables: people and services, tokens, sub-agents as a fork tree, versions, installs.

Fork links (parent, parent version, root, depth, ancestry) are written once by the server at
fork time and never change, which is what lets lineage be read in one query.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    UniqueConstraint,
)
from sqlmodel import Field, SQLModel

# One definition of a stored moment for every table (UTC, with its zone).
from feedback.models import timestamp_field, utcnow  # noqa: F401 - utcnow is used from here


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


class SubAgent(SQLModel, table=True):
    __tablename__ = "subagent"
    __table_args__ = (
        Index("ix_subagent_listing_new", "visibility", "status", "created_at", "id"),
        Index("ix_subagent_listing_installs", "visibility", "status", "install_count", "id"),
        # A node's forks, most installed first (fork lists, "show more", the tree's top
        # children per node): read in order from the index instead of sorted per parent.
        # It also serves every plain parent_id lookup.
        Index("ix_subagent_children", "parent_id", "install_count", "id"),
        # A lineage's members with what decides who sees them: counting the nodes of a
        # lineage a viewer may see (the tree view's size) reads the index alone.
        Index("ix_subagent_lineage", "root_id", "visibility", "status", "author_id", "id"),
        # What changed since a moment (every worker's suggestion index sweeps for listing
        # edits, yanks and visibility changes once a minute).
        Index("ix_subagent_updated_at", "updated_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    title: str = Field(max_length=120)
    summary: str = Field(default="", max_length=300)
    story: str = Field(default="", max_length=4000)
    category: str = Field(max_length=32, index=True)
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    author_id: int = Field(foreign_key="user_account.id", index=True)
    visibility: str = Field(default="public", max_length=16)  # public | unlisted | private
    status: str = Field(default="active", max_length=16)  # active | yanked | quarantined
    status_reason: str | None = Field(default=None, max_length=500)

    parent_id: int | None = Field(default=None, foreign_key="subagent.id")
    # use_alter: subagent and subagent_version reference each other.
    parent_version_id: int | None = Field(
        default=None,
        sa_column=Column(
            Integer,
            ForeignKey("subagent_version.id", use_alter=True, name="fk_subagent_parent_version"),
            nullable=True,
        ),
    )
    root_id: int | None = Field(default=None)
    depth: int = Field(default=0)
    # Ancestor ids, root first, slash-separated ("1/5/9"); immutable like the parent link.
    ancestry: str = Field(default="", max_length=4000)
    fork_request_text: str | None = Field(default=None, max_length=2000)
    fork_request_id: int | None = Field(
        default=None,
        sa_column=Column(
            Integer,
            ForeignKey("fork_request.id", use_alter=True, name="fk_subagent_fork_request"),
            nullable=True,
        ),
    )

    latest_version_id: int | None = Field(default=None)
    # "<author>:<parent or 0>:<sha256 of the first bundle>": a retried publish or fork of the
    # same bytes finds the sub-agent it already made instead of making a second one.
    dedupe_key: str = Field(max_length=120, unique=True)
    install_count: int = Field(default=0)
    fork_count: int = Field(default=0)
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()


class SubAgentTag(SQLModel, table=True):
    __tablename__ = "subagent_tag"

    tag: str = Field(max_length=40, primary_key=True)
    subagent_id: int = Field(foreign_key="subagent.id", primary_key=True, index=True)


class BundleBlob(SQLModel, table=True):
    """Bundle bytes, content-addressed and shared by every version with the same SHA-256."""

    __tablename__ = "bundle_blob"

    sha256: str = Field(max_length=64, primary_key=True)
    # zlib-compressed canonical bytes; small text bundles compress 3-5x.
    content: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    size_bytes: int


class Version(SQLModel, table=True):
    __tablename__ = "subagent_version"
    __table_args__ = (
        UniqueConstraint("subagent_id", "number", name="uq_version_number"),
        UniqueConstraint("subagent_id", "sha256", name="uq_version_sha256"),
    )

    id: int | None = Field(default=None, primary_key=True)
    subagent_id: int = Field(foreign_key="subagent.id", index=True)
    number: int
    sha256: str = Field(max_length=64, foreign_key="bundle_blob.sha256", index=True)
    manifest: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    changelog: str = Field(default="", max_length=4000)
    status: str = Field(default="active", max_length=16)  # active | yanked
    status_reason: str | None = Field(default=None, max_length=500)
    size_bytes: int = 0
    file_count: int = 0
    created_at: datetime = timestamp_field()


class Install(SQLModel, table=True):
    __tablename__ = "install"
    __table_args__ = (UniqueConstraint("user_id", "subagent_id", name="uq_install_user"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    subagent_id: int = Field(foreign_key="subagent.id", index=True)
    version_id: int = Field(foreign_key="subagent_version.id")
    source: str = Field(default="browse", max_length=16)
    exposure_id: str | None = Field(default=None, max_length=64)
    granted_scopes: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    active: bool = Field(default=True)
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()


class ForkRequest(SQLModel, table=True):
    __tablename__ = "fork_request"
    __table_args__ = (Index("ix_fork_request_status", "status", "created_at", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    subagent_id: int = Field(foreign_key="subagent.id", index=True)
    requester_id: int = Field(foreign_key="user_account.id", index=True)
    text: str = Field(max_length=2000)
    status: str = Field(default="open", max_length=16)  # open | fulfilled | closed
    fulfilled_by_id: int | None = Field(default=None)
    created_at: datetime = timestamp_field()
    fulfilled_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class Report(SQLModel, table=True):
    __tablename__ = "report"
    __table_args__ = (UniqueConstraint("subagent_id", "reporter_id", name="uq_report_reporter"),)

    id: int | None = Field(default=None, primary_key=True)
    subagent_id: int = Field(foreign_key="subagent.id", index=True)
    reporter_id: int = Field(foreign_key="user_account.id")
    reason: str = Field(max_length=32)
    detail: str = Field(default="", max_length=2000)
    status: str = Field(default="open", max_length=16)
    created_at: datetime = timestamp_field()
