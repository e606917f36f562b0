"""The demo community generator: determinism, shape, privacy and working apps.

The app checks use Node when it is on PATH: ``node --check`` for every root app
(one per tool template) and a smoke run of every distinct ``app.js`` against a tiny
DOM stand-in (fill inputs, submit forms, click every button, fire change events).
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import pytest

from evolution import data_schema
from market.demo import (
    CATEGORIES,
    SCOPE_VOCABULARY,
    DemoCommunity,
    DemoSubAgent,
    generate_community,
)

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH")

# Element ids an app may look up without the page having them: each lookup is
# guarded in the engine (warnings box, per-person breakdown, allowance button).
OPTIONAL_IDS = {"warnings", "groups", "allowance"}
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
KANA = re.compile(r"[\u3040-\u30ff]")


@pytest.fixture(scope="module")
def community() -> DemoCommunity:
    return generate_community(7)


@pytest.fixture(scope="module")
def by_key(community: DemoCommunity) -> dict[str, DemoSubAgent]:
    return {s.key: s for s in community.subagents}


@pytest.fixture(scope="module")
def users(community: DemoCommunity) -> dict[str, object]:
    return {u.handle: u for u in community.users}


def depth(s: DemoSubAgent, by_key: dict[str, DemoSubAgent]) -> int:
    d = 0
    while s.parent is not None:
        s = by_key[s.parent]
        d += 1
    return d


def root_of(s: DemoSubAgent, by_key: dict[str, DemoSubAgent]) -> str:
    while s.parent is not None:
        s = by_key[s.parent]
    return s.key


def config_of(js: str) -> dict:
    """The CONFIG object literal at the top of a generated app.js (it is JSON)."""
    start = js.index("const CONFIG = ") + len("const CONFIG = ")
    end = js.index("\n};", start) + 2
    return json.loads(js[start:end])


# --------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_community(community: DemoCommunity) -> None:
    assert generate_community(7) == community


def test_different_seed_gives_a_different_community(community: DemoCommunity) -> None:
    other = generate_community(8)
    assert other != community
    assert [u.handle for u in other.users] != [u.handle for u in community.users]


def test_output_does_not_depend_on_hash_randomization() -> None:
    # Same-process equality can't see set-iteration order; fresh interpreters with
    # different PYTHONHASHSEEDs can.
    code = (
        "import hashlib; from market.demo import generate_community; "
        "print(hashlib.sha256(repr(generate_community(5, n_users=300, n_subagents=90))"
        ".encode()).hexdigest())"
    )
    digests = set()
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_smaller_communities_work() -> None:
    small = generate_community(3, n_users=120, n_subagents=40)
    assert len(small.users) == 120
    assert len(small.subagents) == 40
    keys = {s.key for s in small.subagents}
    assert all(i.subagent in keys for i in small.installs)


# --------------------------------------------------------------------------- users


def test_user_counts_kinds_and_roles(community: DemoCommunity) -> None:
    assert len(community.users) >= 1000
    services = {u.handle for u in community.users if u.kind == "service"}
    assert {"main-agent", "coding-agent", "training-team"} <= services
    assert len(services) <= 5
    assert 2 <= sum(u.role == "moderator" for u in community.users) <= 3
    assert all(u.kind in ("person", "service") for u in community.users)
    assert all(u.role in ("user", "moderator") for u in community.users)


def test_user_identities_are_unique_and_fictional(community: DemoCommunity) -> None:
    handles = [u.handle for u in community.users]
    emails = [u.email for u in community.users]
    assert len(set(handles)) == len(handles)
    assert len(set(emails)) == len(emails)
    for u in community.users:
        assert u.handle == u.handle.lower() and re.fullmatch(r"[a-z0-9._-]+", u.handle)
        assert re.fullmatch(r"[a-z0-9._-]+@example\.(com|org|net)", u.email), u.email
        if u.phone is not None:
            assert re.fullmatch(r"\+1 \d{3}-555-01\d{2}", u.phone), u.phone
        assert u.bio.strip()
    phones = [u.phone for u in community.users if u.phone]
    assert len(set(phones)) == len(phones)
    assert len(phones) > 300
    assert sum(u.address is not None for u in community.users) > 200
    # Most people keep sharing for training on; some turn it off (the services never share).
    assert 0.6 < sum(u.share_feedback_for_training for u in community.users) / len(handles) < 0.85


def test_users_span_the_locales_the_agent_serves(community: DemoCommunity) -> None:
    locales = collections.Counter(u.locale for u in community.users)
    assert locales.most_common(1)[0][0] == "en-US"
    for loc in ("en-CA", "zh-CN", "ja-JP", "es-MX"):
        assert locales[loc] >= 20, loc


# --------------------------------------------------------------------------- sub-agents


def test_subagent_counts_and_categories(community: DemoCommunity) -> None:
    subs = community.subagents
    assert len(subs) >= 300
    roots = [s for s in subs if s.parent is None]
    assert 40 <= len(roots) <= 60
    cats = collections.Counter(s.category for s in subs)
    assert set(cats) <= set(CATEGORIES)
    assert len(cats) >= 8
    # Each root is its own tool: distinct titles and distinct apps.
    assert len({s.title for s in roots}) == len(roots)
    assert len({s.versions[0].files["app.js"] for s in roots}) == len(roots)


def test_keys_unique_and_parents_precede_children(community: DemoCommunity) -> None:
    seen: dict[str, DemoSubAgent] = {}
    for s in community.subagents:
        assert s.key not in seen
        if s.parent is not None:
            assert s.parent in seen, f"{s.key} listed before its parent {s.parent}"
            assert s.created_days_ago < seen[s.parent].created_days_ago
        assert 1 <= s.created_days_ago <= 365
        seen[s.key] = s


def test_only_visible_subagents_are_forked_by_others(community: DemoCommunity, by_key) -> None:
    # Sprig only lets people fork what they can see: a private parent only by its author.
    for s in community.subagents:
        if s.parent and by_key[s.parent].visibility == "private":
            assert s.author == by_key[s.parent].author, s.key


def test_fork_trees_are_skewed_with_deep_lineages(community: DemoCommunity, by_key) -> None:
    depths = collections.defaultdict(int)
    sizes = collections.Counter()
    for s in community.subagents:
        r = root_of(s, by_key)
        depths[r] = max(depths[r], depth(s, by_key))
        sizes[r] += 1
    assert max(depths.values()) >= 8
    assert sum(d >= 6 for d in depths.values()) >= 3
    # A few popular roots with bushy trees, many small ones.
    counts = sorted(sizes.values(), reverse=True)
    assert counts[0] >= 5 * statistics.median(counts)
    assert sum(c <= 3 for c in counts) >= len(counts) // 3


def test_forks_carry_a_request_and_a_derived_title(community: DemoCommunity, by_key) -> None:
    for s in community.subagents:
        assert s.title.strip() and len(s.title) <= 80
        assert s.summary.strip() and s.story.strip()
        assert 2 <= len(s.tags) <= 5 and all(t == t.lower() for t in s.tags)
        if s.parent is None:
            assert s.fork_request is None
        else:
            assert s.fork_request and len(s.fork_request) >= 6  # 6 CJK chars is a request
    forks = [s for s in community.subagents if s.parent]
    renamed = sum(s.title != by_key[s.parent].title for s in forks)
    assert renamed >= 0.9 * len(forks)


def test_listing_fields_fit_the_catalog_limits(community: DemoCommunity) -> None:
    # Mirrors market.catalog.schemas / market.catalog.models so the demo loader never trips a limit.
    tag_re = re.compile(r"[\w][\w .+\-]*")
    for s in community.subagents:
        assert len(s.title) <= 120 and len(s.summary) <= 300 and len(s.story) <= 4000
        assert all(tag_re.fullmatch(t) and len(t) <= 40 for t in s.tags), s.tags
        assert s.fork_request is None or 3 <= len(s.fork_request) <= 2000
    for u in community.users:
        assert len(u.handle) <= 40 and len(u.display_name) <= 80 and len(u.bio) <= 500


def test_no_two_forks_would_be_deduplicated_on_load(community: DemoCommunity) -> None:
    # The catalog dedupes on (publisher, parent, bundle sha256): every sub-agent and
    # every version must stay distinct under that key.
    seen = set()
    for s in community.subagents:
        first = s.versions[0]
        key = (s.author, s.parent, json.dumps([first.manifest, first.files], sort_keys=True))
        assert key not in seen, s.key
        seen.add(key)


def test_stories_read_like_short_first_person_posts(community: DemoCommunity) -> None:
    for s in community.subagents:
        # A sentence ends at ./!/? before a capital (not "3.8 L" or "4 p.m. are") or at 。！？
        parts = re.split(r"(?<=[.!?])\s+(?=[A-Z“\"'¿¡])|(?<=[。！？])", s.story)
        sentences = [x for x in parts if x.strip()]
        assert 2 <= len(sentences) <= 6, (s.key, s.story)
        first_person = (
            re.search(r"\b(I|I'm|I'd|my|My|we|We|our|Our)\b", s.story)
            or CJK.search(s.story)
            or re.search(r"\b(Soy|mi|Usaba)\b", s.story)
        )
        assert first_person, (s.key, s.story)


def test_visibility_mix(community: DemoCommunity) -> None:
    vis = collections.Counter(s.visibility for s in community.subagents)
    assert set(vis) == {"public", "unlisted", "private"}
    n = len(community.subagents)
    assert vis["public"] >= 0.8 * n
    assert 0.01 * n <= vis["unlisted"] <= 0.1 * n
    assert 0.01 * n <= vis["private"] <= 0.1 * n


def test_versions_and_changelogs(community: DemoCommunity) -> None:
    counts = collections.Counter(len(s.versions) for s in community.subagents)
    assert set(counts) <= {1, 2, 3} and counts[2] and counts[3]
    for s in community.subagents:
        assert s.versions[0].changelog == ""
        for older, newer in zip(s.versions, s.versions[1:], strict=False):
            assert newer.changelog.strip()
            assert newer.files != older.files


def test_some_titles_summaries_and_requests_are_chinese_or_japanese(community) -> None:
    titled = [s for s in community.subagents if CJK.search(s.title + s.summary)]
    assert any(not KANA.search(s.title) for s in titled)  # Chinese
    assert any(KANA.search(s.title + s.summary) for s in titled)  # Japanese
    requests = [s.fork_request for s in community.subagents if s.fork_request]
    requests += [r.text for r in community.fork_requests]
    assert any(CJK.search(r) and not KANA.search(r) for r in requests)
    assert any(KANA.search(r) for r in requests)


# --------------------------------------------------------------------------- bundles


def all_versions(community: DemoCommunity):
    for s in community.subagents:
        for i, b in enumerate(s.versions):
            yield s, i, b


def test_manifests_are_valid(community: DemoCommunity) -> None:
    host_re = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}")
    for s, _, b in all_versions(community):
        m = b.manifest
        moves = {"data_migration", "data_samples"} if "data_migration" in m else set()
        assert set(m) == {"name", "entry", "scopes", "hosts", "data_schema", "description", *moves}
        assert 1 <= len(m["name"]) <= 80
        assert len(m["description"]) <= 500
        assert m["entry"] == "index.html" and m["entry"] in b.files
        assert m["scopes"] and set(m["scopes"]) <= SCOPE_VOCABULARY, (s.key, m["scopes"])
        assert all(host_re.fullmatch(h) for h in m["hosts"]), m["hosts"]
        assert m["data_schema"]["type"] == "object" and m["data_schema"]["properties"]


def test_forks_that_drop_a_choice_carry_a_migration_their_samples_pass(
    community: DemoCommunity,
) -> None:
    """A fork that replaces a list's choices (a guitar timer from a piano one) breaks its
    parent's data schema; publishing it needs the migration, checked against its samples."""
    by_key = {s.key: s for s in community.subagents}
    classes = collections.Counter()
    for s in community.subagents:
        if s.parent is None:
            continue
        parent_schema = by_key[s.parent].versions[-1].manifest["data_schema"]
        first = s.versions[0].manifest
        kind = data_schema.classify_change(parent_schema, first["data_schema"]).kind
        classes[kind] += 1
        assert (kind == data_schema.BREAKING) == ("data_migration" in first), s.key
        if "data_migration" in first:
            assert not data_schema.check_against_samples(
                parent_schema, first["data_schema"], first["data_migration"], first["data_samples"]
            ), s.key
    assert set(classes) == {data_schema.COMPATIBLE, data_schema.ADDITIVE, data_schema.BREAKING}


def test_bundle_files_are_small_relative_utf8(community: DemoCommunity) -> None:
    for s, _, b in all_versions(community):
        assert set(b.files) == {"index.html", "app.js", "style.css"}
        for path, text in b.files.items():
            assert not path.startswith("/") and ".." not in path.split("/")
            text.encode("utf-8")  # valid UTF-8 (no lone surrogates)
            assert "\x00" not in text
        size = sum(len(t.encode("utf-8")) for t in b.files.values())
        assert size < 20_000, (s.key, size)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str]] = []
        self.ids: set[str] = set()
        self.elements: list[dict] = []
        self._select: dict | None = None
        self._option: list | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "script" and "src" in a:
            self.refs.append(("script", a["src"]))
        if tag == "link" and "href" in a:
            self.refs.append(("link", a["href"]))
        if tag in ("img", "iframe", "audio", "video", "source") and "src" in a:
            self.refs.append((tag, a["src"]))
        if tag == "option" and self._select is not None:
            self._option = [a.get("value", ""), "", "selected" in a]
            self._select["options"].append(self._option)
            return
        if "id" in a:
            self.ids.add(a["id"])
            el = {
                "tag": tag,
                "id": a["id"],
                "options": [],
                "attrs": {k: v for k, v in a.items() if k != "id"},
            }
            self.elements.append(el)
            if tag == "select":
                self._select = el

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        if tag == "option":
            self._option = None

    def handle_data(self, data: str) -> None:
        if self._option is not None:
            self._option[1] += data


def parse_html(html: str) -> _Tags:
    p = _Tags()
    p.feed(html)
    return p


def test_index_html_only_references_local_files(community: DemoCommunity) -> None:
    for s, _, b in all_versions(community):
        page = parse_html(b.files["index.html"])
        assert ("script", "app.js") in page.refs and ("link", "style.css") in page.refs
        for _tag, ref in page.refs:
            assert "//" not in ref and not ref.startswith(("http", "/")), (s.key, ref)
            assert ref in b.files, (s.key, ref)
        assert "http" not in b.files["style.css"]


def test_network_calls_only_to_listed_hosts(community: DemoCommunity) -> None:
    for s, _, b in all_versions(community):
        hosts = set(b.manifest["hosts"])
        used = {urlparse(u).hostname for u in re.findall(r"https?://[^\s\"'`]+", b.files["app.js"])}
        assert used == hosts, (s.key, used, hosts)
        if not hosts:
            assert "fetch(" not in b.files["app.js"]


def test_app_js_only_looks_up_elements_the_page_has(community: DemoCommunity) -> None:
    for s, _, b in all_versions(community):
        ids = set(re.findall(r'\$\("([\w-]+)"\)', b.files["app.js"]))
        missing = ids - parse_html(b.files["index.html"]).ids - OPTIONAL_IDS
        assert not missing, (s.key, missing)


def test_at_least_twenty_distinct_app_templates(community: DemoCommunity) -> None:
    # Engines differ in their code, not just CONFIG: compare app.js without CONFIG.
    roots = [s for s in community.subagents if s.parent is None]
    # Each engine opens with a one-line description comment right after the helpers.
    engines = {
        re.findall(r"(?m)^// (.+)$", s.versions[0].files["app.js"].split("\n};", 1)[1])[0]
        for s in roots
    }
    assert len(engines) >= 20, engines
    canvas_or_bars = sum(
        "<canvas" in s.versions[0].files["index.html"]
        or 'class="bars"' in s.versions[0].files["index.html"]
        for s in roots
    )
    assert canvas_or_bars >= 0.6 * len(roots)


# --------------------------------------------------------------------------- privacy


def _personal(u) -> list[str]:
    return [v for v in (u.email, u.phone, u.display_name, u.address) if v]


def test_no_author_personal_data_in_bundles_or_stories(community: DemoCommunity, users) -> None:
    for s in community.subagents:
        u = users[s.author]
        texts = [s.story]
        for b in s.versions:
            texts.append(json.dumps(b.manifest, ensure_ascii=False))
            texts.extend(b.files.values())
        blob = "\n".join(texts).lower()
        for value in _personal(u):
            assert value.lower() not in blob, (s.key, u.handle)
        if u.phone:
            digits = re.sub(r"\D", "", u.phone)[-7:]
            assert digits not in re.sub(r"\D", "", blob), (s.key, u.handle)


_SECRETS = [
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"\bsk[-_][A-Za-z0-9_-]{16,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY"),
    re.compile(r"(?i)(api[_-]?key|secret|token|passw(or)?d)\s*[:=]\s*[\"'][^\"']{8,}"),
]
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=]{32,}")


def test_nothing_looks_like_an_api_key(community: DemoCommunity) -> None:
    for s, _, b in all_versions(community):
        for path, text in [*b.files.items(), ("manifest", json.dumps(b.manifest))]:
            for rx in _SECRETS:
                assert not rx.search(text), (s.key, path, rx.pattern)
            for tok in _TOKEN.findall(text):
                mixed = re.search(r"\d", tok) and re.search(r"[A-Za-z]", tok)
                assert not mixed or "/" in tok or "-" in tok, (s.key, path, tok)


def test_bundles_pass_sprigs_publish_checks(community: DemoCommunity, users) -> None:
    bundles = pytest.importorskip("market.catalog.bundles")
    scan = pytest.importorskip("market.catalog.bundles.scan")
    for s, _, b in all_versions(community):
        u = users[s.author]
        bundle = bundles.bundle_from_json({"manifest": b.manifest, "files": b.files})
        scan.check_publishable(
            bundle,
            {"email": u.email, "phone": u.phone, "name": u.display_name, "address": u.address},
        )


# --------------------------------------------------------------------------- requested changes


def test_fork_bundles_differ_from_their_parent(community: DemoCommunity, by_key) -> None:
    for s in community.subagents:
        if s.parent:
            assert s.versions[0].files != by_key[s.parent].versions[-1].files, s.key


def test_some_forks_add_scopes_and_hosts(community: DemoCommunity, by_key) -> None:
    added_scopes = added_hosts = 0
    for s in community.subagents:
        if s.parent is None:
            continue
        before = by_key[s.parent].versions[-1].manifest
        after = s.versions[0].manifest
        added_scopes += bool(set(after["scopes"]) - set(before["scopes"]))
        added_hosts += bool(set(after["hosts"]) - set(before["hosts"]))
    assert added_scopes >= 10
    assert added_hosts >= 3


def test_fork_changes_match_their_requests(community: DemoCommunity, by_key) -> None:
    checked = collections.Counter()
    for s in community.subagents:
        if not s.parent:
            continue
        cfg = config_of(s.versions[0].files["app.js"])
        parent_cfg = config_of(by_key[s.parent].versions[-1].files["app.js"])
        req = s.fork_request or ""
        if "use ounces instead of ml" in req or "switch everything to oz" in req:
            assert cfg["unit"] == "oz" and parent_cfg["unit"] == "ml"
            checked["oz"] += 1
        if "knee" in req and "pain" in req:
            assert "health.injuries.read" in s.versions[0].manifest["scopes"]
            assert any("Knee" in f["label"] for f in cfg["fields"])
            checked["knee"] += 1
        if "peanut" in req.lower() and "allerg" in req:
            assert "peanut" in cfg["avoid"] and "peanut" not in parent_cfg.get("avoid", [])
            checked["peanut"] += 1
        if (
            re.search(r"reminder|remind|nudge|ping me", req)
            and "reminder" not in parent_cfg["features"]
        ):
            assert cfg["features"]["reminder"]["everyHours"] in (1, 2, 3, 4)
            assert 'id="reminder-toggle"' in s.versions[0].files["index.html"]
            checked["reminder"] += 1
        if "（中文版）" in s.title:
            assert cfg["lang"] == "zh" and 'lang="zh-CN"' in s.versions[0].files["index.html"]
            assert CJK.search(s.versions[0].files["index.html"])
            checked["zh"] += 1
    assert checked["reminder"] >= 5 and sum(checked.values()) >= 10, checked


# --------------------------------------------------------------------------- installs & requests


def test_installs_reference_visible_subagents(community: DemoCommunity, by_key, users) -> None:
    seen = set()
    for i in community.installs:
        s = by_key[i.subagent]
        assert i.user in users
        if s.visibility == "private":
            assert i.user == s.author, (i.user, s.key)
        assert 0 <= i.days_ago < s.created_days_ago
        assert (i.user, i.subagent) not in seen
        seen.add((i.user, i.subagent))


def test_installs_are_plentiful_and_skewed(community: DemoCommunity) -> None:
    persons = [u for u in community.users if u.kind == "person"]
    assert 5 <= len(community.installs) / len(persons) <= 10
    per_sub = collections.Counter(i.subagent for i in community.installs)
    ranked = [n for _, n in per_sub.most_common()]
    top = ranked[: max(1, len(ranked) // 20)]
    assert sum(top) >= 0.3 * sum(ranked)  # top 5% of sub-agents: >= 30% of installs


def test_open_fork_requests(community: DemoCommunity, by_key, users) -> None:
    reqs = community.fork_requests
    assert 30 <= len(reqs) <= 60
    assert len({(r.user, r.subagent) for r in reqs}) == len(reqs)
    for r in reqs:
        s = by_key[r.subagent]
        assert s.visibility != "private"
        assert users[r.user].kind == "person"
        assert r.text.strip() and 0 <= r.days_ago < s.created_days_ago


# --------------------------------------------------------------------------- JS with node


def distinct_apps(community: DemoCommunity) -> list[tuple[str, dict]]:
    seen: set[str] = set()
    out = []
    for s, i, b in all_versions(community):
        js = b.files["app.js"]
        if js not in seen:
            seen.add(js)
            out.append((f"{s.key}@v{i + 1}", b))
    return out


@needs_node
def test_each_app_template_passes_node_check(community: DemoCommunity, tmp_path: Path) -> None:
    roots = [s for s in community.subagents if s.parent is None]
    for s in roots:
        path = tmp_path / (
            unicodedata.normalize("NFKD", s.key).encode("ascii", "ignore").decode() + ".js"
        )
        path.write_text(s.versions[0].files["app.js"], encoding="utf-8")
        out = subprocess.run(
            [NODE, "--check", str(path)], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, (s.key, out.stderr)


SHIM = r"""
"use strict";
// A tiny DOM stand-in: enough of the browser for the generated apps to run.
const vm = require("vm");

function runApp(app) {
  const errors = [];
  const fetched = [];
  const timers = [];
  const store = new Map();
  let writes = 0;
  class El {
    constructor(tag) {
      this.tagName = String(tag).toUpperCase();
      this.children = [];
      this.parentNode = null;
      this.listeners = {};
      this.style = {};
      this.dataset = {};
      this.attrs = {};
      this._text = "";
      this._value = "";
      this._valueSet = false;
      Object.assign(this, { className: "", hidden: false, type: "", checked: false });
      Object.assign(this, { disabled: false, id: "", width: 600, height: 180 });
    }
    get firstChild() { return this.children[0] || null; }
    appendChild(c) {
      if (c.parentNode) c.parentNode.removeChild(c);
      c.parentNode = this;
      this.children.push(c);
      return c;
    }
    removeChild(c) {
      const i = this.children.indexOf(c);
      if (i >= 0) this.children.splice(i, 1);
      c.parentNode = null;
      return c;
    }
    remove() { if (this.parentNode) this.parentNode.removeChild(this); }
    get textContent() { return this._text + this.children.map((c) => c.textContent).join(""); }
    set textContent(v) {
      this.children.forEach((c) => { c.parentNode = null; });
      this.children = [];
      this._text = String(v);
    }
    get value() {
      if (this.tagName === "SELECT") {
        const opts = this.children.filter((o) => o.tagName === "OPTION");
        if (this._valueSet) return opts.some((o) => o.value === this._value) ? this._value : "";
        return opts.length ? opts[0].value : "";
      }
      if (this.tagName === "OPTION" && !this._valueSet) return this.textContent;
      return this._value;
    }
    set value(v) { this._value = String(v); this._valueSet = true; }
    addEventListener(t, fn) { (this.listeners[t] = this.listeners[t] || []).push(fn); }
    dispatch(t) {
      const ev = { type: t, target: this, currentTarget: this };
      ev.preventDefault = () => {};
      (this.listeners[t] || []).slice().forEach((fn) => fn(ev));
    }
    click() { this.dispatch("click"); }
    setAttribute(k, v) { this.attrs[k] = String(v); }
    getAttribute(k) { return k in this.attrs ? this.attrs[k] : null; }
    getContext() {
      const ctx = {};
      return new Proxy(ctx, {
        get: (t, k) => (k in t ? t[k] : () => undefined),
        set: (t, k, v) => { t[k] = v; return true; },
      });
    }
  }
  const body = new El("body");
  const byId = {};
  for (const spec of app.elements) {
    const e = new El(spec.tag);
    e.id = spec.id;
    for (const [k, v] of Object.entries(spec.attrs)) {
      if (k === "value") e.value = v;
      else if (k === "type") e.type = v;
      else if (k === "checked") e.checked = true;
      else if (k === "hidden") e.hidden = true;
      else e.attrs[k] = v;
    }
    for (const o of spec.options) {
      const opt = new El("option");
      opt.value = o[0];
      opt.textContent = o[1];
      e.appendChild(opt);
      if (o[2]) e.value = o[0];
    }
    byId[spec.id] = e;
    body.appendChild(e);
  }
  const sandbox = {
    console,
    encodeURIComponent,
    document: {
      body,
      getElementById: (id) => byId[id] || null,
      createElement: (tag) => new El(tag),
    },
    localStorage: {
      getItem: (k) => (store.has(k) ? store.get(k) : null),
      setItem: (k, v) => { writes += 1; store.set(k, String(v)); },
      removeItem: (k) => { store.delete(k); },
    },
    fetch: (url) => {
      fetched.push(String(url));
      return Promise.resolve({ json: () => Promise.resolve({}) });
    },
    setInterval: (fn) => timers.push(fn),
    setTimeout: (fn) => timers.push(fn),
    clearInterval: () => {},
    clearTimeout: () => {},
  };
  sandbox.window = sandbox;
  sandbox.confirm = () => true;
  vm.createContext(sandbox);

  const all = () => {
    const out = [];
    const walk = (n) => { out.push(n); n.children.forEach(walk); };
    walk(body);
    return out;
  };
  const attached = (n) => {
    for (; n; n = n.parentNode) if (n === body) return true;
    return false;
  };
  const today = new Date().toISOString().slice(0, 10);
  let n = 0;
  function fill() {
    for (const e of all()) {
      n += 1;
      if (e.tagName === "TEXTAREA" && !e._value) e.value = "rice, 2, cup\nbeans, 1, can";
      if (e.tagName !== "INPUT" || e.type === "checkbox" || e._value) continue;
      if (e.type === "number" || e.type === "range") e.value = String(2 + (n % 5));
      else if (e.type === "date") e.value = today;
      else if (e.type === "time") e.value = n % 2 ? "22:15" : "06:40";
      else if (e.type !== "search") e.value = e.id === "f-times" ? "08:00, 20:00" : "item " + n;
    }
  }
  function safe(what, fn) {
    try { fn(); } catch (err) {
      errors.push(what + ": " + String(err && err.stack ? err.stack : err).split("\n")[0]);
    }
  }
  let snapshot = null;
  safe("load", () => vm.runInContext(app.js, sandbox, { filename: "app.js" }));
  for (let round = 0; round < 3 && !errors.length; round++) {
    safe("fill", fill);
    for (const f of all().filter((e) => e.tagName === "FORM")) {
      safe("submit #" + f.id, () => f.dispatch("submit"));
    }
    if (round === 0 && byId["today-total"]) snapshot = byId["today-total"].textContent;
    safe("fill", fill);
    for (const s of all().filter((e) => e.tagName === "SELECT" && attached(e))) {
      const opts = s.children.filter((o) => !o.disabled && o.value);
      if (opts.length) {
        s.value = opts[opts.length - 1].value;
        safe("change select", () => s.dispatch("change"));
      }
    }
    for (const c of all().filter((e) => e.tagName === "INPUT" && attached(e))) {
      if (c.type === "checkbox") c.checked = !c.checked;
      if (c.type === "checkbox" || c.type === "date") safe("change", () => c.dispatch("change"));
      if (c.type === "search") safe("search", () => c.dispatch("input"));
    }
    for (const b of all().filter((e) => e.tagName === "BUTTON").slice(0, 250)) {
      if (attached(b) && !b.hidden) safe("click " + (b.id || b.textContent), () => b.click());
    }
  }
  for (const t of timers.slice(0, 20)) safe("timer", () => t());
  return { errors, writes, fetched, snapshot };
}

let input = "";
process.stdin.on("data", (d) => { input += d; });
process.stdin.on("end", () => {
  const out = JSON.parse(input).map((a) => {
    try { return runApp(a); } catch (err) {
      return { errors: ["harness: " + err], writes: 0, fetched: [], snapshot: null };
    }
  });
  setTimeout(() => process.stdout.write(JSON.stringify(out)), 10);
});
"""


@pytest.fixture(scope="module")
def smoke_results(community: DemoCommunity, tmp_path_factory) -> list[tuple[str, dict, dict]]:
    if NODE is None:
        pytest.skip("node is not on PATH")
    shim = tmp_path_factory.mktemp("shim") / "shim.js"
    shim.write_text(SHIM, encoding="utf-8")
    apps = distinct_apps(community)
    payload = [
        {"js": b.files["app.js"], "elements": parse_html(b.files["index.html"]).elements}
        for _, b in apps
    ]
    out = subprocess.run(
        [NODE, str(shim)], input=json.dumps(payload), capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(out.stdout)
    return [(name, b.manifest, r) for (name, b), r in zip(apps, results, strict=True)]


@needs_node
def test_every_app_runs_without_errors(smoke_results) -> None:
    assert len(smoke_results) >= 300
    for name, manifest, r in smoke_results:
        assert not r["errors"], (name, r["errors"][:3])
        assert r["writes"] > 0, name  # something was saved to localStorage
        hosts = set(manifest["hosts"])
        assert all(urlparse(u).hostname in hosts for u in r["fetched"]), (name, r["fetched"])


@needs_node
def test_water_tracker_adds_an_entry_to_todays_total(smoke_results) -> None:
    water = next(r for name, _, r in smoke_results if name == "water-tracker@v1")
    # The form's default glass (250 ml) was submitted once before the snapshot.
    assert water["snapshot"].startswith("250 / 3,000 ml"), water["snapshot"]
