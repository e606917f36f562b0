"""Near-copies of public sub-agents, wired into publishing (the comparison itself is
``evolution.near_copies``).

* **Signatures**: every version published (root, fork or new version) writes its sub-agent's
  row in ``near_copy_signature`` in the publishing transaction: the MinHash signature of its
  distinctive shingles and the exact fingerprint of its normalized text. Rows are written for
  every visibility; only publicly listed sub-agents are ever read into the index below.
* **Boilerplate**: template text is learned from the newest ``BOILERPLATE_SAMPLE`` public,
  active sub-agents by :func:`refresh` (``sprig near-copies refresh``, the nightly
  ``sprig.refresh_near_copies`` task, and the demo loader), which re-signs every sub-agent
  whose row is missing or was signed against another boilerplate, in one transaction, so a
  reader sees the new boilerplate and its signatures together. Until a boilerplate is learned
  nothing is offered: without it every app written from a shared template looks like a copy of
  every other (precision 0 in ``bench/near_copies.py``).
* **Index**: one :class:`NearCopyIndex` per process and database, built on the first root
  published from the stored signatures of publicly listed sub-agents, then caught up before
  each query by the sub-agents whose row changed since (the ``updated_at`` index: publishes,
  new versions, visibility changes, yanks, quarantines), and rebuilt when a new boilerplate is
  in force. It is queried only when a new root is published (rarely, next to browsing), so it
  is built lazily in each worker rather than before the fork like the suggestion index; at
  100,000 sub-agents it holds 155 MiB (``bench/near_copies.py``).
* **Offers**: a new root's candidates come from the index (estimated Jaccard at least
  ``CANDIDATE_FLOOR``) and from equal fingerprints; each is checked again at answer time
  (``access.may_be_credited_as_original``: publicly listed, another author's, visible to the
  publisher) and kept when the *exact* Jaccard of the distinctive shingles reaches
  ``FORK_OFFER`` (0.35). The publisher may accept within ``OFFER_WINDOW`` (the copy becomes a
  fork of the original) or decline.
* **Moderation**: a declined offer, or one left open past the window, whose similarity reaches
  ``MODERATION`` (0.8: reformatted copies are at 1.0 and renamed ones at 0.81 median, while an
  edited copy, 0.68 median, is someone's own work built on the original and only offered a
  fork) files one report, with the matching files and the shared shingle count, that only
  moderators read. A private copy is never reported: it is shared with no one.

Privacy: a private or unlisted sub-agent is never in the index, never matched by fingerprint
and never offered, counted or reported to anyone else; a private root is still checked against
the public ones (its author is told what public sub-agent it resembles). The work a query does
depends only on the public catalog, not on what private sub-agents exist.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from weakref import WeakKeyDictionary

import numpy as np
from sqlalchemy import func, select, update
from sqlmodel import Session

from evolution.near_copies import (
    FORK_OFFER,
    MODERATION,
    Boilerplate,
    NearCopyIndex,
    distinctive_shingles,
    exact_fingerprint,
    jaccard,
    matching_files,
    signature,
)
from market.catalog import bundles
from market.catalog.counters import lock_subagent
from market.catalog.models import (
    BundleBlob,
    NearCopyBoilerplate,
    NearCopyOffer,
    NearCopySignature,
    Report,
    SubAgent,
    Version,
)
from market.identity.access import (
    may_be_credited_as_original,
    publicly_listed,
    publicly_listed_clause,
)
from market.identity.models import User
from market.identity.tokens import Principal
from market.platform.db import id_in, insert_unless_exists
from market.platform.time import as_utc, utcnow

# How long a new root may accept an offer (and stay undecided before an offer at the
# moderation line is reported): a publisher who was offered a fork answers at publish time
# or on the sub-agent's page within days, and a lineage that changes later surprises its users.
OFFER_WINDOW = timedelta(days=7)
# The index keeps candidates below the offer line, checked on their exact Jaccard: at
# J = 0.35 the 128-permutation estimate's standard error is 0.04, so a copy at the line is
# kept as a candidate unless its estimate is 2.5 errors low.
CANDIDATE_FLOOR = 0.25
MAX_CANDIDATES = 20  # most similar estimates checked exactly (each reads one bundle)
MAX_OFFERS = 5
BOILERPLATE_SAMPLE = 5000  # "a few thousand is enough" (evolution.near_copies.Boilerplate)
MATCHING_FILES_KEPT = 5
RESIGN_BATCH = 500
# How late a catalog transaction may commit after stamping updated_at and still be caught.
CATCH_UP_OVERLAP = timedelta(seconds=5)
NEAR_COPY_REASON = "near_copy"


def _to_bytes(values: np.ndarray) -> bytes:
    return np.asarray(values, "<u4").tobytes()


def _from_bytes(raw: bytes) -> np.ndarray:
    return np.frombuffer(raw, "<u4")


# ---- the process's index ---------------------------------------------------------------


class _SharedIndex:
    """The index and boilerplate of one database in this process (see the module docstring).
    One lock: catching up and querying take a few milliseconds, at root publishes only."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.boilerplate_id = -1
        self.boilerplate = Boilerplate.none()
        self.index: NearCopyIndex | None = None
        self.index_boilerplate_id = -1
        self.watermark: datetime | None = None
        self.indexed_at: dict[int, datetime] = {}

    def current_boilerplate(self, session: Session) -> tuple[int, Boilerplate]:
        newest = session.execute(select(func.max(NearCopyBoilerplate.id))).scalar_one() or 0
        if newest != self.boilerplate_id:
            row = session.get(NearCopyBoilerplate, newest) if newest else None
            self.boilerplate = Boilerplate(_from_bytes(row.hashes)) if row else Boilerplate.none()
            self.boilerplate_id = newest
        return self.boilerplate_id, self.boilerplate

    def caught_up(self, session: Session, publishing: int) -> NearCopyIndex:
        """The index with every other process's commits, read in the transaction publishing
        the sub-agent ``publishing``, which is left out: it may yet roll back, and the next
        catch-up after its commit adds it."""
        boilerplate_id, boilerplate = self.current_boilerplate(session)
        if self.index is None or self.index_boilerplate_id != boilerplate_id:
            self._build(session, boilerplate_id, boilerplate, publishing)
        else:
            self._catch_up(session, boilerplate_id, publishing)
        return self.index

    def _build(
        self, session: Session, boilerplate_id: int, boilerplate: Boilerplate, publishing: int
    ) -> None:
        self.watermark = session.execute(select(func.max(SubAgent.updated_at))).scalar_one()
        rows = session.execute(
            select(NearCopySignature.subagent_id, NearCopySignature.signature, SubAgent.updated_at)
            .join(SubAgent, SubAgent.id == NearCopySignature.subagent_id)
            .where(
                publicly_listed_clause(),
                NearCopySignature.boilerplate_id == boilerplate_id,
                NearCopySignature.signature.is_not(None),
                SubAgent.id != publishing,
            )
        ).all()
        self.indexed_at = {row.subagent_id: row.updated_at for row in rows}
        self.index = NearCopyIndex.from_signatures(
            boilerplate,
            ((row.subagent_id, _from_bytes(row.signature)) for row in rows),
            fork_offer=CANDIDATE_FLOOR,
            moderation=MODERATION,
        )
        self.index_boilerplate_id = boilerplate_id

    def _catch_up(self, session: Session, boilerplate_id: int, publishing: int) -> None:
        """Re-read the sub-agents whose row changed since the watermark (a few seconds back,
        for a transaction that committed late): add the publicly listed, drop the rest."""
        statement = (
            select(
                SubAgent.id,
                SubAgent.visibility,
                SubAgent.status,
                SubAgent.updated_at,
                NearCopySignature.boilerplate_id,
                NearCopySignature.signature,
            )
            .outerjoin(NearCopySignature, NearCopySignature.subagent_id == SubAgent.id)
            .where(SubAgent.id != publishing)
        )
        watermark = self.watermark
        if watermark is not None:
            statement = statement.where(SubAgent.updated_at >= watermark - CATCH_UP_OVERLAP)
        for row in session.execute(statement):
            if watermark is None or row.updated_at > watermark:
                watermark = row.updated_at
            if self.indexed_at.get(row.id) == row.updated_at:
                continue
            if (
                publicly_listed(row.visibility, row.status)
                and row.signature is not None
                and row.boilerplate_id == boilerplate_id
            ):
                self.index.add_signature(row.id, _from_bytes(row.signature))
                self.indexed_at[row.id] = row.updated_at
            else:
                self.index.remove(row.id)
                self.indexed_at.pop(row.id, None)
        # Moved once every row is applied (they come in no order of ``updated_at``): a catch-up
        # that fails part way starts the next from where this one did.
        self.watermark = watermark


_indexes: WeakKeyDictionary = WeakKeyDictionary()
_indexes_lock = threading.Lock()


def _shared_index(session: Session) -> _SharedIndex:
    """This process's index of the database ``session`` is bound to (an engine per app, so a
    test's fresh app starts from a fresh index)."""
    with _indexes_lock:
        return _indexes.setdefault(session.get_bind(), _SharedIndex())


# ---- signing ---------------------------------------------------------------------------


def sign(session: Session, subagent_id: int, version_id: int, bundle: bundles.Bundle) -> None:
    """Write the signature of a sub-agent's new latest version (in its publishing
    transaction; the caller holds the sub-agent, so versions of one sub-agent take turns)."""
    shared = _shared_index(session)
    with shared.lock:
        boilerplate_id, boilerplate = shared.current_boilerplate(session)
    _write_signature(session, subagent_id, version_id, bundle, boilerplate_id, boilerplate)


def _write_signature(
    session: Session,
    subagent_id: int,
    version_id: int,
    bundle: bundles.Bundle,
    boilerplate_id: int,
    boilerplate: Boilerplate,
) -> None:
    minhash = signature(bundle, boilerplate)
    row = session.get(NearCopySignature, subagent_id) or NearCopySignature(subagent_id=subagent_id)
    row.version_id = version_id
    row.boilerplate_id = boilerplate_id
    row.fingerprint = exact_fingerprint(bundle)
    row.signature = None if minhash is None else _to_bytes(minhash)
    session.add(row)


def _bundles_of(session: Session, version_ids: Iterable[int]) -> dict[int, bundles.Bundle]:
    """The bundles of some versions, by version id, in one read."""
    rows = session.execute(
        select(Version.id, BundleBlob.content)
        .join(BundleBlob, BundleBlob.sha256 == Version.sha256)
        .where(id_in(session, Version.id, list(version_ids)))
    ).all()
    return {
        row.id: bundles.bundle_from_json(json.loads(zlib.decompress(row.content))) for row in rows
    }


def refresh(session: Session, *, sample_size: int = BOILERPLATE_SAMPLE) -> dict:
    """Learn the boilerplate from the newest public, active sub-agents and sign, against it,
    every sub-agent whose signature is missing (published before signatures existed), stale
    or signed against another boilerplate. Anything signed puts a new boilerplate row in
    force, even with the same shingles (their signatures are then unchanged and only
    relabelled), so that every process rebuilds its index with what was signed."""
    sample_ids = list(
        session.execute(
            select(SubAgent.latest_version_id)
            .where(publicly_listed_clause(), SubAgent.latest_version_id.is_not(None))
            .order_by(SubAgent.id.desc())
            .limit(sample_size)
        ).scalars()
    )
    learned = Boilerplate.learn(_bundles_of(session, sample_ids).values())
    shared = _shared_index(session)
    with shared.lock:
        old_id, old = shared.current_boilerplate(session)
    changed = old_id == 0 or not np.array_equal(learned.hashes, old.hashes)
    if not changed and not _unsigned(session, old_id):
        return {"boilerplate_id": old_id, "changed": False, "sample": len(sample_ids), "signed": 0}
    row = NearCopyBoilerplate(hashes=_to_bytes(learned.hashes), sample_size=len(sample_ids))
    session.add(row)
    session.flush()
    if not changed:
        session.execute(
            update(NearCopySignature)
            .where(NearCopySignature.boilerplate_id == old_id)
            .values(boilerplate_id=row.id)
        )
    unsigned = _unsigned(session, row.id)
    for start in range(0, len(unsigned), RESIGN_BATCH):
        batch = unsigned[start : start + RESIGN_BATCH]
        loaded = _bundles_of(session, [version_id for _, version_id in batch])
        for subagent_id, version_id in batch:
            _write_signature(session, subagent_id, version_id, loaded[version_id], row.id, learned)
        session.flush()
    return {
        "boilerplate_id": row.id,
        "changed": changed,
        "sample": len(sample_ids),
        "signed": len(unsigned),
    }


def _unsigned(session: Session, boilerplate_id: int) -> list[tuple[int, int]]:
    """(sub-agent, latest version) of those whose latest version is not signed against
    ``boilerplate_id``."""
    signed = NearCopySignature
    return [
        (row[0], row[1])
        for row in session.execute(
            select(SubAgent.id, SubAgent.latest_version_id)
            .outerjoin(signed, signed.subagent_id == SubAgent.id)
            .where(
                SubAgent.latest_version_id.is_not(None),
                signed.subagent_id.is_(None)
                | (signed.boilerplate_id != boilerplate_id)
                | (signed.version_id != SubAgent.latest_version_id),
            )
            .order_by(SubAgent.id)
        )
    ]


# ---- offers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class OfferedOriginal:
    """An open offer as its publisher sees it: the original and its author."""

    offer: NearCopyOffer
    original: SubAgent
    author: User


def find_originals(
    session: Session, publisher: Principal, copy: SubAgent, bundle: bundles.Bundle
) -> list[NearCopyOffer]:
    """Offer the new root ``copy`` as a fork of the public sub-agents it nearly copies (at most
    ``MAX_OFFERS``, most similar first); none before a boilerplate is learned."""
    shared = _shared_index(session)
    with shared.lock:
        index = shared.caught_up(session, copy.id)
        boilerplate_id = shared.index_boilerplate_id
        estimated = [] if boilerplate_id == 0 else index.query(bundle)[:MAX_CANDIDATES]
    if boilerplate_id == 0:
        return []
    boilerplate = index.boilerplate
    fingerprint = exact_fingerprint(bundle)
    identical = set(
        session.execute(
            select(NearCopySignature.subagent_id)
            .join(SubAgent, SubAgent.id == NearCopySignature.subagent_id)
            .where(
                NearCopySignature.fingerprint == fingerprint,
                publicly_listed_clause(),
                SubAgent.author_id != copy.author_id,
            )
            .order_by(NearCopySignature.subagent_id)
            .limit(MAX_CANDIDATES)
        ).scalars()
    )
    candidate_ids = identical | {match.key for match in estimated}
    candidate_ids.discard(copy.id)
    # Read again whatever the index says: a sub-agent made private a moment ago is never
    # offered. The same read runs with no candidates, so its cost says nothing either.
    rows = session.execute(
        select(SubAgent, NearCopySignature.version_id)
        .join(NearCopySignature, NearCopySignature.subagent_id == SubAgent.id)
        .where(id_in(session, SubAgent.id, sorted(candidate_ids)))
    ).all()
    originals = [(row[0], row[1]) for row in rows if may_be_credited_as_original(publisher, row[0])]
    loaded = _bundles_of(session, [version_id for _, version_id in originals])
    mine = distinctive_shingles(bundle, boilerplate)
    found = []
    for original, version_id in originals:
        theirs = loaded[version_id]
        similarity, shared_count = jaccard(mine, distinctive_shingles(theirs, boilerplate))
        if original.id in identical:
            similarity = 1.0  # the same text, however little of it is the app's own
        if similarity >= FORK_OFFER:
            found.append((similarity, shared_count, original, version_id, theirs))
    found.sort(key=lambda f: (-f[0], f[2].id))
    offers = []
    for similarity, shared_count, original, version_id, theirs in found[:MAX_OFFERS]:
        evidence = matching_files(bundle, theirs, boilerplate)[:MATCHING_FILES_KEPT]
        offer, _ = insert_unless_exists(
            session,
            NearCopyOffer(
                subagent_id=copy.id,
                original_id=original.id,
                original_version_id=version_id,
                similarity=round(similarity, 4),
                shared_shingles=shared_count,
                matching_files=[
                    {
                        "path": m.path,
                        "original_path": m.original_path,
                        "shared": m.shared,
                        "share": round(m.share, 4),
                    }
                    for m in evidence
                ],
            ),
            lambda original_id=original.id: find_offer(session, copy.id, original_id),
        )
        offers.append(offer)
    return offers


def expired(offer: NearCopyOffer, now: datetime) -> bool:
    return now - as_utc(offer.created_at) > OFFER_WINDOW


def find_offer(session: Session, copy_id: int, original_id: int) -> NearCopyOffer | None:
    """The offer to make ``copy_id`` a fork of ``original_id``, whatever its status."""
    return session.execute(
        select(NearCopyOffer).where(
            NearCopyOffer.subagent_id == copy_id, NearCopyOffer.original_id == original_id
        )
    ).scalar_one_or_none()


def open_offers(session: Session, publisher: Principal, copy: SubAgent) -> list[OfferedOriginal]:
    """The copy's open offers still in their window whose original the publisher may still
    be credited with, most similar first."""
    rows = session.execute(
        select(NearCopyOffer, SubAgent, User)
        .join(SubAgent, SubAgent.id == NearCopyOffer.original_id)
        .join(User, User.id == SubAgent.author_id)
        .where(
            NearCopyOffer.subagent_id == copy.id,
            NearCopyOffer.status == "open",
            NearCopyOffer.created_at >= utcnow() - OFFER_WINDOW,
        )
        .order_by(NearCopyOffer.similarity.desc(), NearCopyOffer.original_id)
    ).all()
    return [
        OfferedOriginal(offer, original, author)
        for offer, original, author in rows
        if may_be_credited_as_original(publisher, original)
    ]


def settle(session: Session, copy: SubAgent, status: str, *, accepted_id: int | None = None):
    """Close the copy's open offers: the accepted one ``accepted``, the others ``status``
    (``closed`` after an accept, ``declined`` or ``ignored``); those at the moderation line
    that were declined or ignored are reported. Returns the offers it closed."""
    now = utcnow()
    offers = list(
        session.execute(
            select(NearCopyOffer)
            .where(NearCopyOffer.subagent_id == copy.id, NearCopyOffer.status == "open")
            .order_by(NearCopyOffer.id)
        ).scalars()
    )
    for offer in offers:
        offer.status = "accepted" if offer.original_id == accepted_id else status
        offer.decided_at = now
        session.add(offer)
        if offer.status in ("declined", "ignored"):
            _report(session, copy, offer)
    return offers


def _report(session: Session, copy: SubAgent, offer: NearCopyOffer) -> None:
    if offer.similarity < MODERATION or copy.visibility == "private":
        return
    detail = (
        f"A near-copy of sub-agent {offer.original_id} (similarity {offer.similarity:.2f}, "
        f"{offer.shared_shingles} distinctive shingles shared); its publisher "
        f"{'declined' if offer.status == 'declined' else 'did not answer'} the fork offer."
    )
    insert_unless_exists(
        session,
        Report(
            subagent_id=copy.id,
            reporter_id=None,
            reason=NEAR_COPY_REASON,
            detail=detail,
            near_copy_offer_id=offer.id,
        ),
        lambda: session.execute(
            select(Report).where(Report.near_copy_offer_id == offer.id)
        ).scalar_one_or_none(),
    )


def report_ignored(session: Session, now: datetime) -> dict:
    """Close the offers left open past their window as ``ignored`` (reporting those at the
    moderation line), copy by copy, each under its copy's lock like a decline."""
    copy_ids = sorted(
        set(
            session.execute(
                select(NearCopyOffer.subagent_id).where(
                    NearCopyOffer.status == "open", NearCopyOffer.created_at < now - OFFER_WINDOW
                )
            ).scalars()
        )
    )
    closed = 0
    for copy_id in copy_ids:
        closed += len(settle(session, lock_subagent(session, copy_id), "ignored"))
    return {"ignored": closed}
