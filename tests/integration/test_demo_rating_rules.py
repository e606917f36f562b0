"""The demo community rates by the rules it shows: every rating comes from someone who
installed or used the sub-agent, none from its author, each written by the demo's agent on the
person's behalf, and all of them count. Checked with the same rule the API asks."""

from __future__ import annotations

import random

from sqlalchemy import func, select
from sqlmodel import Session

from market.catalog.models import Install, SubAgent, Version
from market.demo.activity import SERVICE_HANDLE
from market.identity.models import User
from market.usage.models import COUNTED_RATING, Feedback, UsageEvent
from market.usage.ratings import may_rate


def test_every_demo_rating_follows_the_rating_rules(demo_app):
    with Session(demo_app.engine) as session:
        ratings = session.execute(select(Feedback.user_id, Feedback.version_id)).all()
        assert len(ratings) > 1000
        by_author = session.scalar(
            select(func.count())
            .select_from(Feedback)
            .join(SubAgent, SubAgent.id == Feedback.subagent_id)
            .where(SubAgent.author_id == Feedback.user_id)
        )
        assert by_author == 0
        installed = (
            select(Install.id)
            .where(Install.user_id == Feedback.user_id, Install.subagent_id == Feedback.subagent_id)
            .exists()
        )
        used = (
            select(UsageEvent.event_id)
            .where(
                UsageEvent.user_id == Feedback.user_id,
                UsageEvent.subagent_id == Feedback.subagent_id,
            )
            .exists()
        )
        strangers = session.scalar(
            select(func.count()).select_from(Feedback).where(~installed, ~used)
        )
        assert strangers == 0
        # The full rule (installed or used), asked of a sample the way the API asks it.
        for user_id, version_id in random.Random(7).sample(ratings, 300):
            assert may_rate(session, user_id, session.get(Version, version_id)) is None
        agent = session.scalar(select(User.id).where(User.handle == SERVICE_HANDLE))
        writers = set(session.scalars(select(Feedback.client_id).distinct()))
        assert writers == {agent}
        counted = session.scalar(select(func.count()).select_from(Feedback).where(COUNTED_RATING))
        assert counted == len(ratings)
