"""Credit that flows from a fork's usage back to its ancestors (pure).

A fork exists because its ancestors were worth forking, so part of its usage is credited to
them, decaying with distance: an ancestor ``k`` generations up receives ``usage × DECAY**k``.
With DECAY = 0.5 the parent gets half of a fork's users, the grandparent a quarter, and so on;
the fork itself keeps all of its own. Usage is distinct active users in the window, never raw
opens, so a flood from one user cannot buy credit.
"""

from __future__ import annotations

from collections.abc import Mapping

DECAY = 0.5


def ancestors_of(ancestry: str) -> list[int]:
    """Ids from the root down to the parent, from the stored "1/5/9" path."""
    return [int(part) for part in ancestry.split("/") if part]


def credit_to_ancestors(
    nodes: Mapping[int, str], usage: Mapping[int, int], decay: float = DECAY
) -> dict[int, dict[str, float]]:
    """For every node that is an ancestor of something with usage: the credit it receives
    from its descendants, their total usage, and the share (credit / descendants' usage).

    nodes: id → ancestry path; usage: id → distinct active users.
    """
    credit: dict[int, float] = {}
    descendant_usage: dict[int, int] = {}
    for node, users in usage.items():
        if not users or node not in nodes:
            continue
        path = ancestors_of(nodes[node])
        for distance, ancestor in enumerate(reversed(path), start=1):
            credit[ancestor] = credit.get(ancestor, 0.0) + users * decay**distance
            descendant_usage[ancestor] = descendant_usage.get(ancestor, 0) + users
    return {
        ancestor: {
            "credit": round(credit[ancestor], 4),
            "descendant_users": descendant_usage[ancestor],
            "share": round(credit[ancestor] / descendant_usage[ancestor], 4),
        }
        for ancestor in credit
    }
