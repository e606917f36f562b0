"""PostgreSQL's plan for a statement the code sent, for tests that check an index serves it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import event, text


@contextmanager
def statements_sent(engine, wanted: Callable[[str], bool]) -> Iterator[list[tuple[str, dict]]]:
    """The (statement, parameters) the engine sends inside the block that ``wanted`` accepts."""
    sent: list[tuple[str, dict]] = []

    def remember(_conn, _cursor, statement, parameters, _context, _many):
        if wanted(statement):
            sent.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", remember)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", remember)


def plan_nodes(
    session, statement: str, parameters, *, table: str, turned_off: Sequence[str]
) -> list[dict]:
    """Every node of the plan of ``statement`` (as sent, with its ``parameters``), with
    ``table`` analyzed and the planner's ``turned_off`` methods (``seqscan``, ``sort``, ...)
    off for the session's transaction: on a test's few rows the planner would rightly prefer
    reading the table, so a method is taken away to see whether an index can serve instead."""
    for method in turned_off:
        session.execute(text(f"SET LOCAL enable_{method} = off"))
    session.execute(text(f"ANALYZE {table}"))
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
