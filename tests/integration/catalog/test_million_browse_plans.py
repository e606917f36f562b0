"""A category's browse page is read in order from an index (migration 0012).

At a million sub-agents, browsing one category newest or most installed first walked the whole
listing index and dropped nine rows of other categories for each it kept, one heap fetch each.
PostgreSQL's plan for the statement ``browse`` sends must now find the category in the index
condition and need no sort. Sequential scans are turned off for the check: on a test's few rows
the planner would rightly prefer reading the table.
"""

from __future__ import annotations

import pytest

from market.catalog import queries as browse
from market.catalog.models import SubAgent
from market.identity.tokens import ANONYMOUS
from market.platform.db import session_scope
from tests.factories import make_user
from tests.query_plans import plan_nodes, statements_sent


def _no_matcher(_text, _category, _limit):
    return []


@pytest.mark.parametrize("sort", ["new", "installs"])
def test_a_category_page_is_read_in_order_from_a_category_index(engine, backend, sort):
    if backend != "postgresql":
        pytest.skip("the plan is PostgreSQL's")
    author = make_user(engine, "maker")
    with session_scope(engine) as session:
        for i in range(40):
            session.add(
                SubAgent(
                    title=f"Tool {i}",
                    category=("diet", "sleep", "travel")[i % 3],
                    author_id=author.id,
                    install_count=i % 7,
                    dedupe_key=f"k{i}",
                )
            )
    with (
        session_scope(engine) as session,
        statements_sent(engine, lambda s: "FROM subagent" in s and "ORDER BY" in s) as sent,
    ):
        page = browse.browse(
            session,
            ANONYMOUS,
            q=None,
            category="sleep",
            tag=None,
            sort=sort,
            limit=5,
            cursor=None,
            matcher=_no_matcher,
        )
        assert [card.category for card in page.items] == ["sleep"] * 5
        (statement, parameters), *_ = sent
        # A 40-row table (and whatever statistics the suite left) makes any plan cheap: take
        # away the seq scan and the sort, so the planner keeps them only if no index can read
        # the page in order (which is what this test is about).
        nodes = plan_nodes(
            session, statement, parameters, table="subagent", turned_off=("seqscan", "sort")
        )
    scans = [n for n in nodes if n.get("Relation Name") == "subagent"]
    assert scans and all("category" in scan.get("Index Cond", "") for scan in scans), scans
    assert not [n for n in nodes if n["Node Type"] in ("Sort", "Incremental Sort")], nodes
