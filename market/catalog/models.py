"""Catalog tables: sub-agents as a fork tree, bundles, versions, installs, fork requests and
reports, near-copy signatures and offers, and the categories a sub-agent is filed under.

Fork links (parent, parent version, root, depth, ancestry) are written once by the server at
fork time and never change, which is what lets lineage be read in one query. The one exception
is a new root that accepts a near-copy offer (``market.catalog.near_copies``): within a window,
before anyone forked or installed it, it becomes the fork of the original it was copied from.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    UniqueConstraint,
    false,
    text,
)
from sqlmodel import Field, SQLModel

from market.platform.time import timestamp_field


class SubAgent(SQLModel, table=True):
    __tablename__ = "subagent"
    __table_args__ = (
        Index("ix_subagent_listing_new", "visibility", "status", "created_at", "id"),
        Index("ix_subagent_listing_installs", "visibility", "status", "install_count", "id"),
        # A category's listing, newest or most installed first: read in order from the index.
        # Through the two above, a category's page filtered ten rows for each it kept, each a
        # heap fetch (50 ms of cold reads at a million sub-agents).
        Index("ix_subagent_category_new", "category", "visibility", "status", "created_at", "id"),
        Index(
            "ix_subagent_category_installs",
            "category",
            "visibility",
            "status",
            "install_count",
            "id",
        ),
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
    # The sub-agent's family: its root's id, a root's own (set by publish right after the
    # insert that gives it an id, copied from the parent by fork). Every stored row has one.
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
        # The versions whose forks have not been offered them yet: a few, found by the sweep.
        Index(
            "ix_version_offer_pending",
            "id",
            postgresql_where=text("offer_pending"),
            sqlite_where=text("offer_pending"),
        ),
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
    # Set in the transaction that stores a version after the first (market.catalog.services),
    # cleared once its parent's forks were offered it (market.catalog.upstream.propose_updates):
    # an offer whose task was lost after the commit (the process killed, the queue away) is
    # made by the sweep instead of never.
    offer_pending: bool = Field(default=False, sa_column_kwargs={"server_default": false()})


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


class UpstreamProposal(SQLModel, table=True):
    """A parent's new version offered to one of its forks: the three-way merge of the parent's
    change (``base_version`` → ``upstream_version``) onto the fork as it was
    (``fork_version``), made once per fork and upstream version by a task after the publish.

    ``status``: open, accepted (``merged_version_id`` is the fork's version it made; its
    ``upstream_version`` is the base of the fork's next proposal), declined, or superseded
    (a newer upstream version was offered while it was open). ``conflicted`` proposals wait
    for the coding agent, which resolves them; the fork's author cannot accept them as they
    are. ``merged_sha256`` names the merged bundle's blob (with conflict markers where it
    conflicted); None when the merged files are not a bundle the catalog accepts."""

    __tablename__ = "upstream_proposal"
    __table_args__ = (
        UniqueConstraint("fork_id", "upstream_version_id", name="uq_upstream_proposal"),
        # A fork's proposals newest first (its page's count, the list), and the coding
        # agent's queue of open conflicted ones.
        Index("ix_upstream_proposal_fork", "fork_id", "status", "id"),
        Index("ix_upstream_proposal_queue", "status", "conflicted", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    fork_id: int = Field(foreign_key="subagent.id")
    parent_id: int = Field(foreign_key="subagent.id")
    base_version_id: int = Field(foreign_key="subagent_version.id")
    upstream_version_id: int = Field(foreign_key="subagent_version.id")
    fork_version_id: int = Field(foreign_key="subagent_version.id")
    status: str = Field(default="open", max_length=16)  # open | accepted | declined | superseded
    conflicted: bool = Field(default=False)
    merged_sha256: str | None = Field(default=None, max_length=64, foreign_key="bundle_blob.sha256")
    # [{path, status, reason}] per path of any side: evolution.merge.FileStatus values.
    file_summary: list[dict] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # {"files": [{path, reason, regions: [{base, fork, upstream}]}], "manifest": [{key,
    # reason, base?, fork?, upstream?}], "bundle": reason or absent}; a side missing from a
    # manifest conflict removed the value.
    conflicts: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    added_scopes: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    merged_version_id: int | None = Field(default=None, foreign_key="subagent_version.id")
    created_at: datetime = timestamp_field()
    decided_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class Report(SQLModel, table=True):
    __tablename__ = "report"
    __table_args__ = (
        UniqueConstraint("subagent_id", "reporter_id", name="uq_report_reporter"),
        # An offer is reported once however many times it is declined or swept.
        UniqueConstraint("near_copy_offer_id", name="uq_report_near_copy_offer"),
    )

    id: int | None = Field(default=None, primary_key=True)
    subagent_id: int = Field(foreign_key="subagent.id", index=True)
    # None: filed by Sprig itself (a declined or ignored near-copy offer), not by a person.
    reporter_id: int | None = Field(default=None, foreign_key="user_account.id")
    reason: str = Field(max_length=32)
    detail: str = Field(default="", max_length=2000)
    status: str = Field(default="open", max_length=16)
    # The near-copy offer whose evidence a near-copy report carries.
    near_copy_offer_id: int | None = Field(
        default=None,
        sa_column=Column(
            Integer,
            ForeignKey("near_copy_offer.id", name="fk_report_near_copy_offer"),
            nullable=True,
        ),
    )
    created_at: datetime = timestamp_field()


class NearCopyBoilerplate(SQLModel, table=True):
    """Shingles too common in the public catalog to be evidence of copying (template text),
    learned from a sample of it (``evolution.near_copies.Boilerplate``). The newest row is in
    force; signatures name the row they were signed against."""

    __tablename__ = "near_copy_boilerplate"

    id: int | None = Field(default=None, primary_key=True)
    # Sorted unique uint32 shingle hashes, little-endian.
    hashes: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    sample_size: int
    learned_at: datetime = timestamp_field()


class NearCopySignature(SQLModel, table=True):
    """Each sub-agent's latest version as the near-copy check compares it, whatever its
    visibility (a private one made public later is found without re-reading its bundle); only
    publicly listed ones are ever read into the index others' publishes are checked against."""

    __tablename__ = "near_copy_signature"

    subagent_id: int = Field(
        sa_column=Column(Integer, ForeignKey("subagent.id"), primary_key=True, autoincrement=False)
    )
    version_id: int = Field(foreign_key="subagent_version.id")
    # The boilerplate row it was signed against (0: none learned yet).
    boilerplate_id: int = Field(default=0)
    # sha256 of the normalized text: equal for copies that differ only in naming and layout.
    fingerprint: str = Field(max_length=64, index=True)
    # NUM_PERM uint32 MinHash values, little-endian; None when too little of the bundle is its
    # own (nothing to credit).
    signature: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))


class NearCopyOffer(SQLModel, table=True):
    """A new root found to be a near-copy of another author's public sub-agent: its publisher
    is offered to make it a fork of the original (``open`` until ``accepted``, ``declined``,
    ``ignored`` past the window, or ``closed`` when another original was accepted)."""

    __tablename__ = "near_copy_offer"
    __table_args__ = (UniqueConstraint("subagent_id", "original_id", name="uq_near_copy_offer"),)

    id: int | None = Field(default=None, primary_key=True)
    subagent_id: int = Field(foreign_key="subagent.id", index=True)
    original_id: int = Field(foreign_key="subagent.id")
    # The original's version the copy was compared with: the parent version if accepted.
    original_version_id: int = Field(foreign_key="subagent_version.id")
    similarity: float = Field(sa_column=Column(Float, nullable=False))  # exact Jaccard
    shared_shingles: int
    # [{"path", "original_path", "shared", "share"}]: the copy's files and where they came from.
    matching_files: list[dict] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    status: str = Field(default="open", max_length=16)
    created_at: datetime = timestamp_field()
    decided_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


# The categories a sub-agent may be filed under (an input enum of every API that takes one).
CATEGORIES = (
    "diet",
    "hydration",
    "fitness",
    "health",
    "mood",
    "sleep",
    "finance",
    "study",
    "family",
    "hobby",
    "travel",
    "home",
)


Category = StrEnum("Category", {c: c for c in CATEGORIES})
