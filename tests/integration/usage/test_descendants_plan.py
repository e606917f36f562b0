"""The dashboard's walk down a creator's descendants probes the parent index at every step.

``market.usage.stats.descendants`` is one recursive query. Written as a plain join of the work
table to ``subagent``, PostgreSQL guessed the work table at ten times the first step's rows and,
below about 40,000 sub-agents, hashed the whole table at each step: 18 ms of a 42 ms dashboard
for a creator with 85 descendants among 25,000 sub-agents, where probing took 2.5 ms. So every
read of ``subagent`` in its plan must be an index probe on ``parent_id``, never the whole
table. Sequential and bitmap scans are turned off for the check, as on a test's few rows the
planner would rightly prefer them; a hash join then reads the whole table through an index,
which the check refuses just the same.
"""

from __future__ import annotations

import pytest

from market.catalog.models import SubAgent
from market.platform.db import session_scope
from market.usage import stats
from tests.factories import make_user
from tests.query_plans import plan_nodes, statements_sent

ROOTS = 40
DEPTH = 8


def test_each_step_down_the_descendants_probes_the_parent_index(engine, backend):
    if backend != "postgresql":
        pytest.skip("the plan is PostgreSQL's")
    creator = make_user(engine, "maker")
    others = make_user(engine, "others")
    with session_scope(engine) as session:
        # Many lineages of others, and the creator's few tools forked a little: the shape
        # where the planner, left to its guesses, hashed every lineage to walk one.
        own = []
        for root_number in range(ROOTS):
            parent = None
            for level in range(DEPTH):
                node = SubAgent(
                    title=f"Tool {root_number}.{level}",
                    category="diet",
                    author_id=(creator if root_number < 2 and level == 0 else others).id,
                    parent_id=parent.id if parent else None,
                    depth=level,
                    ancestry="" if parent is None else f"{parent.ancestry}/{parent.id}".lstrip("/"),
                    dedupe_key=f"k{root_number}.{level}",
                )
                session.add(node)
                session.flush()
                if node.author_id == creator.id:
                    own.append(node.id)
                parent = node
    with (
        session_scope(engine) as session,
        statements_sent(engine, lambda statement: "RECURSIVE" in statement) as sent,
    ):
        below = stats.descendants(session, own, visible_to=creator.id)
        assert len(below) == 2 * (DEPTH - 1)
        (statement, parameters), *_ = sent
        nodes = plan_nodes(
            session, statement, parameters, table="subagent", turned_off=("seqscan", "bitmapscan")
        )
    reads = [node for node in nodes if node.get("Relation Name") == "subagent"]
    assert reads, nodes
    for read in reads:
        assert "parent_id" in read.get("Index Cond", ""), read
