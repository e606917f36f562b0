"""``pairs_in``: rows whose two columns together are one of the given pairs, on both databases
(two array parameters unnested side by side on PostgreSQL): a pair's halves matched from two
different pairs do not count."""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import delete, select

from market.catalog.models import SubAgent
from market.platform.db import UnitOfWork, pairs_in
from market.usage.models import RetentionCohort
from tests.factories import make_user

DAY = date(2026, 11, 2)


def test_only_the_given_pairs_match_not_their_halves_crossed(engine):
    author = make_user(engine, "cohorts")
    with UnitOfWork(engine) as unit:
        subagents = [
            SubAgent(title=f"Tool {i}", category="diet", author_id=author.id, dedupe_key=f"p{i}")
            for i in range(3)
        ]
        unit.session.add_all(subagents)
        unit.session.flush()
        a, b, c = (s.id for s in subagents)
        for subagent_id in (a, b, c):
            for offset in range(3):
                unit.session.add(
                    RetentionCohort(
                        subagent_id=subagent_id,
                        install_day=DAY + timedelta(days=offset),
                        cohort_size=1,
                    )
                )
        unit.commit()
    # (a, day 0) and (b, day 1): not (a, day 1) nor (b, day 0), which take one half of each.
    given = [(a, DAY), (b, DAY + timedelta(days=1)), (10**9, DAY)]
    cohort = RetentionCohort
    with UnitOfWork(engine) as unit:
        session = unit.session
        where = pairs_in(session, cohort.subagent_id, cohort.install_day, given)
        found = session.execute(select(cohort.subagent_id, cohort.install_day).where(where))
        assert sorted(found) == sorted(given[:2])
        session.execute(delete(cohort).where(where))
        left = set(session.execute(select(cohort.subagent_id, cohort.install_day)).all())
        unit.commit()
    everything = {(s, DAY + timedelta(days=k)) for s in (a, b, c) for k in range(3)}
    assert left == everything - set(given[:2])
    with UnitOfWork(engine) as unit:  # no pairs: nothing matches
        session = unit.session
        where = pairs_in(session, cohort.subagent_id, cohort.install_day, [])
        assert session.execute(select(cohort.subagent_id).where(where)).all() == []
