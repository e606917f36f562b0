"""PostgreSQL's plan for a statement the code sent, for tests that check an index serves it."""

from __future__ import annotations

import json
from collections.abc import Iterator


def plan_nodes(session, statement: str, parameters) -> list[dict]:
    """Every node of the plan of ``statement`` (as sent, with its ``parameters``), in the
    session's transaction (so its ``SET LOCAL`` planner settings apply)."""
    raw = (
        session.connection()
        .exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement, parameters)
        .scalar_one()
    )
    plan = raw if isinstance(raw, list) else json.loads(raw)
    return list(_walk(plan[0]["Plan"]))


def _walk(node: dict) -> Iterator[dict]:
    yield node
    for child in node.get("Plans", []):
        yield from _walk(child)
