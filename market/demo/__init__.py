"""Demo community for Sprig: realistic users, sub-agents (with working app bundles),
fork trees, installs and open fork requests, generated deterministically from a seed.

    >>> from market.demo import generate_community
    >>> community = generate_community(7)

See :mod:`market.demo.content` for how the community is built.
"""

from market.demo.content import (
    CATEGORIES,
    SCOPE_VOCABULARY,
    DemoBundle,
    DemoCommunity,
    DemoForkRequest,
    DemoInstall,
    DemoSubAgent,
    DemoUser,
    generate_community,
)

__all__ = [
    "CATEGORIES",
    "SCOPE_VOCABULARY",
    "DemoBundle",
    "DemoCommunity",
    "DemoForkRequest",
    "DemoInstall",
    "DemoSubAgent",
    "DemoUser",
    "generate_community",
]
