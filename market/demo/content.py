"""A deterministic, pure generator of a realistic demo community for Sprig.

``generate_community(seed)`` returns users, sub-agents (a fork forest whose bundles
are small working single-page apps), installs and open fork requests. It is pure
Python: no Flask, no database, no network, no clock, and all randomness comes from
one ``random.Random(seed)`` so the same seed always yields the same community.

How the pieces fit:

* Root sub-agents come from :data:`material.ROOTS` (``assets/roots/*.json``): one
  believable tool each, with its creator's story and a JS engine from ``assets/apps``.
* A fork applies one or two *recipes* (the words of a request plus the concrete
  change they imply) to its parent's latest config. The bundle is re-rendered from
  that config, so a fork's diff against its parent is exactly the requested change:
  units, goals, a new field, a reminder block, a new scope or host.
* Authors are chosen so that every bundle, manifest and story is free of the
  author's own email, phone, display name and address (Sprig refuses such bundles),
  and stories/requests follow the author's persona and language.

The parts: :mod:`.community` (the public types), :mod:`.users` (people and the privacy
check), :mod:`.recipes` (what a fork can ask for and the change it makes), :mod:`.render`
(config to bundle), :mod:`.stories` (titles, requests, stories), :mod:`.forest` (growing
the fork forest); this module adds installs and open fork requests and puts it together.
"""

from __future__ import annotations

from random import Random

from market.demo.community import (
    CATEGORIES,
    SCOPE_VOCABULARY,
    DemoBundle,
    DemoCommunity,
    DemoForkRequest,
    DemoInstall,
    DemoSubAgent,
    DemoUser,
)
from market.demo.forest import Node, grow
from market.demo.recipes import recipes_for
from market.demo.stories import pick_text
from market.demo.users import Member, make_users

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


# --------------------------------------------------------------------------- installs & requests


def _installs(rng: Random, users: list[Member], nodes: list[Node]) -> list[DemoInstall]:
    # Popularity: root popularity x lineage success x luck, then Zipf by rank.
    score = []
    for n in nodes:
        base = float(n.root["popularity"]) * (1.0 + n.children) ** 0.8 * rng.lognormvariate(0, 0.5)
        if n.parent is not None:
            base *= 0.35
        score.append(base)
    ranked = sorted(range(len(nodes)), key=lambda i: -score[i])
    weight = [0.0] * len(nodes)
    for rank, i in enumerate(ranked):
        vis = nodes[i].visibility
        weight[i] = (1.0 / (rank + 1) ** 0.95) * (
            0.0 if vis == "private" else 0.15 if vis == "unlisted" else 1.0
        )
    cum = []
    total = 0.0
    for w in weight:
        total += w
        cum.append(total)
    out: list[DemoInstall] = []
    seen: set[tuple[str, str]] = set()
    # Authors always have their own sub-agents installed (the only way to get a private one).
    for n in nodes:
        assert n.author is not None
        pair = (n.author.handle, n.key)
        if pair not in seen:
            seen.add(pair)
            out.append(DemoInstall(n.author.handle, n.key, rng.randint(0, n.created - 1)))
    for u in users:
        if u.kind != "person":
            continue
        # Nine apps on average: people try a few of each kind they need before one sticks.
        want = min(40, 1 + int(rng.expovariate(1 / 8)))
        got = 0
        for _ in range(want * 6):
            if got >= want:
                break
            i = rng.choices(range(len(nodes)), cum_weights=cum, k=1)[0]
            n = nodes[i]
            pair = (u.handle, n.key)
            if pair in seen or n.created < 1:
                continue
            if n.category not in u.persona["cats"] and rng.random() < 0.45:
                continue  # people mostly install what fits their life
            seen.add(pair)
            out.append(DemoInstall(u.handle, n.key, rng.randint(0, n.created - 1)))
            got += 1
    return out


def _open_requests(
    rng: Random, users: list[Member], nodes: list[Node], installs: list[DemoInstall], target: int
) -> list[DemoForkRequest]:
    by_key = {n.key: n for n in nodes}
    by_handle = {u.handle: u for u in users}
    children_specs: dict[str, set[str]] = {}
    for n in nodes:
        if n.parent is not None:
            children_specs.setdefault(n.parent.key, set()).update(
                n.applied[len(n.parent.applied) :]
            )
    candidates = [
        i
        for i in installs
        if by_key[i.subagent].visibility != "private"
        and by_handle[i.user].kind == "person"
        and by_key[i.subagent].author is not by_handle[i.user]
    ]
    out: list[DemoForkRequest] = []
    seen: set[tuple[str, str]] = set()
    asked: dict[str, set[str]] = {}  # one open request per recipe per sub-agent
    for _ in range(target * 20):
        if len(out) >= target or not candidates:
            break
        inst = rng.choice(candidates)
        node = by_key[inst.subagent]
        user = by_handle[inst.user]
        if (user.handle, node.key) in seen or node.created < 2:
            continue
        if node.lang != "en" and user.lang != node.lang:
            continue  # requests on a Japanese/Chinese app come from people who read it
        taken = children_specs.get(node.key, set()) | asked.get(node.key, set())
        options = [
            s
            for s in recipes_for(node, rng)
            if s["id"] not in taken
            and (not s.get("gender") or s["gender"] == user.gender)
            and (not s.get("translate") or s["translate"] == user.lang)
        ]
        if not options:
            continue
        spec = rng.choice(options)
        text, _ = pick_text(
            rng,
            spec,
            node.lang if not spec.get("translate") else "en",
            spec["translate"] if spec.get("translate") else user.lang,
        )
        seen.add((user.handle, node.key))
        asked.setdefault(node.key, set()).add(spec["id"])
        days = rng.randint(0, min(21, node.created - 1, max(0, inst.days_ago)))
        out.append(DemoForkRequest(user.handle, node.key, text, days))
    return out


# --------------------------------------------------------------------------- entry point


def generate_community(
    seed: int = 7, *, n_users: int = 1200, n_subagents: int = 360
) -> DemoCommunity:
    """Build the demo community for ``seed``. Pure and deterministic."""
    rng = Random(seed)
    users = make_users(rng, n_users)
    nodes = grow(rng, users, n_subagents)
    installs = _installs(rng, users, nodes)
    n_requests = (
        max(30, min(60, round(len(users) * 0.038))) if n_users >= 200 else max(1, n_users // 20)
    )
    requests = _open_requests(rng, users, nodes, installs, n_requests)

    # Oldest first; a child is always strictly younger than its parent, so parents lead.
    nodes.sort(key=lambda n: (-n.created, n.order))
    subagents = []
    for n in nodes:
        assert n.author is not None
        subagents.append(
            DemoSubAgent(
                key=n.key,
                author=n.author.handle,
                title=n.title,
                summary=n.summary,
                story=n.story,
                category=n.category,
                tags=n.tags,
                visibility=n.visibility,
                parent=n.parent.key if n.parent else None,
                fork_request=n.request,
                versions=n.bundles,
                created_days_ago=n.created,
            )
        )
    installs.sort(key=lambda i: (-i.days_ago, i.user, i.subagent))
    return DemoCommunity(
        users=tuple(u.freeze() for u in users),
        subagents=tuple(subagents),
        installs=tuple(installs),
        fork_requests=tuple(requests),
    )
