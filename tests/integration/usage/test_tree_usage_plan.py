"""The fork tree's 30-day active users come from the key's index alone (migration 0017).

The tree sizes each node it draws by its average daily users over 30 days, a sum of 30
``daily_stats`` rows per node. Each of those rows was written by a different day's rollup, so
reading them from the table costs a page each: at a million sub-agents, 4.7 ms of the tree
page's 24. The primary key's index carries ``active_users``, so PostgreSQL's plan for the
statement ``average_daily_users`` sends must be an index-only scan. Sequential and bitmap scans
are turned off for the check: on a test's few rows the planner would rightly read the table.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from market.catalog.models import SubAgent
from market.platform.db import session_scope
from market.platform.time import utcnow
from market.usage import queries as figures
from market.usage.models import DailyStats
from tests.factories import make_user
from tests.query_plans import plan_nodes, statements_sent


def test_the_trees_active_users_are_summed_from_the_key_index_alone(engine, backend):
    if backend != "postgresql":
        pytest.skip("the plan is PostgreSQL's")
    author = make_user(engine, "maker")
    today = utcnow().date()
    with session_scope(engine) as session:
        nodes = [
            SubAgent(title=f"Tool {i}", category="diet", author_id=author.id, dedupe_key=f"k{i}")
            for i in range(6)
        ]
        session.add_all(nodes)
        session.flush()
        ids = [node.id for node in nodes]
        for number, node_id in enumerate(ids):
            for back in range(40):  # ten days fall outside the 30-day window
                day = today - timedelta(days=back)
                session.add(
                    DailyStats(subagent_id=node_id, day=day, active_users=number + 1, opens=9)
                )
    with (
        session_scope(engine) as session,
        statements_sent(engine, lambda statement: "FROM daily_stats" in statement) as sent,
    ):
        active = figures.average_daily_users(session, ids)
        # 30 days of (number + 1) users a day, averaged over the 30 days.
        assert active == {node_id: number + 1 for number, node_id in enumerate(ids)}
        (statement, parameters), *_ = sent
        nodes = plan_nodes(
            session,
            statement,
            parameters,
            table="daily_stats",
            turned_off=("seqscan", "bitmapscan"),
        )
    scans = [n for n in nodes if n.get("Relation Name") == "daily_stats"]
    assert [scan["Node Type"] for scan in scans] == ["Index Only Scan"], scans
    assert scans[0]["Index Name"] == "daily_stats_pkey"
