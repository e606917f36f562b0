"""The numbers pages show next to sub-agents: ratings, recent active users, ranking scores.

Each reader takes a list of ids and answers with one grouped query, so a page of twenty cards
or a tree of three hundred nodes costs one round trip per figure, whatever its size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Select, bindparam, case, func, select
from sqlmodel import Session

from market.identity.models import User
from market.platform.db import PerDatabase, in_bound_ids
from market.platform.time import utcnow
from market.ranking.models import SubAgentScore
from market.usage.models import COUNTED_RATING, DailyStats, Feedback

ACTIVE_WINDOW_DAYS = 30
# Stars averages are shrunk toward 3.5 by this many pseudo-ratings before colouring a tree
# node, so one enthusiastic rating does not paint a fork as loved.
PRIOR_RATINGS = 5
PRIOR_STARS = 3.5


@dataclass(frozen=True)
class Rating:
    stars_average: float | None
    stars_count: int
    thumbs_up: int
    thumbs_down: int

    @property
    def count(self) -> int:
        return self.stars_count + self.thumbs_up + self.thumbs_down

    @property
    def thumbs_share(self) -> float | None:
        thumbs = self.thumbs_up + self.thumbs_down
        return self.thumbs_up / thumbs if thumbs else None


@dataclass(frozen=True)
class _Statements:
    ratings: Select
    rating_histogram: Select
    recent_comments: Select
    own_rating: Select
    daily_users: Select
    scores: Select


def _statements(dialect: str) -> _Statements:
    """This module's reads, built once per database (``platform.db.PerDatabase``)."""
    is_stars = Feedback.scale == "stars"
    this_subagent = Feedback.subagent_id == bindparam("subagent_id")
    return _Statements(
        ratings=select(
            Feedback.subagent_id,
            func.sum(case((is_stars, 1), else_=0)),
            func.sum(case((is_stars, Feedback.rating), else_=0)),
            func.sum(case((is_stars, 0), else_=Feedback.rating)),
            func.sum(case((is_stars, 0), else_=1)),
        )
        .where(in_bound_ids(dialect, Feedback.subagent_id, "ids"), COUNTED_RATING)
        .group_by(Feedback.subagent_id),
        rating_histogram=select(Feedback.scale, Feedback.rating, func.count())
        .where(this_subagent, COUNTED_RATING)
        .group_by(Feedback.scale, Feedback.rating),
        recent_comments=select(Feedback.scale, Feedback.rating, Feedback.comment, Feedback.tags)
        .add_columns(Feedback.updated_at, User.display_name)
        .join(User, User.id == Feedback.user_id)
        .where(
            this_subagent,
            Feedback.comment.is_not(None),
            Feedback.comment != "",
            COUNTED_RATING,
        )
        .order_by(Feedback.updated_at.desc(), Feedback.id.desc())
        .limit(bindparam("limit")),
        own_rating=select(
            Feedback.version_id, Feedback.scale, Feedback.rating, Feedback.comment, Feedback.tags
        )
        .where(Feedback.user_id == bindparam("user_id"), this_subagent)
        .order_by(Feedback.updated_at.desc(), Feedback.id.desc())
        .limit(1),
        daily_users=select(DailyStats.subagent_id, func.sum(DailyStats.active_users))
        .where(
            in_bound_ids(dialect, DailyStats.subagent_id, "ids"),
            DailyStats.day >= bindparam("since"),
        )
        .group_by(DailyStats.subagent_id),
        scores=select(
            SubAgentScore.subagent_id,
            SubAgentScore.quality,
            SubAgentScore.best_descendant_id,
            SubAgentScore.p_descendant_better,
        ).where(in_bound_ids(dialect, SubAgentScore.subagent_id, "ids")),
    )


_of = PerDatabase(_statements)


def ratings(session: Session, ids: list[int]) -> dict[int, Rating]:
    """Current ratings per sub-agent (one per user and version), all time."""
    if not ids:
        return {}
    rows = session.execute(_of(session).ratings, {"ids": ids})
    found = {}
    for subagent_id, stars, stars_sum, up, thumbs in rows:
        stars, thumbs, up = int(stars or 0), int(thumbs or 0), int(up or 0)
        average = round(int(stars_sum) / stars, 1) if stars else None
        found[subagent_id] = Rating(average, stars, up, thumbs - up)
    return found


def rating_with_histogram(session: Session, subagent_id: int) -> tuple[Rating, list[int]]:
    """One sub-agent's current rating and how many star ratings gave 1, 2, 3, 4 and 5 stars,
    from one grouped read (the same figures ``ratings`` gives)."""
    counts = [0] * 5
    stars, stars_sum, up, thumbs = 0, 0, 0, 0
    rows = session.execute(_of(session).rating_histogram, {"subagent_id": subagent_id})
    for scale, rating, count in rows:
        if scale == "stars":
            stars += count
            stars_sum += rating * count
            if 1 <= rating <= 5:
                counts[rating - 1] = count
        else:
            thumbs += count
            up += rating * count
    average = round(stars_sum / stars, 1) if stars else None
    return Rating(average, stars, up, thumbs - up), counts


@dataclass(frozen=True)
class Comment:
    author: str
    stars: int | None
    thumbs_up: bool | None
    text: str
    tags: list[str]
    when: str


def recent_comments(session: Session, subagent_id: int, limit: int = 20) -> list[Comment]:
    """The newest written comments. Raters appear by display name only: never handle, email
    or anything else about them."""
    rows = session.execute(
        _of(session).recent_comments, {"subagent_id": subagent_id, "limit": limit}
    )
    return [
        Comment(
            author=name,
            stars=rating if scale == "stars" else None,
            thumbs_up=bool(rating) if scale == "thumbs" else None,
            text=comment,
            tags=list(tags or []),
            when=updated_at.date().isoformat(),
        )
        for scale, rating, comment, tags, updated_at, name in rows
    ]


@dataclass(frozen=True)
class OwnRating:
    """A person's latest rating of a sub-agent (of whichever version they rated last), for
    the rating form to show what they said before."""

    version_id: int
    stars: int | None
    comment: str
    tags: list[str]


def own_rating(session: Session, user_id: int, subagent_id: int) -> OwnRating | None:
    row = session.execute(
        _of(session).own_rating, {"user_id": user_id, "subagent_id": subagent_id}
    ).first()
    if row is None:
        return None
    version_id, scale, rating, comment, tags = row
    return OwnRating(
        version_id=version_id,
        stars=rating if scale == "stars" else None,
        comment=comment or "",
        tags=list(tags or []),
    )


def average_daily_users(session: Session, ids: list[int]) -> dict[int, float]:
    """Average distinct users per day over the last 30 days (from the daily rollup)."""
    if not ids:
        return {}
    since = utcnow().date() - timedelta(days=ACTIVE_WINDOW_DAYS - 1)
    rows = session.execute(_of(session).daily_users, {"ids": ids, "since": since})
    return {subagent_id: int(total) / ACTIVE_WINDOW_DAYS for subagent_id, total in rows}


@dataclass(frozen=True)
class Score:
    quality: float
    best_descendant_id: int | None
    p_descendant_better: float


def scores(session: Session, ids: list[int]) -> dict[int, Score]:
    """The last ranking run's figures (empty until a ranking has run)."""
    if not ids:
        return {}
    rows = session.execute(_of(session).scores, {"ids": ids})
    return {row[0]: Score(row[1], row[2], row[3]) for row in rows}


def quality_level(score: Score | None, rating: Rating | None) -> float | None:
    """Quality on 0..1 for colouring: the ranking's debiased E[θ] when it has run (through a
    logistic, so 0 is the middle), else the stars average shrunk toward 3.5."""
    if score is not None:
        return 1 / (1 + math.exp(-1.5 * score.quality))
    if rating is not None and rating.stars_count:
        shrunk = (rating.stars_average * rating.stars_count + PRIOR_STARS * PRIOR_RATINGS) / (
            rating.stars_count + PRIOR_RATINGS
        )
        return (shrunk - 1) / 4
    if rating is not None and rating.thumbs_share is not None:
        thumbs = rating.thumbs_up + rating.thumbs_down
        return (rating.thumbs_up + 0.5 * PRIOR_RATINGS) / (thumbs + PRIOR_RATINGS)
    return None


def quality_word(level: float | None) -> str:
    if level is None:
        return "not rated yet"
    if level >= 0.75:
        return "loved"
    if level >= 0.6:
        return "liked"
    if level >= 0.4:
        return "mixed"
    return "disliked"
