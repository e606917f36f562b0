"""Growing the fork forest: the roots of the catalog, a few deep lineages first, then bushy
growth by popularity and preferential attachment. Each fork applies one or two recipes
and gets an author who speaks the request's language and whose personal data appears
nowhere in what they publish."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from random import Random
from typing import Any

from market.demo.community import DemoBundle
from market.demo.material import ROOTS
from market.demo.recipes import (
    apply_recipe,
    base_config,
    recipes_for,
    touches,
)
from market.demo.render import render_bundle
from market.demo.stories import (
    fork_story,
    fork_summary,
    fork_title,
    join_requests,
    pick_text,
    slug,
    tag_of,
)
from market.demo.users import Member, leaks, weighted


@dataclass
class Node:
    key: str
    root: dict[str, Any]
    parent: Node | None
    cfg: dict[str, Any]
    scopes: set[str]
    applied: list[str]
    depth: int
    created: int
    title: str = ""
    summary: str = ""
    story: str = ""
    request: str | None = None
    tags: tuple[str, ...] = ()
    visibility: str = "public"
    author: Member | None = None
    category: str = ""
    children: int = 0
    base_title: str = ""
    bundles: tuple[DemoBundle, ...] = ()
    order: int = 0
    child_specs: set[str] = field(default_factory=set)

    @property
    def lang(self) -> str:
        return str(self.cfg["lang"])


def _node_text(node: Node) -> str:
    parts = [node.story, node.title, node.summary, node.request or ""]
    for b in node.bundles:
        parts.append(json.dumps(b.manifest, ensure_ascii=False))
        parts.extend(b.files.values())
        parts.append(b.changelog)
    return "\n".join(parts).lower()


class _Forest:
    """Grows the fork forest; keeps bookkeeping out of generate_community."""

    def __init__(self, rng: Random, users: list[Member]) -> None:
        self.rng = rng
        self.nodes: list[Node] = []
        self.persons = [u for u in users if u.kind == "person"]
        self.by_lang: dict[str, list[Member]] = {}
        for u in self.persons:
            self.by_lang.setdefault(u.lang, []).append(u)
        self.counter: dict[str, int] = {}
        self._author_cache: dict[tuple[Any, ...], tuple[list[Member], list[float]]] = {}
        self.root_authors: set[str] = set()

    # -- authors
    def choose_author(
        self,
        node: Node,
        lang: str,
        gender: str | None = None,
        locale: str | None = None,
        avoid: Member | None = None,
    ) -> Member:
        """A person likely to have made this: active, into this category, speaks ``lang``."""
        key = (node.category, lang, gender, locale)
        if key not in self._author_cache:
            if locale:
                pool = [u for u in self.persons if u.locale == locale]
            elif lang != "en" and self.by_lang.get(lang):
                pool = self.by_lang[lang]
            else:
                pool = self.persons
            if gender:
                pool = [u for u in pool if u.gender == gender] or pool
            cum, total = [], 0.0
            for u in pool:
                cats = u.persona["cats"]
                affinity = (
                    3.0 if cats[0] == node.category else 1.8 if node.category in cats else 0.35
                )
                total += u.activity * affinity * (1.0 if u.lang == lang else 0.25)
                cum.append(total)
            self._author_cache[key] = (pool, cum)
        pool, cum = self._author_cache[key]
        pick = pool[0]
        for _ in range(10):
            pick = self.rng.choices(pool, cum_weights=cum, k=1)[0]
            if pick is not avoid:
                break
        return pick

    def settle_author(self, node: Node, chooser: Any) -> None:
        """Pick authors until none of their personal values appear anywhere public."""
        text = _node_text(node)
        for _ in range(50):
            author = chooser()
            if not leaks(author, text):
                node.author = author
                return
        raise RuntimeError(f"no privacy-safe author for {node.key}")  # pragma: no cover

    # -- nodes
    def add_root(self, root: dict[str, Any], created: int) -> Node:
        cfg = base_config(root)
        node = Node(
            key=root["key"],
            root=root,
            parent=None,
            cfg=cfg,
            scopes=set(root["scopes"]),
            applied=[],
            depth=0,
            created=created,
            category=root["category"],
            base_title=root["title"],
            title=root["title"],
            summary=root["summary"],
            story=root["story"],
            tags=tuple(root["tags"][:5]),
            order=len(self.nodes),
        )
        node.visibility = "unlisted" if self.rng.random() < 0.03 else "public"
        self._finish_versions(node)
        self.settle_author(node, lambda: self.choose_root_author(node))
        author = node.author
        assert author is not None
        self.root_authors.add(author.handle)
        # The creator's profile tells the same story as the root ("ex-college rower").
        author.bio = (
            root["bio"] if author.role != "moderator" else f"community moderator; {root['bio']}"
        )
        self.nodes.append(node)
        return node

    def choose_root_author(self, node: Node) -> Member:
        """Each root has its own creator, in the root's language and voice."""
        root = node.root
        lang = root.get("lang", "en")
        pool = [
            u
            for u in self.persons
            if u.lang == lang
            and u.handle not in self.root_authors
            and (not root.get("locale") or u.locale == root["locale"])
            and (not root.get("gender") or u.gender == root["gender"])
        ]
        pool = (
            pool or [u for u in self.persons if u.handle not in self.root_authors] or self.persons
        )
        weights = [u.activity * (3.0 if node.category in u.persona["cats"] else 1.0) for u in pool]
        return weighted(self.rng, pool, weights)

    def fork(
        self, parent: Node, created: int, specs: list[dict[str, Any]], *, public: bool = False
    ) -> Node:
        """A fork of ``parent`` applying ``specs``; ``public`` for lineages others build on."""
        rng = self.rng
        root = parent.root
        n = self.counter.get(root["key"], 0) + 1
        self.counter[root["key"]] = n
        node = Node(
            key=f"{root['key']}/f{n}",
            root=root,
            parent=parent,
            cfg=copy.deepcopy(parent.cfg),
            scopes=set(parent.scopes),
            applied=list(parent.applied),
            depth=parent.depth + 1,
            created=created,
            category=parent.category,
            base_title=parent.base_title,
            order=len(self.nodes),
        )
        for spec in specs:
            apply_recipe(node, spec)
        lang = node.lang
        node.title = fork_title(node.base_title, specs, lang)
        node.cfg["title"] = node.title
        node.summary = fork_summary(node, specs)
        extra = [t for s in specs for t in s.get("tags", [])]
        extra += [slug(tag_of(s, "en")) for s in specs if not s.get("tags")]
        node.tags = tuple(dict.fromkeys([*parent.tags[:3], *[t for t in extra if t]]))[:5]
        roll = rng.random()
        node.visibility = "private" if roll < 0.05 else "unlisted" if roll < 0.10 else "public"
        if public:
            node.visibility = "public"  # others fork it next; nobody can fork a private app
        # The request is written by the author, so choose who first, in their language.
        target_lang = specs[0]["translate"] if specs[0].get("translate") else lang
        parent_lang = parent.lang
        # A request worded in Spanish/Chinese/Japanese ("cámbialo a pesos") usually
        # comes from someone who speaks it.
        voice = parent_lang
        first = specs[0]
        if parent_lang == "en" and not first.get("generic") and not first.get("translate"):
            spoken = [x for x in ("es", "zh", "ja") if x in first]
            if spoken and rng.random() < 0.7:
                voice = spoken[0]
        gender = next((s["gender"] for s in specs if s.get("gender")), None)
        author = self.choose_author(
            node, target_lang if target_lang != "en" else voice, gender=gender, avoid=parent.author
        )
        texts = [
            pick_text(
                rng,
                s,
                parent_lang if not s.get("translate") else "en",
                s["translate"] if s.get("translate") else author.lang,
            )
            for s in specs
        ]
        request_lang = texts[0][1]
        request = texts[0][0]
        for text, tl in texts[1:]:
            request = join_requests(request, text, request_lang if tl == request_lang else "en")
        node.request = request
        node.author = author
        node.story = fork_story(rng, node, parent.title, specs, request, request_lang)
        self._finish_versions(node)
        chooser_lang = target_lang if target_lang != "en" else voice

        def chooser() -> Member:
            return self.choose_author(node, chooser_lang, gender=gender, avoid=parent.author)

        if leaks(author, _node_text(node)):
            self.settle_author(node, chooser)
        parent.children += 1
        parent.child_specs.update(s["id"] for s in specs)
        self.nodes.append(node)
        return node

    def _finish_versions(self, node: Node) -> None:
        """Render v1 and maybe later versions (small tweaks with a changelog)."""
        rng = self.rng
        popular = node.root.get("popularity", 10) >= 40
        roll = rng.random()
        n_versions = (
            1 if roll < (0.45 if popular else 0.6) else 2 if roll < (0.8 if popular else 0.9) else 3
        )
        parent_schema = node.parent.bundles[-1].manifest["data_schema"] if node.parent else None
        bundles = [render_bundle(node, "", parent_schema)]
        for _ in range(n_versions - 1):
            # Roots only get housekeeping updates; their identity (units, goal) is the
            # creator's story. Forks may also ship one of their own follow-up changes.
            options = [
                s
                for s in recipes_for(node, rng, generic_only=node.parent is None)
                if s.get("changelog") and not s.get("translate") and not s.get("title")
            ]
            if not options:
                break
            spec = rng.choice(options)
            apply_recipe(node, spec)
            node.cfg["title"] = node.title
            bundles.append(render_bundle(node, spec["changelog"]))
        node.bundles = tuple(bundles)

    def choose_specs(self, node: Node, *, spine: bool = False) -> list[dict[str, Any]]:
        """One or two recipes for a new fork of ``node``. Siblings ask for different
        things; spines (deliberately deep lineages) avoid translations and renames,
        which narrow what later forks can ask for."""
        rng = self.rng
        options = [
            s
            for s in recipes_for(node, rng)
            if s["id"] not in node.child_specs
            and not (spine and (s.get("translate") or s.get("title")))
        ]
        if not options:
            return []
        own = {s["id"] for s in node.root.get("forks", [])}
        weights = [3.0 if s["id"] in own else 0.5 if s.get("translate") else 1.0 for s in options]
        first = weighted(rng, options, weights)
        specs = [first]
        if not first.get("translate") and rng.random() < 0.3:
            probe = Node(
                key="probe",
                root=node.root,
                parent=None,
                cfg=copy.deepcopy(node.cfg),
                scopes=set(),
                applied=[*node.applied],
                depth=0,
                created=0,
            )
            apply_recipe(probe, first)
            touched = touches(first)
            second = [
                s
                for s in recipes_for(probe, rng)
                if not s.get("translate")
                and not s.get("title")
                and not first.get("title")
                and not (touches(s) & touched)
                and s["id"] not in node.child_specs
                and (
                    not s.get("gender") or not first.get("gender") or s["gender"] == first["gender"]
                )
            ]
            if second:
                specs.append(rng.choice(second))
        return specs


def grow(rng: Random, users: list[Member], n_subagents: int) -> list[Node]:
    forest = _Forest(rng, users)
    roots = sorted(ROOTS, key=lambda r: -r["popularity"])
    n_roots = max(1, min(len(roots), n_subagents // 6 or 1))
    roots = roots[:n_roots]
    root_nodes = []
    for i, root in enumerate(roots):
        created = rng.randint(300, 365) if i < 8 else rng.randint(90, 340)
        root_nodes.append(forest.add_root(root, created))

    budget = max(0, n_subagents - len(root_nodes))

    def child_age(parent: Node, spread: int = 45) -> int:
        return rng.randint(max(1, parent.created - spread), parent.created - 1)

    # Spines first: a few lineages grow deep (one to depth >= 9, several >= 6).
    for idx, depth in ((0, 10), (1, 7), (2, 7), (3, 6), (4, 6), (5, 6)):
        if idx >= len(root_nodes):
            break
        node = root_nodes[idx]
        for _ in range(depth):
            if budget <= 0 or node.created < 2:
                break
            specs = forest.choose_specs(node, spine=True)
            if not specs:
                break
            node = forest.fork(node, child_age(node, 30), specs, public=True)
            budget -= 1

    # Then bushy growth: roots by Zipf-ish popularity, parents by preferential attachment.
    pop = [float(r["popularity"]) ** 1.5 for r in roots]
    tries, max_tries = 0, budget * 60 + 100
    while budget > 0 and tries < max_tries:
        tries += 1
        root = weighted(rng, roots, pop)
        tree = [
            n
            for n in forest.nodes
            if n.root is root and n.visibility != "private" and n.created >= 2
        ]
        if not tree:
            continue
        weights = [(1.0 + 1.5 * n.children) * (2.5 if n.parent is None else 1.0) for n in tree]
        parent = weighted(rng, tree, weights)
        specs = forest.choose_specs(parent)
        if not specs:
            continue
        forest.fork(parent, child_age(parent), specs)
        budget -= 1
    return forest.nodes
