"""evolution.merge: a parent's change merged onto a fork (files by diff3, manifest as data)."""

from __future__ import annotations

import copy
import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from evolution.merge import (
    ABSENT,
    FORK_MARKER,
    MIDDLE_MARKER,
    UPSTREAM_MARKER,
    FileStatus,
    merge_update,
    split_lines,
)

# Few distinct lines, so that edits collide with each other and with repeated lines.
LINES = ["a", "b", "c", "def f():", "  return 1", "}", "", "<p>x</p>"]
PATHS = ["index.html", "app.js", "style.css", "README.md"]
SCOPES = ["diet.read", "diet.write", "sleep.read", "mood.read", "photos.read"]
HOSTS = ["api.example.com", "cdn.example.org", "maps.example.net"]
PROPERTIES = ["day", "amount", "note", "unit"]
SCHEMAS = [{"type": "string"}, {"type": "number", "minimum": 0}, {"type": "integer"}]

texts = st.builds(
    lambda lines, final_newline: "\n".join(lines) + ("\n" if final_newline and lines else ""),
    st.lists(st.sampled_from(LINES), max_size=12),
    st.booleans(),
)


@st.composite
def edited_text(draw, text: str) -> str:
    """``text`` with a few lines replaced, inserted or deleted (maybe none)."""
    lines = split_lines(text)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(lines)))
        kind = draw(st.sampled_from(["insert", "replace", "delete"]))
        new = draw(st.sampled_from([*LINES, "fork", "upstream", "z"])) + "\n"
        if kind == "insert" or at == len(lines):
            lines.insert(at, new)
        elif kind == "replace":
            lines[at] = new
        else:
            del lines[at]
    if lines and draw(st.booleans()):
        lines[-1] = lines[-1].rstrip("\n")  # drop or keep the final newline
    return "".join(lines)


@st.composite
def manifests(draw) -> dict:
    props = draw(st.lists(st.sampled_from(PROPERTIES), unique=True, max_size=3))
    return {
        "name": draw(st.sampled_from(["Water", "Sleep", "Diet"])),
        "entry": "index.html",
        "scopes": sorted(draw(st.sets(st.sampled_from(SCOPES), max_size=3))),
        "hosts": sorted(draw(st.sets(st.sampled_from(HOSTS), max_size=2))),
        "data_schema": {
            "type": "object",
            "properties": {p: draw(st.sampled_from(SCHEMAS)) for p in props},
            "required": draw(st.lists(st.sampled_from(props), unique=True)) if props else [],
        },
        "description": draw(st.sampled_from(["Tracks.", "Logs."])),
    }


@st.composite
def edited_manifest(draw, manifest: dict) -> dict:
    out = copy.deepcopy(manifest)
    if draw(st.booleans()):
        out["name"] = draw(st.sampled_from(["Water", "Sleep", "Diet", "Renamed"]))
    for key, pool in (("scopes", SCOPES), ("hosts", HOSTS)):
        if draw(st.booleans()):
            kept = [x for x in out[key] if draw(st.booleans())]
            out[key] = sorted(set(kept) | draw(st.sets(st.sampled_from(pool), max_size=2)))
    schema = out["data_schema"]
    for prop in PROPERTIES:
        roll = draw(st.integers(0, 5))
        if roll == 0:
            schema["properties"].pop(prop, None)
        elif roll == 1:
            schema["properties"][prop] = draw(st.sampled_from(SCHEMAS))
    schema["required"] = [p for p in schema["required"] if p in schema["properties"]]
    return out


@st.composite
def snapshots(draw) -> dict:
    """A base with ``index.html`` plus other files; upstream and fork edited from it."""
    base_files = {"index.html": draw(texts)}
    base_files.update({p: draw(texts) for p in PATHS[1:] if draw(st.booleans())})
    base_manifest = draw(manifests())

    def side() -> tuple[dict, dict]:
        files = {}
        for path in PATHS:
            if path in base_files:
                if path == "index.html" or draw(st.integers(0, 5)):
                    files[path] = draw(edited_text(base_files[path]))
            elif not draw(st.integers(0, 3)):
                files[path] = draw(texts)
        return draw(edited_manifest(base_manifest)), files

    return {"base": (base_manifest, base_files), "upstream": side(), "fork": side()}


def _added_lines(before: str, after: str) -> list[str]:
    """Lines ``after`` has that ``before`` has not, in order, without their newlines."""
    old, new = split_lines(before), split_lines(after)
    added: list[str] = []
    for op, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if op in ("insert", "replace"):
            added.extend(line.rstrip("\n") for line in new[j1:j2])
    return added


def _is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(line == h for h in it) for line in needles)


# --------------------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None)
@given(snapshots())
def test_untouched_fork_merges_to_exactly_the_parents_new_version(snaps) -> None:
    result = merge_update(snaps["base"], snaps["upstream"], snaps["base"])
    assert result.clean
    assert result.manifest == snaps["upstream"][0]
    assert result.files == snaps["upstream"][1]


@settings(max_examples=150, deadline=None)
@given(snapshots())
def test_no_op_parent_change_leaves_the_fork_unchanged(snaps) -> None:
    result = merge_update(snaps["base"], snaps["base"], snaps["fork"])
    assert result.clean
    assert result.manifest == snaps["fork"][0]
    assert result.files == snaps["fork"][1]
    assert result.added_scopes == ()
    assert all(f.status in (FileStatus.UNCHANGED, FileStatus.KEPT_FORK) for f in result.file_merges)


@settings(max_examples=200, deadline=None)
@given(snapshots())
def test_a_fork_that_already_made_the_parents_change_stays_as_it_is(snaps) -> None:
    result = merge_update(snaps["base"], snaps["upstream"], snaps["upstream"])
    assert result.clean
    assert result.manifest == snaps["upstream"][0]
    assert result.files == snaps["upstream"][1]


@settings(max_examples=200, deadline=None)
@given(snapshots())
def test_merged_text_never_loses_either_sides_lines(snaps) -> None:
    base_files, upstream_files, fork_files = (snaps[k][1] for k in ("base", "upstream", "fork"))
    result = merge_update(snaps["base"], snaps["upstream"], snaps["fork"])
    for merge in result.file_merges:
        path = merge.path
        if path not in upstream_files or path not in fork_files:
            continue
        merged = [line.rstrip("\n") for line in split_lines(merge.text)]
        base_text = base_files.get(path, "")
        for side in (fork_files[path], upstream_files[path]):
            assert _is_subsequence(_added_lines(base_text, side), merged), merge
        for region in merge.conflicts:
            block = [
                FORK_MARKER,
                *(line.rstrip("\n") for line in region.fork),
                MIDDLE_MARKER,
                *(line.rstrip("\n") for line in region.upstream),
                UPSTREAM_MARKER,
            ]
            assert any(merged[i : i + len(block)] == block for i in range(len(merged))), merge
        assert (merge.status is FileStatus.CONFLICT) == bool(merge.conflicts)


@settings(max_examples=150, deadline=None)
@given(snapshots())
def test_every_path_gets_one_status_and_a_deleted_file_is_only_gone_when_nobody_edited_it(
    snaps,
) -> None:
    base_files, upstream_files, fork_files = (snaps[k][1] for k in ("base", "upstream", "fork"))
    result = merge_update(snaps["base"], snaps["upstream"], snaps["fork"])
    assert [f.path for f in result.file_merges] == sorted(
        set(base_files) | set(upstream_files) | set(fork_files)
    )
    for merge in result.file_merges:
        base = base_files.get(merge.path, ABSENT)
        gone = merge.path not in result.files
        edited = {fork_files.get(merge.path, ABSENT), upstream_files.get(merge.path, ABSENT)}
        edited -= {base, ABSENT}
        assert not (gone and edited), merge
    assert result.clean == (
        not result.manifest_conflicts
        and all(f.status is not FileStatus.CONFLICT for f in result.file_merges)
    )


@settings(max_examples=200, deadline=None)
@given(snapshots())
def test_scopes_and_hosts_merge_as_sets_without_conflicts(snaps) -> None:
    (base, _), (upstream, _), (fork, _) = snaps["base"], snaps["upstream"], snaps["fork"]
    result = merge_update(snaps["base"], snaps["upstream"], snaps["fork"])
    for key in ("scopes", "hosts"):
        b, u, f = set(base[key]), set(upstream[key]), set(fork[key])
        assert set(result.manifest[key]) == (f - (b - u)) | (u - b)
        assert not any(c.key == key for c in result.manifest_conflicts)
    assert set(result.added_scopes) == set(result.manifest["scopes"]) - set(fork["scopes"])


@settings(max_examples=200, deadline=None)
@given(snapshots())
def test_data_schema_merges_per_property(snaps) -> None:
    (base, _), (upstream, _), (fork, _) = snaps["base"], snaps["upstream"], snaps["fork"]
    result = merge_update(snaps["base"], snaps["upstream"], snaps["fork"])
    conflicted = {c.key for c in result.manifest_conflicts}
    merged = result.manifest["data_schema"]["properties"]
    for prop in PROPERTIES:
        b, u, f = (m["data_schema"]["properties"].get(prop, ABSENT) for m in (base, upstream, fork))
        key = f"data_schema.properties.{prop}"
        both_changed = b != u and b != f and u != f
        assert (key in conflicted) == both_changed
        expected = u if f == b else f  # a conflict keeps the fork's value
        assert merged.get(prop, ABSENT) == expected


# --------------------------------------------------------------------------- hand-written

BASE_MANIFEST = {
    "name": "Water Tracker",
    "entry": "index.html",
    "scopes": ["hydration.read", "hydration.write"],
    "hosts": [],
    "data_schema": {
        "type": "object",
        "properties": {"day": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["day"],
    },
    "description": "Tap a glass.",
}
APP = "".join(f"line {i}\n" for i in range(1, 21))


def _with(manifest: dict | None = None, **files: str | None) -> tuple[dict, dict]:
    merged = {"index.html": "<h1>Water</h1>\n", "app.js": APP}
    for name, text in files.items():
        path = name.replace("_", ".")
        if text is None:
            merged.pop(path, None)
        else:
            merged[path] = text
    return (manifest or copy.deepcopy(BASE_MANIFEST)), merged


def _merge_of(result, path: str):
    return next(f for f in result.file_merges if f.path == path)


def test_edits_far_apart_merge_cleanly_with_both_applied() -> None:
    upstream = APP.replace("line 3\n", "line 3 fixed\n")
    fork = APP.replace("line 15\n", "line 15 forked\n")
    result = merge_update(_with(), _with(app_js=upstream), _with(app_js=fork))
    assert result.clean
    assert result.files["app.js"] == APP.replace("line 3\n", "line 3 fixed\n").replace(
        "line 15\n", "line 15 forked\n"
    )
    assert _merge_of(result, "app.js").status is FileStatus.MERGED_CLEAN
    assert _merge_of(result, "index.html").status is FileStatus.UNCHANGED


def test_same_line_changed_differently_conflicts_with_named_sides() -> None:
    upstream = APP.replace("line 5\n", "line 5 upstream\n")
    fork = APP.replace("line 5\n", "line 5 fork\n")
    result = merge_update(_with(), _with(app_js=upstream), _with(app_js=fork))
    assert not result.clean
    merge = _merge_of(result, "app.js")
    assert merge.status is FileStatus.CONFLICT
    assert merge.reason == "both changed the same or adjacent lines"
    assert merge.text == APP.replace(
        "line 5\n",
        "<<<<<<< fork\nline 5 fork\n=======\nline 5 upstream\n>>>>>>> upstream\n",
    )
    assert merge.conflicts[0].base == ("line 5\n",)


def test_adjacent_lines_conflict_as_in_diff3() -> None:
    upstream = APP.replace("line 5\n", "line 5 upstream\n")
    fork = APP.replace("line 6\n", "line 6 fork\n")
    result = merge_update(_with(), _with(app_js=upstream), _with(app_js=fork))
    assert _merge_of(result, "app.js").status is FileStatus.CONFLICT


def test_lines_both_sides_wrote_alike_stay_outside_the_markers() -> None:
    base = "fields = [\n  a\n]\n"
    upstream = "fields = [\n  a,\n  note\n]\n"
    fork = "fields = [\n  a,\n  unit\n]\n"
    result = merge_update(_with(app_js=base), _with(app_js=upstream), _with(app_js=fork))
    merge = _merge_of(result, "app.js")
    assert merge.text == (
        "fields = [\n  a,\n<<<<<<< fork\n  unit\n=======\n  note\n>>>>>>> upstream\n]\n"
    )
    assert merge.conflicts[0].base == ("  a\n",)
    assert (merge.conflicts[0].fork, merge.conflicts[0].upstream) == (("  unit\n",), ("  note\n",))


def test_missing_final_newline_is_neither_gained_nor_lost() -> None:
    base = "one\ntwo\nthree\nfour\nfive"
    upstream = "ONE\ntwo\nthree\nfour\nfive"
    fork = "one\ntwo\nthree\nfour\nFIVE"
    result = merge_update(_with(app_js=base), _with(app_js=upstream), _with(app_js=fork))
    assert result.files["app.js"] == "ONE\ntwo\nthree\nfour\nFIVE"
    with_newline = merge_update(
        _with(app_js=base + "\n"), _with(app_js=upstream + "\n"), _with(app_js=base + "\n")
    )
    assert with_newline.files["app.js"] == upstream + "\n"


def test_a_conflict_at_a_last_line_without_newline_keeps_markers_on_their_own_lines() -> None:
    result = merge_update(_with(app_js="a\nb"), _with(app_js="a\nup"), _with(app_js="a\nfork"))
    assert result.files["app.js"] == "a\n<<<<<<< fork\nfork\n=======\nup\n>>>>>>> upstream\n"


def test_files_added_and_deleted_on_each_side() -> None:
    readme = "# Water\n"
    cases = [
        # (upstream files, fork files, path, status, merged text)
        ({"README_md": readme}, {}, "README.md", FileStatus.TAKEN_FROM_UPSTREAM, readme),
        ({}, {"README_md": readme}, "README.md", FileStatus.KEPT_FORK, readme),
        ({"README_md": readme}, {"README_md": readme}, "README.md", FileStatus.UNCHANGED, readme),
        ({"app_js": None}, {}, "app.js", FileStatus.TAKEN_FROM_UPSTREAM, None),
        ({}, {"app_js": None}, "app.js", FileStatus.KEPT_FORK, None),
        ({"app_js": None}, {"app_js": None}, "app.js", FileStatus.UNCHANGED, None),
        ({"app_js": None}, {"app_js": APP + "x\n"}, "app.js", FileStatus.CONFLICT, APP + "x\n"),
        ({"app_js": APP + "x\n"}, {"app_js": None}, "app.js", FileStatus.CONFLICT, APP + "x\n"),
    ]
    for upstream_files, fork_files, path, status, text in cases:
        result = merge_update(_with(), _with(**upstream_files), _with(**fork_files))
        merge = _merge_of(result, path)
        assert (merge.status, merge.text, result.files.get(path)) == (status, text, text), (
            upstream_files,
            fork_files,
        )
        assert result.clean == (status is not FileStatus.CONFLICT)


def test_both_adding_one_path_differently_conflicts_with_both_texts() -> None:
    result = merge_update(_with(), _with(README_md="# Up\n"), _with(README_md="# Fork\n"))
    merge = _merge_of(result, "README.md")
    assert merge.status is FileStatus.CONFLICT
    assert merge.reason == "both added the file, differently"
    assert merge.text == "<<<<<<< fork\n# Fork\n=======\n# Up\n>>>>>>> upstream\n"


def test_manifest_scopes_hosts_and_names() -> None:
    upstream = copy.deepcopy(BASE_MANIFEST)
    upstream["scopes"] = ["hydration.read", "hydration.write", "health.read"]
    upstream["hosts"] = ["api.weather.example.com"]
    upstream["description"] = "Tap a glass, see the week."
    fork = copy.deepcopy(BASE_MANIFEST)
    fork["scopes"] = ["hydration.read"]  # the fork stopped writing
    fork["name"] = "Water Tracker — oz"
    result = merge_update(_with(), _with(upstream), _with(fork))
    assert result.clean
    assert result.manifest["scopes"] == ["hydration.read", "health.read"]
    assert result.manifest["hosts"] == ["api.weather.example.com"]
    assert result.manifest["name"] == "Water Tracker — oz"
    assert result.manifest["description"] == "Tap a glass, see the week."
    assert result.added_scopes == ("health.read",)


def test_scalar_changed_differently_is_a_manifest_conflict_keeping_the_forks_value() -> None:
    upstream = copy.deepcopy(BASE_MANIFEST)
    upstream["name"] = "Water Tracker Pro"
    fork = copy.deepcopy(BASE_MANIFEST)
    fork["name"] = "Water Tracker — oz"
    result = merge_update(_with(), _with(upstream), _with(fork))
    assert not result.clean
    assert [(c.key, c.base, c.fork, c.upstream) for c in result.manifest_conflicts] == [
        ("name", "Water Tracker", "Water Tracker — oz", "Water Tracker Pro")
    ]
    assert result.manifest["name"] == "Water Tracker — oz"
    assert all(f.status is not FileStatus.CONFLICT for f in result.file_merges)


def test_data_schema_property_conflict_is_reported_as_data_not_text() -> None:
    upstream = copy.deepcopy(BASE_MANIFEST)
    upstream["data_schema"]["properties"]["amount"] = {"type": "number", "minimum": 0}
    upstream["data_schema"]["properties"]["note"] = {"type": "string"}
    upstream["data_schema"]["required"] = ["day", "amount"]
    fork = copy.deepcopy(BASE_MANIFEST)
    fork["data_schema"]["properties"]["amount"] = {"type": "integer"}
    fork["data_schema"]["properties"]["unit"] = {"enum": ["ml", "oz"]}
    result = merge_update(_with(), _with(upstream), _with(fork))
    assert [c.key for c in result.manifest_conflicts] == ["data_schema.properties.amount"]
    conflict = result.manifest_conflicts[0]
    assert conflict.fork == {"type": "integer"}
    assert conflict.upstream == {"type": "number", "minimum": 0}
    schema = result.manifest["data_schema"]
    assert schema["properties"] == {
        "day": {"type": "string"},
        "amount": {"type": "integer"},
        "unit": {"enum": ["ml", "oz"]},
        "note": {"type": "string"},
    }
    assert schema["required"] == ["day", "amount"]


def test_schema_property_removed_by_one_side_and_untouched_by_the_other_is_removed() -> None:
    upstream = copy.deepcopy(BASE_MANIFEST)
    del upstream["data_schema"]["properties"]["amount"]
    fork = copy.deepcopy(BASE_MANIFEST)
    fork["data_schema"]["properties"]["unit"] = {"type": "string"}
    result = merge_update(_with(), _with(upstream), _with(fork))
    assert result.clean
    assert set(result.manifest["data_schema"]["properties"]) == {"day", "unit"}


def test_an_entry_the_merged_files_lack_is_a_manifest_conflict() -> None:
    upstream = copy.deepcopy(BASE_MANIFEST)
    upstream["entry"] = "app.js"
    moved = merge_update(_with(), _with(upstream), _with(index_html=None))
    assert moved.clean
    assert moved.manifest["entry"] == "app.js"
    assert "index.html" not in moved.files
    lost = merge_update(_with(), _with(upstream), _with(app_js=None))
    assert [c.key for c in lost.manifest_conflicts] == ["entry"]
    assert lost.manifest_conflicts[0].reason == "the merged files have no file at the merged entry"
    assert not lost.clean
