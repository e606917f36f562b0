"""Ratings: a person's stars or thumbs on a version, with an optional comment and tags.
Who may rate (:func:`may_rate`), for whom, and which exposure a rating may cite are decided
here (:func:`rate_version`). Commit once, at the caller's boundary.

The rules, as app stores count ratings: only people who installed the sub-agent (any
version, still installed or not) or used it (any usage event) rate it, and never its author.
A service rates on a person's behalf only with the ``feedback:on-behalf`` scope, and the
rating keeps which service wrote it (``client_id``). Ratings stored before these rules that
break them are flagged ``excluded_reason`` (migration 0009) and every reader leaves them out
through ``market.usage.models.COUNTED_RATING``."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import exists, select
from sqlmodel import Session

from market.catalog.models import Install, SubAgent, Version
from market.identity.access import can_view
from market.identity.models import User
from market.identity.tokens import Principal
from market.platform.db import insert_unless_exists
from market.platform.errors import Forbidden, NotFound, Unprocessable
from market.platform.time import utcnow
from market.platform.translation import N_
from market.recommend.services import is_exposure_of
from market.usage.models import Feedback, UsageEvent
from market.usage.rollups import mark_dirty

ON_BEHALF_SCOPE = "feedback:on-behalf"


def may_rate(session: Session, user_id: int, version: Version) -> str | None:
    """Whether the person ``user_id`` may rate ``version``: None if so, else why not, in
    words to show them (marked: a page shows them in the reader's language, the API in
    English). The one rule every path asks (the API, the pages)."""
    subagent = session.get(SubAgent, version.subagent_id)
    if subagent is None:
        return f"No version {version.id}."
    if subagent.author_id == user_id:
        return N_("Authors do not rate their own sub-agents.")
    installed = exists().where(Install.user_id == user_id, Install.subagent_id == subagent.id)
    used = exists().where(UsageEvent.user_id == user_id, UsageEvent.subagent_id == subagent.id)
    if (
        not session.execute(select(installed)).scalar()
        and not session.execute(select(used)).scalar()
    ):
        return N_("Only people who installed or used a sub-agent rate it.")
    return None


def rate_version(
    session: Session,
    who: Principal,
    *,
    version_id: int,
    user_id: int | None,
    stars: int | None,
    thumbs: str | None,
    comment: str | None,
    tags: list[str],
    exposure_id: str | None,
) -> tuple[Feedback, bool]:
    """``who`` rates a version: with stars (1-5) or thumbs ("up"/"down"), exactly one given.
    A person rates for themselves (``user_id`` absent or their own); a service with
    ``feedback:on-behalf`` names the person who rated in ``user_id``. The rater must be able
    to see the sub-agent and be allowed to rate it (:func:`may_rate`), and an exposure cited
    must be one that showed this sub-agent to the rater. Returns
    (row, created), as :func:`record_feedback`."""
    who.require()
    if who.kind == "service":
        who.require(ON_BEHALF_SCOPE)
        if user_id is None:
            raise Unprocessable(
                "A service rates on a person's behalf: name them in `user_id`.",
                errors=[{"location": "json.user_id", "message": "required for a service"}],
            )
        user = session.get(User, user_id)
        if user is None or user.kind != "person":
            raise NotFound(f"No person {user_id}.")
        rater_id = user.id
    else:
        who.require("feedback")
        if user_id not in (None, who.user_id):
            raise Forbidden("People rate for themselves only.")
        rater_id = who.user_id
    version = session.get(Version, version_id)
    subagent = session.get(SubAgent, version.subagent_id) if version else None
    if subagent is None or not can_view(Principal(user_id=rater_id), subagent):
        raise NotFound(f"No version {version_id}.")
    refusal = may_rate(session, rater_id, version)
    if refusal is not None:
        raise Forbidden(refusal)
    exposure = uuid.UUID(exposure_id) if exposure_id else None
    # One indexed read per rating (events, a thousand per request, store theirs unchecked):
    # a rating is the reward an off-policy estimate reweights, so it must cite the exposure
    # that really showed this sub-agent to this user, or none.
    if exposure is not None and not is_exposure_of(session, exposure, rater_id, subagent.id):
        raise NotFound(f"No exposure {exposure} of sub-agent {subagent.id} to this user.")
    return record_feedback(
        session,
        user_id=rater_id,
        subagent=subagent,
        version=version,
        scale="stars" if stars is not None else "thumbs",
        rating=stars if stars is not None else int(thumbs == "up"),
        comment=comment.strip() if comment else None,
        tags=sorted({t.strip().lower() for t in tags}),
        exposure_id=exposure,
        client_id=who.user_id if who.kind == "service" else None,
    )


def record_feedback(
    session: Session,
    *,
    user_id: int,
    subagent: SubAgent,
    version: Version,
    scale: str,
    rating: int,
    comment: str | None,
    tags: list[str],
    exposure_id: uuid.UUID | None,
    client_id: int | None,
    now: datetime | None = None,
) -> tuple[Feedback, bool]:
    """One rating per user and version; rating again replaces it. Returns (row, created)."""
    now = now or utcnow()
    existing = _rating_of(session, user_id, version.id)
    if existing is None:
        row, created = insert_unless_exists(
            session,
            Feedback(
                user_id=user_id,
                subagent_id=subagent.id,
                version_id=version.id,
                client_id=client_id,
                scale=scale,
                rating=rating,
                comment=comment,
                tags=tags,
                exposure_id=exposure_id,
                created_at=now,
                updated_at=now,
                updated_day=now.date(),
            ),
            lambda: _rating_of(session, user_id, version.id),
        )
        if created:
            mark_dirty(session, [(subagent.id, now.date())])
            return row, True
        existing = row  # a concurrent first rating won: this one replaces it, as a retry would
    mark_dirty(session, [(subagent.id, existing.updated_day), (subagent.id, now.date())])
    existing.scale, existing.rating = scale, rating
    existing.comment, existing.tags = comment, tags
    existing.exposure_id = exposure_id or existing.exposure_id
    existing.client_id = client_id
    existing.updated_at = now
    existing.updated_day = now.date()
    session.add(existing)
    return existing, False


def _rating_of(session: Session, user_id: int, version_id: int) -> Feedback | None:
    return session.execute(
        select(Feedback)
        .where(Feedback.user_id == user_id, Feedback.version_id == version_id)
        .execution_options(populate_existing=True)
    ).scalar_one_or_none()
