"""The demo's simulated months of usage tell a believable story through the real API.

The demo (community plus ~90 days of activity) is loaded once per backend for this module,
by a module-scoped fixture with its own app, so the per-test wipe of the ``app`` fixture
cannot remove it halfway; it wipes before loading and after the last test.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlmodel import Session

from market.catalog.maintenance import recount_counters
from market.catalog.models import CATEGORIES, Install, SubAgent, Version
from market.demo.activity import plan_activity, read_community
from market.demo.activity_plan import FEEDBACK_TAGS
from market.demo.loader import demo_tokens
from market.identity.models import User
from market.platform.time import utcnow
from market.recommend.models import Exposure
from market.usage.models import Feedback, InstallLog, RollupDirty, UsageEvent
from tests.conftest import DEMO_SEED

SEED = DEMO_SEED


@pytest.fixture(scope="module")
def demo(demo_app):
    return demo_app


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def test_counts_match_the_rows(demo):
    stats = demo.template.stats
    print(f"\ndemo loaded in {demo.template.seconds:.1f}s: {stats}")
    assert 100_000 <= stats["usage events"] <= 250_000
    assert stats["ratings"] >= 500 and stats["rating changes"] > 0
    assert stats["uninstalls"] > 0 and stats["days of usage"] == 90
    with Session(demo.engine) as session:
        assert session.scalar(select(func.count()).select_from(UsageEvent)) == stats["usage events"]
        assert session.scalar(select(func.count(Feedback.id))) == stats["ratings"]
        uninstalls = session.scalar(
            select(func.count(InstallLog.id)).where(InstallLog.action == "uninstall")
        )
        inactive = session.scalar(select(func.count(Install.id)).where(Install.active.is_(False)))
        assert uninstalls == inactive == stats["uninstalls"]
        # Rollups are complete and the denormalized counters agree with the rows.
        assert session.scalar(select(func.count(RollupDirty.id))) == 0
        assert recount_counters(session)["drifted"] == 0
        session.rollback()
        # Feedback uses the fixed vocabulary; some comments are in the raters' languages.
        tags = {t for (row,) in session.execute(select(Feedback.tags)) for t in row}
        assert tags <= set(FEEDBACK_TAGS) and {"crashes", "love it"} <= tags
        locales = {
            locale[:2]
            for (locale,) in session.execute(
                select(User.locale)
                .join(Feedback, Feedback.user_id == User.id)
                .where(Feedback.comment.is_not(None))
            )
        }
        assert {"zh", "ja", "es"} <= locales


def test_top_creator_stats_tell_a_story(demo):
    client = demo.app.test_client()
    (_, handle, token), *_ = demo_tokens(demo.engine)
    today = utcnow().date()
    window = f"from={(today - timedelta(days=89)).isoformat()}&to={today.isoformat()}"
    response = client.get(
        f"/api/v1/creators/{handle}/stats?{window}", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.get_json()
    stats = response.get_json()
    totals = stats["totals"]
    print(f"\n{handle}: totals {totals}\nrating {stats['rating']}\nlineage {stats['lineage']}")
    assert totals["installs"] > 0 and totals["opens"] > totals["sessions"] * 0.9
    assert totals["active_users"] >= 200  # several hundred people on the popular roots
    assert 0 < totals["error_rate"] < 0.2 and totals["uninstalls"] > 0
    # Someone used something of this creator's nearly every day.
    assert sum(point["active_users"] > 0 for point in stats["series"]) >= 85

    histogram = totals["ratings"]["histogram"]
    stars = [histogram[f"stars_{n}"] for n in range(1, 6)]
    assert totals["ratings"]["count"] >= 50 and sum(map(bool, stars)) >= 4, histogram
    assert stars[4] > stars[0]  # good apps: more fives than ones, but harsh raters exist
    assert histogram["thumbs_up"] + histogram["thumbs_down"] > 0

    matured = [c for c in stats["retention"] if c["day30_rate"] is not None]
    assert len(matured) >= 30
    size = sum(c["cohort_size"] for c in matured)
    day1, day7, day30 = (sum(c[f"day{n}"] for c in matured) / size for n in (1, 7, 30))
    print(f"retention over {size} installs: day1 {day1:.2f} day7 {day7:.2f} day30 {day30:.2f}")
    assert day1 >= day7 >= day30 > 0

    lineage = stats["lineage"]
    assert lineage["forks_by_others"] > 0 and lineage["lineage_reach"] > 0
    busiest = max(stats["subagents"], key=lambda row: sum(row["daily_active_users"]))
    assert busiest["opens"] > 0 and len(busiest["daily_active_users"]) == 90


def test_events_never_precede_installs_or_follow_uninstalls(demo):
    now = utcnow()
    with Session(demo.engine) as session:
        installs = {
            (user, subagent): (_utc(created), active, _utc(updated))
            for user, subagent, created, active, updated in session.execute(
                select(
                    Install.user_id,
                    Install.subagent_id,
                    Install.created_at,
                    Install.active,
                    Install.updated_at,
                )
            )
        }
        spans = session.execute(
            select(
                UsageEvent.user_id,
                UsageEvent.subagent_id,
                func.min(UsageEvent.occurred_at),
                func.max(UsageEvent.occurred_at),
            ).group_by(UsageEvent.user_id, UsageEvent.subagent_id)
        ).all()
        late = session.scalar(select(func.max(UsageEvent.occurred_at)))
        first_use = {
            (user, version): _utc(first)
            for user, version, first in session.execute(
                select(
                    UsageEvent.user_id, UsageEvent.version_id, func.min(UsageEvent.occurred_at)
                ).group_by(UsageEvent.user_id, UsageEvent.version_id)
            )
        }
        ratings = session.execute(
            select(Feedback.user_id, Feedback.version_id, Feedback.created_at)
        ).all()
        subagent_of = dict(session.execute(select(Version.id, Version.subagent_id)).all())
        # The agent sent each day's events at the end of that day, within the week allowed.
        for sent, happened in session.execute(
            select(UsageEvent.received_at, UsageEvent.occurred_at).limit(5000)
        ):
            assert timedelta(0) <= _utc(sent) - _utc(happened) < timedelta(days=1)
    assert spans and _utc(late) <= now
    for user, subagent, first, last in spans:
        created, active, updated = installs[(user, subagent)]
        assert _utc(first) >= created, (user, subagent)
        assert _utc(last) <= now
        if not active:
            assert _utc(last) <= updated  # nothing after the uninstall
    # Nobody rates a version before using it; ratings from before the replayed window (whose
    # sessions' events are not replayed) come after the install, and there are such ratings.
    first_day = _utc(demo.template.now).date() - timedelta(days=89)
    window_start = datetime(first_day.year, first_day.month, first_day.day, tzinfo=UTC)
    earlier = 0
    for user, version, created_at in ratings:
        if _utc(created_at) < window_start:
            subagent = subagent_of[version]
            assert installs[(user, subagent)][0] <= _utc(created_at), (user, version)
            earlier += 1
        else:
            assert first_use[(user, version)] <= _utc(created_at), (user, version)
    assert 0 < earlier < len(ratings)


def test_private_subagents_are_used_by_their_authors_only(demo):
    with Session(demo.engine) as session:
        assert session.scalar(
            select(func.count(SubAgent.id)).where(SubAgent.visibility == "private")
        )
        by_author = session.scalar(
            select(func.count())
            .select_from(UsageEvent)
            .join(SubAgent, SubAgent.id == UsageEvent.subagent_id)
            .where(SubAgent.visibility == "private", UsageEvent.user_id == SubAgent.author_id)
        )
        by_others = session.scalar(
            select(func.count())
            .select_from(UsageEvent)
            .join(SubAgent, SubAgent.id == UsageEvent.subagent_id)
            .where(SubAgent.visibility == "private", UsageEvent.user_id != SubAgent.author_id)
        )
        rated_by_others = session.scalar(
            select(func.count(Feedback.id))
            .join(SubAgent, SubAgent.id == Feedback.subagent_id)
            .where(SubAgent.visibility == "private", Feedback.user_id != SubAgent.author_id)
        )
    assert by_author > 0 and by_others == 0 and rated_by_others == 0


def test_the_plan_is_what_was_stored(demo):
    with Session(demo.engine) as session:
        community = read_community(session)
        # The simulation's anchor. (The newest receipt time is not: just after midnight UTC
        # today has no events yet, and yesterday's batch would shift the plan by a day.)
        anchor = demo.template.now
        stored = set(session.scalars(select(UsageEvent.event_id)))
        feedback_rows = session.scalar(select(func.count(Feedback.id)))

    # Planned once: that a plan is the same from run to run (and machine to machine) is
    # tests/unit/test_demo_community_hash.py's pinned digest; here it must be what was stored.
    first = plan_activity(community, SEED, now=anchor)
    assert {e[1] for day in first.events.values() for e in day} == stored
    assert first.event_count() == demo.template.stats["usage events"]
    pairs = defaultdict(int)
    for rating in [*first.early_ratings, *(r for day in first.ratings.values() for r in day)]:
        pairs[(rating.user_id, rating.version_id)] += 1
    assert len(pairs) == feedback_rows == demo.template.stats["ratings"]
    assert first.uninstall_count() == demo.template.stats["uninstalls"]

    other = plan_activity(community, SEED + 1, now=anchor, days=3)
    assert {e[1] for day in other.events.values() for e in day}.isdisjoint(stored)


def test_recommendations_over_the_demo_log_exposures_that_sum_to_one(demo):
    """On the demo community, every decision's exposures are logged with
    their propensities, and each slot's distribution sums to one."""
    client = demo.app.test_client()
    *_, (_, _, token) = demo_tokens(demo.engine)
    with Session(demo.engine) as session:
        people = select(User.id).where(User.kind == "person").order_by(User.id).limit(40)
        people = list(session.scalars(people))
    contexts = [None, "I keep forgetting to drink water", "睡眠を記録したい", "groceries budget"]
    decisions = {}
    for n, user_id in enumerate(people):
        body = {"user_id": user_id, "k": 1 + n % 8, "seed": n}
        if n % 3 == 0:
            body["category"] = CATEGORIES[n % len(CATEGORIES)]
        if contexts[n % len(contexts)] is not None:
            body["context"] = contexts[n % len(contexts)]
        response = client.post(
            "/api/v1/recommendations", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 200, response.get_json()
        decisions[response.get_json()["decision_id"]] = (body, response.get_json()["items"])
    assert sum(len(items) for _, items in decisions.values()) > 100
    with Session(demo.engine) as session:
        rows = session.execute(
            select(Exposure, SubAgent.visibility, SubAgent.status, SubAgent.category).join(
                SubAgent, SubAgent.id == Exposure.subagent_id
            )
        ).all()
        installed = set(
            session.execute(select(Install.user_id, Install.subagent_id).where(Install.active))
        )
    by_decision = defaultdict(list)
    for exposure, visibility, status, category in rows:
        by_decision[str(exposure.decision_id)].append(exposure)
        assert (visibility, status) == ("public", "active")
        distribution = {int(key): p for key, p in exposure.slot_distribution.items()}
        assert sum(distribution.values()) == pytest.approx(1.0, abs=1e-9)
        assert distribution[exposure.subagent_id] == pytest.approx(exposure.propensity)
        assert exposure.propensity > 0
        body, _ = decisions[str(exposure.decision_id)]
        if "category" in body:
            assert category == body["category"]
        if not exposure.context["owned_included"]:
            assert (exposure.user_id, exposure.subagent_id) not in installed
    assert {d: len(items) for d, (_, items) in decisions.items() if items} == {
        d: len(rows) for d, rows in by_decision.items()
    }
    for decision_id, exposures in by_decision.items():
        body, items = decisions[decision_id]
        assert sorted(e.slot for e in exposures) == list(range(len(items)))
        assert {e.user_id for e in exposures} == {body["user_id"]}
