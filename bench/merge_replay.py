"""Upstream fixes offered to forks, replayed over the demo community's fork trees.

Each root of the demo community (``market.demo.generate_community``, in process, no database)
gets a realistic new version: one or two edits drawn (seeded) from

* ``bugfix``: a one-line fix inside one function of ``app.js`` (a guard, a safer parse);
* ``new-file``: a ``README.md`` or a ``locales/<lang>.json`` of the interface strings;
* ``scope``: one more scope (and sometimes a host) in the manifest;
* ``schema-field``: a ``note`` property in ``data_schema`` and its field in ``app.js``'s
  ``CONFIG.fields`` (where forks add their own fields);
* ``style``: a CSS rule changed and a dark-mode block appended, an ``aria-live`` in the HTML;
* ``copy``: the description and the empty-list message reworded (which translations change).

That version is merged (``evolution.merge.merge_update``) onto every direct fork of the root:
base is the root's last version (a demo fork copies its parent's final configuration), the
fork is its latest version. Per file type (extension; ``manifest`` for the manifest) the
table counts files each merge saw, those both sides changed, clean and conflicted outcomes,
and wrong ones against an oracle that knows both edits:

* a file one side changed must come out as that side's text;
* a clean merge of a file both changed must hold, in order, every line each side added
  (relative to base), and no more copies of a line a side removed than base minus that
  removal plus the other side's additions of it;
* the manifest: scopes/hosts as ``(fork − dropped by upstream) ∪ added by upstream``, each
  other key and each ``data_schema`` property changed by one side is that side's value;
* a clean merge must be a bundle publishing accepts (``build_bundle``);
* a text conflict is needless when every base line range one side touched is at least
  ``NEEDLESS_GAP`` lines away from every range the other touched.

    python bench/merge_replay.py [--quick] [--seeds N]

Prints the tables, the conflicts with their reasons, and one JSON line last.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from random import Random
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evolution.merge import ABSENT, FileStatus, merge_update, split_lines  # noqa: E402
from market.catalog.bundles import build_bundle  # noqa: E402
from market.catalog.bundles.limits import BundleError  # noqa: E402
from market.demo import generate_community  # noqa: E402

NEEDLESS_GAP = 3
SCOPE_CHOICES = ("calendar.read", "health.read", "location.read", "photos.read", "contacts.read")
HOST_CHOICES = ("api.open-meteo.com", "cdn.jsdelivr.net")
BUGFIXES = (
    # (text in app.js, its fix): what a maintainer would ship in a point release
    ("return isNaN(n) ? 0 : n;", "return Number.isFinite(n) ? n : 0;"),
    (
        "return raw === null ? fallback : JSON.parse(raw);",
        'return raw === null || raw === "" ? fallback : JSON.parse(raw);',
    ),
    (
        "  localStorage.setItem(CONFIG.storeKey",
        "  if (value === undefined) return;\n  localStorage.setItem(CONFIG.storeKey",
    ),
    ('return String(n).padStart(2, "0");', 'return String(Math.trunc(n)).padStart(2, "0");'),
    (
        '  const d = new Date(key + "T12:00:00");',
        '  const d = new Date(String(key) + "T12:00:00");',
    ),
)

Snapshot = tuple[dict[str, Any], dict[str, str]]


# --------------------------------------------------------------------------- upstream edits


def _bugfix(rng: Random, manifest: dict, files: dict) -> None:
    app = files["app.js"]
    present = [fix for fix in BUGFIXES if fix[0] in app]
    if present:
        old, new = rng.choice(present)
        files["app.js"] = app.replace(old, new, 1)
        return
    functions = [m.end() for m in re.finditer(r"^function \w+\([^)]*\) \{\n", app, re.M)]
    at = rng.choice(functions)
    files["app.js"] = app[:at] + "  if (!document.body) return undefined;\n" + app[at:]


def _new_file(rng: Random, manifest: dict, files: dict) -> None:
    if rng.random() < 0.5 or "README.md" in files:
        ui = re.search(r'^  "ui": (\{.*?^  \})', files["app.js"], re.S | re.M)
        lang = re.search(r'^  "lang": "(\w+)"', files["app.js"], re.M)
        strings = json.loads(ui.group(1)) if ui else {}
        name = f"locales/{lang.group(1) if lang else 'en'}.json"
        files[name] = json.dumps(strings, ensure_ascii=False, indent=2) + "\n"
    else:
        files["README.md"] = (
            f"# {manifest['name']}\n\n{manifest.get('description', '')}\n\n"
            "## Data\n\nEverything stays in this browser (localStorage).\n\n"
            "## Permissions\n\n" + "".join(f"- `{s}`\n" for s in manifest["scopes"])
        )


def _scope(rng: Random, manifest: dict, files: dict) -> None:
    options = [s for s in SCOPE_CHOICES if s not in manifest["scopes"]]
    manifest["scopes"] = sorted([*manifest["scopes"], rng.choice(options)])
    if rng.random() < 0.3:
        manifest["hosts"] = sorted({*manifest["hosts"], rng.choice(HOST_CHOICES)})


def _schema_field(rng: Random, manifest: dict, files: dict) -> None:
    schema = manifest.setdefault("data_schema", {"type": "object", "properties": {}})
    schema.setdefault("properties", {})["note"] = {"type": "string", "maxLength": 280}
    lines = split_lines(files["app.js"])
    field_lines = [i for i, line in enumerate(lines) if line.startswith('    {"name": ')]
    if not field_lines:
        return
    last = field_lines[-1]
    lines[last] = lines[last].rstrip("\n") + ",\n"
    lines.insert(
        last + 1,
        '    {"name": "note", "label": "Note", "type": "text", "maxLength": 280}\n',
    )
    files["app.js"] = "".join(lines)


def _style(rng: Random, manifest: dict, files: dict) -> None:
    css = files["style.css"]
    css = re.sub(r"border-radius:8px", "border-radius:10px", css, count=1)
    css += "@media (prefers-color-scheme: dark){:root{--bg:#16181d;--fg:#e6e6e6;--card:#1f232a}}\n"
    files["style.css"] = css
    files["index.html"] = files["index.html"].replace(
        '<div id="status" class="muted">', '<div id="status" class="muted" aria-live="polite">', 1
    )


def _copy(rng: Random, manifest: dict, files: dict) -> None:
    manifest["description"] = manifest.get("description", "").rstrip(".") + ". Works offline."
    files["app.js"] = re.sub(
        r'^    "empty": ".*",$',
        '    "empty": "No entries yet: add your first one above.",',
        files["app.js"],
        count=1,
        flags=re.M,
    )


EDITS = {
    "bugfix": _bugfix,
    "new-file": _new_file,
    "scope": _scope,
    "schema-field": _schema_field,
    "style": _style,
    "copy": _copy,
}


def new_version(rng: Random, base: Snapshot) -> tuple[Snapshot, list[str]]:
    manifest, files = copy.deepcopy(base[0]), dict(base[1])
    kinds = rng.sample(sorted(EDITS), rng.choice((1, 1, 2)))
    for kind in kinds:
        EDITS[kind](rng, manifest, files)
    return (manifest, files), kinds


# --------------------------------------------------------------------------- oracle


def _file_type(path: str) -> str:
    return path.rsplit(".", 1)[-1] if "." in path else "(none)"


def _added_lines(before: list[str], after: list[str]) -> list[str]:
    added: list[str] = []
    for op, _, _, j1, j2 in difflib.SequenceMatcher(None, before, after).get_opcodes():
        if op in ("insert", "replace"):
            added.extend(after[j1:j2])
    return added


def _touched_ranges(before: list[str], after: list[str]) -> list[tuple[int, int]]:
    return [
        (i1, i2)
        for op, i1, i2, _, _ in difflib.SequenceMatcher(None, before, after).get_opcodes()
        if op != "equal"
    ]


def _is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(line == h for h in it) for line in needles)


def _clean_text_is_wrong(base: str, upstream: str, fork: str, merged: str) -> bool:
    b, u, f, m = (split_lines(t) for t in (base, upstream, fork, merged))
    if not all(_is_subsequence(_added_lines(b, side), m) for side in (u, f)):
        return True
    counts = {name: Counter(lines) for name, lines in (("b", b), ("u", u), ("f", f), ("m", m))}
    for side, other in (("u", "f"), ("f", "u")):
        for line, n in counts["b"].items():
            removed = n - counts[side][line]
            if removed > 0:
                others_added = max(counts[other][line] - n, 0)
                if counts["m"][line] > n - removed + others_added:
                    return True
    return False


def _needless(base: str, upstream: str, fork: str) -> bool:
    b = split_lines(base)
    ranges_u = _touched_ranges(b, split_lines(upstream))
    ranges_f = _touched_ranges(b, split_lines(fork))
    return all(max(f1 - u2, u1 - f2) >= NEEDLESS_GAP for u1, u2 in ranges_u for f1, f2 in ranges_f)


def _manifest_is_wrong(base: dict, upstream: dict, fork: dict, result) -> bool:
    merged = result.manifest
    conflicted = {c.key for c in result.manifest_conflicts}
    for key in ("scopes", "hosts"):
        b, u, f = (set(m.get(key, ())) for m in (base, upstream, fork))
        if set(merged.get(key, ())) != (f - (b - u)) | (u - b):
            return True
    for key in ("name", "entry", "description"):
        b, u, f = (m.get(key, ABSENT) for m in (base, upstream, fork))
        if key not in conflicted and merged.get(key, ABSENT) != (u if f == b else f):
            return True
    props = [m.get("data_schema", {}).get("properties", {}) for m in (base, upstream, fork)]
    merged_props = merged.get("data_schema", {}).get("properties", {})
    for prop in set().union(*props):
        b, u, f = (p.get(prop, ABSENT) for p in props)
        if f"data_schema.properties.{prop}" in conflicted:
            continue
        if merged_props.get(prop, ABSENT) != (u if f == b else f):
            return True
    return False


# --------------------------------------------------------------------------- replay


def _is_valid_bundle(snapshot: Snapshot) -> bool:
    """Would publishing accept it (manifest, paths, texts, sizes)?"""
    try:
        build_bundle(snapshot[0], snapshot[1], source="merged bundle")
    except BundleError:
        return False
    return True


def _row() -> dict[str, int]:
    return dict.fromkeys(("files", "both", "clean", "conflict", "wrong", "needless"), 0)


def replay(seed: int, roots_limit: int | None) -> dict[str, Any]:
    community = generate_community(seed)
    by_key = {s.key: s for s in community.subagents}
    roots = [s for s in community.subagents if s.parent is None][:roots_limit]
    forks: dict[str, list] = defaultdict(list)
    for sub in community.subagents:
        if sub.parent is not None and by_key[sub.parent].parent is None:
            forks[sub.parent].append(sub)
    rng = Random(seed * 7919 + 1)
    by_type: dict[str, dict[str, int]] = defaultdict(_row)
    by_edit: dict[str, Counter] = defaultdict(Counter)
    conflicts: list[dict[str, Any]] = []
    merges = clean_merges = invalid_upstream = invalid_merged = 0
    for root in roots:
        last = root.versions[-1]
        base = (last.manifest, last.files)
        upstream, kinds = new_version(rng, base)
        invalid_upstream += not _is_valid_bundle(upstream)
        for fork_sub in forks[root.key]:
            version = fork_sub.versions[-1]
            fork = (version.manifest, version.files)
            result = merge_update(base, upstream, fork)
            merges += 1
            clean_merges += result.clean
            invalid_merged += result.clean and not _is_valid_bundle((result.manifest, result.files))
            places = {_file_type(path) for path in result.conflicted_paths} | {
                f"manifest:{c.key}" for c in result.manifest_conflicts
            }
            for kind in kinds:  # a two-edit version counts under both kinds
                by_edit[kind]["merges"] += 1
                by_edit[kind]["clean"] += result.clean
                by_edit[kind].update(f"conflict in {place}" for place in places)
            for merge in result.file_merges:
                _tally_file(by_type, merge, base[1], upstream[1], fork[1], conflicts, fork_sub)
            row = by_type["manifest"]
            row["files"] += 1
            both = base[0] not in (upstream[0], fork[0]) and upstream[0] != fork[0]
            row["both"] += both
            row["conflict"] += bool(result.manifest_conflicts)
            row["clean"] += both and not result.manifest_conflicts
            row["wrong"] += _manifest_is_wrong(base[0], upstream[0], fork[0], result)
            for conflict in result.manifest_conflicts:
                conflicts.append(
                    {
                        "fork": fork_sub.key,
                        "path": f"manifest:{conflict.key}",
                        "why": conflict.reason,
                        "fork_side": [str(conflict.fork)],
                        "upstream_side": [str(conflict.upstream)],
                    }
                )
    return {
        "merges": merges,
        "clean_merges": clean_merges,
        "invalid_upstream": invalid_upstream,
        "invalid_merged": invalid_merged,
        "by_type": dict(by_type),
        "by_edit": {k: dict(v) for k, v in by_edit.items()},
        "conflicts": conflicts,
    }


def _tally_file(by_type, merge, base_files, upstream_files, fork_files, conflicts, fork_sub):
    row = by_type[_file_type(merge.path)]
    row["files"] += 1
    base, upstream, fork = (
        files.get(merge.path, ABSENT) for files in (base_files, upstream_files, fork_files)
    )
    both = base not in (upstream, fork) and upstream != fork
    row["both"] += both
    if merge.status is FileStatus.CONFLICT:
        row["conflict"] += 1
        texts = (base, upstream, fork)
        needless = ABSENT not in texts and _needless(*texts)
        row["needless"] += needless
        region = merge.conflicts[0] if merge.conflicts else None
        conflicts.append(
            {
                "fork": fork_sub.key,
                "path": merge.path,
                "why": merge.reason,
                "needless": needless,
                "fork_side": list(region.fork) if region else [],
                "upstream_side": list(region.upstream) if region else [],
            }
        )
        return
    if both:
        row["clean"] += 1
        wrong = ABSENT in (base, upstream, fork) or _clean_text_is_wrong(
            base, upstream, fork, merge.text
        )
    else:
        expected = upstream if fork == base else fork
        wrong = merge.text != (None if expected is ABSENT else expected)
    row["wrong"] += wrong


def _merge_tables(runs: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {"merges": 0, "by_type": {}, "by_edit": {}}
    total.update(dict.fromkeys(("clean_merges", "invalid_upstream", "invalid_merged"), 0))
    for run in runs:
        total["merges"] += run["merges"]
        for key in ("clean_merges", "invalid_upstream", "invalid_merged"):
            total[key] += run[key]
        for table in ("by_type", "by_edit"):
            for key, row in run[table].items():
                into = total[table].setdefault(key, Counter())
                into.update(row)
    return total


def _excerpt(lines: list[str]) -> str:
    text = " / ".join(line.strip() for line in lines[:3])
    return text if len(text) <= 110 else text[:107] + "..."


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, the first 20 roots")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    seeds = [7] if args.quick else list(range(7, 7 + args.seeds))
    runs = [replay(seed, 20 if args.quick else None) for seed in seeds]
    total = _merge_tables(runs)

    print(
        f"seeds {seeds}; {total['merges']} merges, {total['clean_merges']} clean; "
        f"upstream versions that are not valid bundles: {total['invalid_upstream']}; "
        f"clean merges that are not: {total['invalid_merged']}\n"
    )
    header = ("type", "files", "both", "clean", "conflict", "wrong", "needless")
    print("{:<10}{:>7}{:>7}{:>7}{:>10}{:>7}{:>10}".format(*header))
    for kind, row in sorted(total["by_type"].items(), key=lambda kv: -kv[1]["files"]):
        print("{:<10}{:>7}{:>7}{:>7}{:>10}{:>7}{:>10}".format(kind, *(row[h] for h in header[1:])))
    print("\nper upstream edit (a version with two edits counts under both)")
    print("{:<14}{:>8}{:>8}  {}".format("edit", "merges", "clean", "merges conflicting in"))
    for kind, row in sorted(total["by_edit"].items()):
        where = ", ".join(
            f"{key.removeprefix('conflict in ')} {n}"
            for key, n in sorted(row.items(), key=lambda kv: -kv[1])
            if key.startswith("conflict in ")
        )
        print(f"{kind:<14}{row['merges']:>8}{row['clean']:>8}  {where}")
    reasons = Counter(
        (c["path"] if c["path"].startswith("manifest:") else _file_type(c["path"]), c["why"])
        for run in runs
        for c in run["conflicts"]
    )
    print("\nconflicts by place and reason")
    for (place, why), n in reasons.most_common():
        print(f"{n:>5}  {place:<28} {why}")
    print("\nexamples (first conflict of each place: fork side | upstream side)")
    shown: set[str] = set()
    for conflict in (c for run in runs for c in run["conflicts"]):
        place = conflict["path"]
        place = place if place.startswith("manifest:") else _file_type(place)
        if place in shown:
            continue
        shown.add(place)
        print(f"  {conflict['fork']} {conflict['path']}:")
        print(f"    fork:     {_excerpt(conflict['fork_side'])}")
        print(f"    upstream: {_excerpt(conflict['upstream_side'])}")
    print(f"\nelapsed {time.perf_counter() - started:.1f}s")
    result = {
        "seeds": seeds,
        "merges": total["merges"],
        "clean_merges": total["clean_merges"],
        "invalid_upstream": total["invalid_upstream"],
        "invalid_merged": total["invalid_merged"],
        "by_type": {k: dict(v) for k, v in total["by_type"].items()},
        "by_edit": {k: dict(v) for k, v in total["by_edit"].items()},
        "conflict_reasons": [
            {"place": place, "why": why, "count": n} for (place, why), n in reasons.most_common()
        ],
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
