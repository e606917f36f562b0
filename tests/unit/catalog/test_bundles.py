"""Unit tests for market.catalog.bundles: parsing, caps, hashing, scans and diffs."""

from __future__ import annotations

import ast
import difflib
import hashlib
import io
import json
import random
import stat
import string
import struct
import time
import tracemalloc
import unicodedata
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from market.catalog import bundles
from market.catalog.bundles import (
    MAX_BUNDLE_BYTES,
    MAX_DIFF_BYTES,
    MAX_ERRORS,
    MAX_FILES,
    MAX_ZIP_ENTRIES,
    SCOPE_DESCRIPTIONS,
    SCOPES,
    Bundle,
    BundleError,
    Finding,
    bundle_from_canonical,
    bundle_from_json,
    bundle_from_zip,
    bundle_to_zip,
    canonical_bytes,
    check_publishable,
    diff_bundles,
    find_personal_values,
    find_secrets,
)

# --------------------------------------------------------------------------- helpers

BASE_MANIFEST = {"name": "Water buddy", "entry": "index.html"}
BASE_FILES = {"index.html": "<!doctype html>\n<script src='js/app.js'></script>\n"}


def body(files: dict | None = None, **manifest) -> dict:
    return {"manifest": {**BASE_MANIFEST, **manifest}, "files": dict(files or BASE_FILES)}


def make(files: dict | None = None, **manifest) -> Bundle:
    return bundle_from_json(body(files, **manifest))


def rejects(fn, *args, code: str, status: int = 422, **kwargs) -> BundleError:
    with pytest.raises(BundleError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert (err.code, err.status) == (code, status), err.errors
    assert err.detail and err.errors
    assert all({"location", "message", "code"} <= e.keys() for e in err.errors)
    return err


def zip_bytes(
    entries: list[tuple[str | zipfile.ZipInfo, bytes | str]],
    compression: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # duplicate names are deliberate
        with zipfile.ZipFile(buf, "w", compression) as zf:
            for name, data in entries:
                zf.writestr(name, data)
    return buf.getvalue()


def manifest_entry(**manifest) -> tuple[str, str]:
    return ("manifest.json", json.dumps({**BASE_MANIFEST, **manifest}))


def valid_zip(*extra: tuple[str | zipfile.ZipInfo, bytes | str], **manifest) -> bytes:
    return zip_bytes([manifest_entry(**manifest), *BASE_FILES.items(), *extra])


def central_records(data: bytes):
    """Yield (offset, name) for every central-directory record."""
    pos = data.find(b"PK\x01\x02")
    while pos != -1 and data[pos : pos + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, pos + 28)
        yield pos, data[pos + 46 : pos + 46 + name_len].decode("utf-8", "replace")
        pos += 46 + name_len + extra_len + comment_len


def patch_declared_size(data: bytes, name: str, size: int) -> bytes:
    """Rewrite the uncompressed size a zip claims for ``name`` (local and central)."""
    out = bytearray(data)
    for pos, rec_name in central_records(data):
        if rec_name == name:
            struct.pack_into("<I", out, pos + 24, size)
            local = struct.unpack_from("<I", data, pos + 42)[0]
            struct.pack_into("<I", out, local + 22, size)
            return bytes(out)
    raise AssertionError(f"{name} not in zip")


def wordy_text(n_bytes: int, seed: int = 0) -> str:
    """Text that deflates only ~5-8x, like real code."""
    rnd = random.Random(seed)
    vocab = ["const", "water", "glass", "total", "return", "items", "sleep", "=", ";", "(", ")"]
    out, size = [], 0
    while size < n_bytes:
        line = " ".join(rnd.choice(vocab) for _ in range(10)) + f" {rnd.randrange(10**9)}\n"
        out.append(line)
        size += len(line)
    return "".join(out)


def measure(fn, *args):
    """Run fn, returning (exception or result, seconds, peak traced bytes)."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = fn(*args)
    except BundleError as exc:
        result = exc
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, elapsed, peak


# --------------------------------------------------------------------------- vocabulary


def test_scope_vocabulary_and_descriptions():
    assert len(SCOPES) == 22 * 2
    assert {"diet.read", "health.injuries.write", "music.read"} <= SCOPES
    assert set(SCOPE_DESCRIPTIONS) == SCOPES
    assert SCOPE_DESCRIPTIONS["diet.read"] == "reads your diet log"
    assert SCOPE_DESCRIPTIONS["diet.write"].startswith("adds to and changes")


def test_module_is_pure():
    tree = ast.parse(Path(bundles.__file__).read_text())
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not imported & {"flask", "apiflask", "sqlmodel", "sqlalchemy", "market"}


# --------------------------------------------------------------------------- happy path


def test_json_bundle_is_normalized_and_hashed():
    b = make(
        {"js/app.js": "let x = 1;\n", **BASE_FILES},
        name="  Water buddy ",
        scopes=["hydration.write", "hydration.read", "hydration.read"],
        hosts=["API.Example.com", "cdn.example.org", "api.example.com"],
        description="Tracks glasses of water.",
        data_schema={"type": "object", "properties": {"ml": {"type": "integer"}}},
    )
    assert list(b.files) == ["index.html", "js/app.js"]
    assert b.manifest == {
        "name": "Water buddy",
        "entry": "index.html",
        "scopes": ["hydration.read", "hydration.write"],
        "hosts": ["api.example.com", "cdn.example.org"],
        "description": "Tracks glasses of water.",
        "data_schema": {"type": "object", "properties": {"ml": {"type": "integer"}}},
    }
    data = b.canonical_bytes()
    assert (
        data
        == json.dumps(
            {"files": b.files, "manifest": b.manifest},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
    )
    assert data == canonical_bytes(b.manifest, b.files)
    assert b.sha256 == hashlib.sha256(data).hexdigest()
    assert b.size == len(data)
    assert "<!doctype" not in repr(b)  # repr must not dump file contents
    assert hash(b) == hash(bundle_from_canonical(data))


def test_defaults_and_null_optionals():
    b = make(scopes=None, hosts=None, description=None, data_schema=None)
    assert b.manifest == {**BASE_MANIFEST, "scopes": [], "hosts": []}


def test_hash_stable_under_key_order():
    files = {"index.html": "x", "b.js": "b", "a/c.css": "c"}
    manifest = {"name": "N", "entry": "index.html", "scopes": ["diet.read", "sleep.read"]}
    reordered = {
        "files": dict(reversed(list(files.items()))),
        "manifest": dict(
            reversed(list({**manifest, "scopes": ["sleep.read", "diet.read"]}.items()))
        ),
    }
    assert bundle_from_json({"manifest": manifest, "files": files}).sha256 == (
        bundle_from_json(reordered).sha256
    )


def test_non_ascii_text_is_hashed_as_utf8():
    b = make({"index.html": "café ☕ 日本\n"})
    assert "café ☕ 日本".encode() in b.canonical_bytes()


def test_json_and_zip_with_same_content_hash_the_same():
    files = {"index.html": "<p>hi</p>\n", "js/app.js": "console.log('ü');\n"}
    manifest = {"name": "Same", "entry": "index.html", "scopes": ["mood.read"], "hosts": []}
    from_json = bundle_from_json({"manifest": manifest, "files": files})
    pretty = json.dumps(
        {"hosts": [], "scopes": ["mood.read"], "entry": "index.html", "name": "Same"}, indent=4
    )
    raw = zip_bytes(
        [
            ("js/", b""),  # directory entries are skipped
            ("js/app.js", files["js/app.js"]),
            ("manifest.json", "\ufeff" + pretty),  # a BOM in manifest.json is tolerated
            ("index.html", files["index.html"]),
            ("__MACOSX/._index.html", b"\x00\x05\x16\x07binary"),  # Finder junk is skipped
        ]
    )
    from_zip = bundle_from_zip(raw)
    assert from_zip.files == from_json.files
    assert from_zip.sha256 == from_json.sha256
    assert from_zip.canonical_bytes() == from_json.canonical_bytes()
    assert bundle_from_zip(io.BytesIO(raw)).sha256 == from_json.sha256  # file objects too


def test_stored_zip_members_are_read():
    raw = zip_bytes([manifest_entry(), *BASE_FILES.items()], compression=zipfile.ZIP_STORED)
    assert bundle_from_zip(raw).files == BASE_FILES


def test_utf8_names_without_the_utf8_flag_are_recovered():
    raw = bytearray(valid_zip(("café.js", "x")))
    for pos, name in list(central_records(bytes(raw))):
        if name == "café.js":
            flags = struct.unpack_from("<H", raw, pos + 8)[0]
            struct.pack_into("<H", raw, pos + 8, flags & ~0x800)
    assert "café.js" in bundle_from_zip(bytes(raw)).files


def test_bundle_to_zip_round_trips_and_is_deterministic():
    b = make({"js/app.js": "x\n", "ünï/cödé.js": "y", **BASE_FILES}, scopes=["diet.read"])
    raw = bundle_to_zip(b)
    assert raw == bundle_to_zip(b)
    assert bundle_from_zip(raw) == b


@pytest.mark.parametrize(
    "text",
    [
        " " * 300_000,
        " " * 1_000_000 + wordy_text(900_000),  # ~8x overall, bomb-like at the start
    ],
)
def test_bundle_to_zip_output_never_trips_the_ratio_guard(text):
    b = make({"pad.txt": text, **BASE_FILES})
    raw = bundle_to_zip(b)
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        assert zf.getinfo("pad.txt").compress_type == zipfile.ZIP_STORED
        assert zf.getinfo("index.html").compress_type == zipfile.ZIP_DEFLATED
    assert bundle_from_zip(raw).sha256 == b.sha256


def test_bundle_from_canonical_round_trips():
    b = make(scopes=["diet.read"])
    assert bundle_from_canonical(b.canonical_bytes()) == b
    rejects(bundle_from_canonical, b"{nope", code="bad_bundle")


# --------------------------------------------------------------------------- size caps


def test_rejects_files_over_total_cap():
    err = rejects(
        make, {"big.txt": "a" * MAX_BUNDLE_BYTES, **BASE_FILES}, code="too_large", status=413
    )
    assert str(MAX_BUNDLE_BYTES) in err.detail


def test_manifest_counts_toward_total_cap():
    schema = {"description": "d" * 30_000}
    room = MAX_BUNDLE_BYTES - 20_000 - sum(len(p) + len(t) for p, t in BASE_FILES.items())
    files = {"big.txt": "a" * room, **BASE_FILES}
    make(files)  # fits without the schema
    with pytest.raises(BundleError) as info:
        make(files, data_schema=schema)
    assert (info.value.code, info.value.status) == ("too_large", 413)


def test_bundle_exactly_at_the_cap_is_accepted_in_both_formats():
    # The cap counts raw UTF-8 of paths, texts and the canonical manifest; Bundle.size
    # (the canonical JSON) is a little larger because of quoting and escapes.
    schema = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(400)}}
    files = {"big.txt": "", **BASE_FILES}
    manifest = make(files, data_schema=schema).manifest
    used = sum(len(p.encode()) + len(t.encode()) for p, t in files.items())
    room = MAX_BUNDLE_BYTES - used - len(canonical_bytes(manifest, {}))
    files["big.txt"] = wordy_text(room + 100).replace("\n", " ")[:room]
    b = make(files, data_schema=schema)
    assert MAX_BUNDLE_BYTES < b.size < MAX_BUNDLE_BYTES + 100
    assert bundle_from_zip(bundle_to_zip(b)).sha256 == b.sha256
    files["big.txt"] += "x"
    rejects(make, files, code="too_large", status=413, data_schema=schema)


def test_rejects_oversized_manifest_json_in_zip():
    padded = json.dumps(BASE_MANIFEST)[:-1] + " " * 300_000 + "}"
    raw = zip_bytes([("manifest.json", padded), *BASE_FILES.items()], zipfile.ZIP_STORED)
    err = rejects(bundle_from_zip, raw, code="too_large", status=413)
    assert err.errors[0]["location"] == "manifest.json"


def test_rejects_too_many_files():
    files = {f"f{i}.js": "" for i in range(MAX_FILES)} | BASE_FILES
    assert len(files) == MAX_FILES + 1
    rejects(make, files, code="too_many_files", status=413)
    make({f"f{i}.js": "" for i in range(MAX_FILES - 1)} | BASE_FILES)  # at the cap is fine


def test_rejects_raw_zip_over_cap():
    blob = random.Random(1).randbytes(MAX_BUNDLE_BYTES + 1)
    rejects(bundle_from_zip, blob, code="too_large", status=413)
    rejects(bundle_from_zip, io.BytesIO(blob), code="too_large", status=413)


def test_rejects_too_many_zip_entries_before_reading():
    entries = [(f"d{i}/", b"") for i in range(MAX_ZIP_ENTRIES)]
    err = rejects(bundle_from_zip, valid_zip(*entries), code="too_many_files", status=413)
    assert "entries" in err.detail


def test_rejects_too_many_files_in_zip():
    rejects(
        bundle_from_zip,
        valid_zip(*[(f"f{i}.js", "") for i in range(MAX_FILES)]),
        code="too_many_files",
        status=413,
    )


def test_zip_bomb_is_rejected_quickly_without_inflating_it():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(*manifest_entry())
        zf.writestr(*next(iter(BASE_FILES.items())))
        zeros = bytes(1024 * 1024)
        with zf.open("bomb.txt", "w") as member:
            for _ in range(50):  # 50 MB of zeros, written in pieces to keep the test small
                member.write(zeros)
    raw = buf.getvalue()
    assert len(raw) < 200_000
    err, elapsed, peak = measure(bundle_from_zip, raw)
    assert isinstance(err, BundleError)
    assert (err.code, err.status) == ("zip_bomb", 413)
    assert err.errors[0]["location"] == "files/bomb.txt"
    assert elapsed < 1.0
    assert peak < 10 * 1024 * 1024


def test_understated_declared_size_does_not_bypass_the_streaming_cap():
    text = wordy_text(3 * 1024 * 1024)
    raw = patch_declared_size(valid_zip(("big.txt", text)), "big.txt", 1000)
    del text
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        assert zf.getinfo("big.txt").file_size == 1000  # the header lies
    err, elapsed, peak = measure(bundle_from_zip, raw)
    assert isinstance(err, BundleError)
    assert (err.code, err.status) == ("too_large", 413)
    assert elapsed < 2.0
    assert peak < 10 * 1024 * 1024


def test_streaming_cap_spans_members():
    parts = [(f"part{i}.txt", wordy_text(800_000, seed=i)) for i in range(3)]
    rejects(bundle_from_zip, valid_zip(*parts), code="too_large", status=413)


def test_declared_size_mismatch_is_bad_zip():
    raw = patch_declared_size(valid_zip(("a.js", "small\n")), "a.js", 10**6)
    err = rejects(bundle_from_zip, raw, code="bad_zip")
    assert "declares" in err.detail


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/etc/passwd", "absolute_path"),
        ("C:/win.js", "absolute_path"),
        ("c:evil.js", "absolute_path"),
        ("\\\\server\\share.js", "absolute_path"),
        ("../up.js", "path_traversal"),
        ("a/../../up.js", "path_traversal"),
        ("a/..", "path_traversal"),
        ("js\\app.js", "bad_path"),
        ("a//b.js", "bad_path"),
        ("dir/", "bad_path"),
        ("./a.js", "bad_path"),
        ("", "bad_path"),
        ("a\x00.js", "bad_path"),
        ("a\nb.js", "bad_path"),
        ("evil\u202egpj.js", "bad_path"),
        ("x" * 201, "bad_path"),
        ("manifest.json", "reserved_path"),
        ("Manifest.JSON", "reserved_path"),
        ("__MACOSX/x.js", "reserved_path"),
        ("a\ud800.js", "not_utf8"),
    ],
)
def test_rejects_bad_paths_in_json(path, code):
    err = rejects(make, {path: "x", **BASE_FILES}, code=code)
    assert err.errors[0]["location"].startswith("files/")
    assert "\x00" not in err.detail and "\n" not in err.errors[0]["location"]


def test_path_at_length_cap_is_fine():
    make({"x" * 200: "", **BASE_FILES})


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("../evil.js", "path_traversal"),
        ("/abs.js", "absolute_path"),
        ("js\\app.js", "bad_path"),
    ],
)
def test_rejects_bad_paths_in_zip(name, code):
    rejects(bundle_from_zip, valid_zip((name, "x")), code=code)


def test_rejects_nul_in_zip_name():
    # zipfile's writer and ZipInfo.filename both cut a name at NUL, so a crafted
    # "a\0b.js" would otherwise be read as "a".
    raw = valid_zip(("aQb.js", "x")).replace(b"aQb.js", b"a\x00b.js")
    err = rejects(bundle_from_zip, raw, code="bad_path")
    assert "NUL" in err.detail


@pytest.mark.parametrize(
    "files",
    [
        {"App.js": "1", "app.js": "2"},
        {"caf\u00e9.js": "1", "cafe\u0301.js": "2"},  # NFC vs NFD
        {"lib": "1", "lib/x.js": "2"},  # a file used as a directory
    ],
)
def test_rejects_colliding_paths_in_json(files):
    rejects(make, {**files, **BASE_FILES}, code="duplicate_path")


def test_rejects_duplicate_names_in_zip():
    rejects(bundle_from_zip, valid_zip(("a.js", "1"), ("a.js", "2")), code="duplicate_path")


def test_rejects_symlink_in_zip():
    link = zipfile.ZipInfo("link.js")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    err = rejects(bundle_from_zip, valid_zip((link, "/etc/passwd")), code="symlink")
    assert err.errors[0]["location"] == "files/link.js"


def test_rejects_non_utf8_file_in_zip():
    err = rejects(bundle_from_zip, valid_zip(("img.png", b"ok\n\x89PNG\r\n")), code="not_utf8")
    assert err.errors[0]["location"] == "files/img.png:2"


def test_rejects_nul_and_surrogates_in_json_text():
    err = rejects(make, {"a.js": "ok\n\x00", **BASE_FILES}, code="binary_content")
    assert err.errors[0]["location"] == "files/a.js:2"
    rejects(make, {"a.js": "bad \udc80", **BASE_FILES}, code="not_utf8")
    rejects(bundle_from_zip, valid_zip(("a.js", b"a\x00b")), code="binary_content")


# --------------------------------------------------------------------------- zip structure


def test_rejects_non_zip_and_truncated_zip():
    rejects(bundle_from_zip, b"this is not a zip", code="bad_zip")
    raw = valid_zip()
    rejects(bundle_from_zip, raw[: len(raw) // 2], code="bad_zip")


def test_rejects_corrupt_member_data():
    raw = bytearray(valid_zip(("a.js", "hello world, hello world\n")))
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as zf:
        info = zf.getinfo("a.js")
    data_at = info.header_offset + 30 + len("a.js")
    raw[data_at + 2] ^= 0xFF
    rejects(bundle_from_zip, bytes(raw), code="bad_zip")


def test_rejects_unsupported_compression_and_encryption():
    bz = zipfile.ZipInfo("a.js")
    bz.compress_type = zipfile.ZIP_BZIP2
    rejects(bundle_from_zip, valid_zip((bz, "x")), code="bad_zip")
    raw = bytearray(valid_zip(("b.js", "x")))
    for pos, name in list(central_records(bytes(raw))):
        if name == "b.js":
            flags = struct.unpack_from("<H", raw, pos + 8)[0]
            struct.pack_into("<H", raw, pos + 8, flags | 0x1)
    err = rejects(bundle_from_zip, bytes(raw), code="bad_zip")
    assert "encrypted" in err.detail


def test_rejects_overlapping_entries():
    raw = valid_zip(("aa.js", wordy_text(10_000)))
    records = list(central_records(raw))
    pos, _ = next(r for r in records if r[1] == "aa.js")
    name_len, extra_len, comment_len = struct.unpack_from("<HHH", raw, pos + 28)
    record = bytearray(raw[pos : pos + 46 + name_len + extra_len + comment_len])
    record[46 : 46 + name_len] = b"bb.js"  # same length, same local header offset
    eocd = raw.rfind(b"PK\x05\x06")
    cd_start = struct.unpack_from("<I", raw, eocd + 16)[0]
    new = bytearray(raw[:eocd] + bytes(record) + raw[eocd:])
    e = eocd + len(record)
    count = struct.unpack_from("<H", new, e + 10)[0] + 1
    struct.pack_into("<HH", new, e + 8, count, count)
    struct.pack_into("<I", new, e + 12, eocd - cd_start + len(record))
    with zipfile.ZipFile(io.BytesIO(bytes(new))) as zf:
        assert {"aa.js", "bb.js"} <= set(zf.namelist())
    err = rejects(bundle_from_zip, bytes(new), code="bad_zip")
    assert "overlap" in err.detail


def test_rejects_zip_without_root_manifest():
    err = rejects(bundle_from_zip, zip_bytes(list(BASE_FILES.items())), code="bad_manifest")
    assert err.errors[0]["location"] == "manifest.json"
    nested = zip_bytes([("app/manifest.json", json.dumps(BASE_MANIFEST)), ("app/index.html", "x")])
    err = rejects(bundle_from_zip, nested, code="bad_manifest")
    assert "app/manifest.json" in err.detail


def test_rejects_invalid_manifest_json_in_zip():
    raw = zip_bytes([("manifest.json", '{\n "name": "x",\n "entry": }'), *BASE_FILES.items()])
    err = rejects(bundle_from_zip, raw, code="bad_manifest")
    assert err.errors[0]["location"] == "manifest.json:3"
    dupe = '{"name": "a", "name": "b", "entry": "index.html"}'
    err = rejects(
        bundle_from_zip,
        zip_bytes([("manifest.json", dupe), *BASE_FILES.items()]),
        code="bad_manifest",
    )
    assert "duplicate key" in err.detail
    nan = '{"name": "a", "entry": "index.html", "data_schema": {"x": NaN}}'
    rejects(
        bundle_from_zip,
        zip_bytes([("manifest.json", nan), *BASE_FILES.items()]),
        code="bad_manifest",
    )


# --------------------------------------------------------------------------- manifest


def test_rejects_unknown_scope_with_location_and_hint():
    err = rejects(make, code="unknown_scope", scopes=["diet.read", "diet.raed", "wealth.read"])
    assert [e["location"] for e in err.errors] == ["manifest.scopes[1]", "manifest.scopes[2]"]
    assert "did you mean 'diet.read'" in err.errors[0]["message"]


def test_rejects_missing_entry():
    err = rejects(make, code="missing_entry", entry="main.html")
    assert err.errors[0]["location"] == "manifest.entry"


def test_rejects_unknown_manifest_key_with_hint():
    err = rejects(make, code="bad_manifest", scope=["diet.read"])
    assert err.errors[0]["location"] == "manifest.scope"
    assert "did you mean 'scopes'" in err.errors[0]["message"]


@pytest.mark.parametrize(
    ("manifest", "location"),
    [
        ({"name": None}, "manifest.name"),
        ({"name": ""}, "manifest.name"),
        ({"name": "   "}, "manifest.name"),
        ({"name": "n" * 81}, "manifest.name"),
        ({"name": 7}, "manifest.name"),
        ({"name": "a\nb"}, "manifest.name"),
        ({"entry": None}, "manifest.entry"),
        ({"entry": ["index.html"]}, "manifest.entry"),
        ({"scopes": "diet.read"}, "manifest.scopes"),
        ({"scopes": [1]}, "manifest.scopes[0]"),
        ({"hosts": "example.com"}, "manifest.hosts"),
        ({"description": "d" * 501}, "manifest.description"),
        ({"description": 5}, "manifest.description"),
        ({"data_schema": [1, 2]}, "manifest.data_schema"),
        ({"data_schema": "object"}, "manifest.data_schema"),
        ({"data_schema": {"x": float("nan")}}, "manifest.data_schema"),
        ({"data_schema": {"x": object()}}, "manifest.data_schema"),
        ({"data_schema": {"d": "x" * (32 * 1024)}}, "manifest.data_schema"),
    ],
)
def test_rejects_bad_manifest_fields(manifest, location):
    raw = body()
    raw["manifest"].update(manifest)
    raw["manifest"] = {k: v for k, v in raw["manifest"].items() if v is not None}
    err = rejects(bundle_from_json, raw, code="bad_manifest")
    assert err.errors[0]["location"] == location


def test_manifest_must_be_an_object():
    rejects(bundle_from_json, {"manifest": ["x"], "files": BASE_FILES}, code="bad_manifest")


@pytest.mark.parametrize(
    "host",
    [
        "https://api.example.com",
        "api.example.com:443",
        "api.example.com/v1",
        "user@api.example.com",
        "*.example.com",
        "localhost",
        "127.0.0.1",
        "exa mple.com",
        "-bad.example.com",
        "example.com.",
        "a" * 64 + ".com",
        "",
    ],
)
def test_rejects_bad_host(host):
    err = rejects(make, code="bad_host", hosts=["ok.example.com", host])
    assert err.errors[0]["location"] == "manifest.hosts[1]"


def test_accepts_good_hosts_and_caps_their_number():
    b = make(hosts=["API.Example.COM", "xn--bcher-kva.example", "a-b.c-d.io"])
    assert b.manifest["hosts"] == ["a-b.c-d.io", "api.example.com", "xn--bcher-kva.example"]
    rejects(make, code="too_many_hosts", hosts=[f"h{i}.example.com" for i in range(21)])
    make(hosts=[f"h{i}.example.com" for i in range(20)] * 2)  # duplicates do not count


def test_rejects_malformed_bundle_shapes():
    rejects(bundle_from_json, ["not", "an", "object"], code="bad_bundle")
    rejects(bundle_from_json, {"manifest": BASE_MANIFEST}, code="bad_bundle")
    rejects(bundle_from_json, {**body(), "filez": {}}, code="bad_bundle")
    rejects(
        bundle_from_json, {"manifest": BASE_MANIFEST, "files": ["index.html"]}, code="bad_bundle"
    )
    rejects(bundle_from_json, body({"index.html": 5}), code="bad_bundle")
    rejects(bundle_from_json, body({1: "x", **BASE_FILES}), code="bad_bundle")


def test_collects_several_manifest_problems():
    err = rejects(make, code="bad_manifest", extra=1, description=5, hosts=["bad host"])
    codes = [e["code"] for e in err.errors]
    assert codes.count("bad_manifest") == 2 and "bad_host" in codes
    assert "more problem" in err.detail


def test_error_list_is_capped_and_problem_shape():
    err = rejects(make, code="unknown_scope", scopes=[f"nope{i}.read" for i in range(80)])
    assert len(err.errors) == MAX_ERRORS + 1
    problem = err.to_problem()
    assert problem["status"] == 422 and problem["code"] == "unknown_scope"
    assert problem["type"].endswith("/unknown_scope") and problem["title"]
    json.dumps(problem)


# --------------------------------------------------------------------------- personal data

PROFILE = {
    "email": "Jane.Doe@example.com",
    "phone": "+1 (555) 123-4567",
    "name": "Jane Doe",
    "address": "12 Elm Street",
    "nickname": "Al",
    "city": None,
}


def scan(text: str, **manifest) -> list[Finding]:
    return find_personal_values(make({"app.js": text, **BASE_FILES}, **manifest), PROFILE)


def test_finds_email_case_insensitively_with_line():
    found = scan("// ok\nconst me = 'jane.doe@EXAMPLE.com';\n")
    assert found == [Finding("email", "files/app.js:2", "J***@example.com")]


@pytest.mark.parametrize(
    "text", ["xjane.doe@example.com", "jane.doe@example.com.au", "jane.doe@example.community"]
)
def test_email_must_match_exactly(text):
    assert scan(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "call 555-123-4567",
        "call 555.123.4567",
        "call 555 123 4567",
        "call (555) 123-4567",
        "call +1 (555) 123-4567",
        "call +15551234567",
        "call 1-555-123-4567",
        "local: 123-4567",
        "tel:5551234567;",
    ],
)
def test_finds_phone_with_any_separators(text):
    found = scan(f"line one\n{text}\n")
    assert [(f.kind, f.location) for f in found] == [("phone", "files/app.js:2")]
    assert found[0].masked.endswith("67") and "4567" not in found[0].masked


@pytest.mark.parametrize(
    "text", ["999-123-4567", "id 81234567", "5551234567890", "v0.1234567", "555-123-456"]
)
def test_phone_does_not_match_other_numbers(text):
    assert [f for f in scan(text) if f.kind == "phone"] == []


@pytest.mark.parametrize("text", ["by JANE   doe", "by Jane\n  Doe", "(jane doe)"])
def test_finds_name_as_whole_words(text):
    assert [f.kind for f in scan(text)] == ["name"]


@pytest.mark.parametrize("text", ["Janet Doe", "Jane Doerr", "MaryJane Doe"])
def test_name_needs_word_boundaries(text):
    assert scan(text) == []


def test_short_and_empty_values_are_ignored():
    assert scan("Al was here; al; AL") == []
    assert find_personal_values(make(), {"name": "", "phone": "12-34", "email": None}) == []


def test_finds_personal_values_in_manifest_strings():
    found = scan("nothing", description="Built by Jane Doe at 12 Elm   Street.")
    assert {(f.kind, f.location) for f in found} == {
        ("name", "manifest.description"),
        ("address", "manifest.description"),
    }
    schema = {"properties": {"owner": {"default": "jane.doe@example.com"}}}
    found = scan("nothing", data_schema=schema)
    assert [f.location for f in found] == ["manifest.data_schema.properties.owner.default"]


def test_check_publishable_reports_personal_data_masked():
    b = make({"app.js": "a\nb\nmail jane.doe@example.com or 555 123 4567\n", **BASE_FILES})
    err = rejects(check_publishable, b, PROFILE, code="personal_data")
    assert [(e["location"], e["kind"]) for e in err.errors] == [
        ("files/app.js:3", "email"),
        ("files/app.js:3", "phone"),
    ]
    assert "email address" in err.errors[0]["message"]
    assert "J***@example.com" in err.errors[0]["message"]
    text = json.dumps(err.to_problem()).lower()
    assert "jane.doe@" not in text and "1234567" not in text and "123-4567" not in text


def test_check_publishable_passes_clean_bundle():
    check_publishable(make(), PROFILE)


# --------------------------------------------------------------------------- secrets

# Split so that this file itself does not trip secret scanners.
SECRETS = {
    "aws_access_key_id": "AKIA" + "IOSFODNN7EXAMPLE",
    "private_key": "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----",
    "github_token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "openai_api_key": "sk-" + "proj-Zx81Kq7Lm2Np4Rt6Vw8Yb0Cd3Ef5Gh7Jk9",
    "stripe_live_key": "sk_" + "live_51HxYz2AbCdEfGhIjKlMn0pQ",
    "slack_token": "xoxb" + "-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "google_api_key": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
}


@pytest.mark.parametrize(("kind", "secret"), sorted(SECRETS.items()))
def test_finds_each_secret_kind(kind, secret):
    b = make({"app.js": f'// config\nconst k = "{secret}";\n', **BASE_FILES})
    found = find_secrets(b)
    assert [(f.kind, f.location) for f in found] == [(kind, "files/app.js:2")]
    assert secret not in found[0].masked
    err = rejects(check_publishable, b, {}, code="secret")
    assert err.errors[0]["kind"] == kind and err.errors[0]["location"] == "files/app.js:2"
    assert secret not in json.dumps(err.to_problem())


def test_more_secret_variants():
    github_pat = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
    restricted = "rk_" + "live_51HxYz2AbCdEfGhIjKlMn0pQ"
    pem = "-----BEGIN OPENSSH " + "PRIVATE KEY-----"
    for secret, kind in [
        (github_pat, "github_token"),
        (restricted, "stripe_live_key"),
        (pem, "private_key"),
    ]:
        found = find_secrets(make({"a.txt": secret, **BASE_FILES}))
        assert [f.kind for f in found] == [kind]


def test_openai_key_is_masked_like_sk_ellipsis_last4():
    (finding,) = find_secrets(make({"a.js": SECRETS["openai_api_key"], **BASE_FILES}))
    assert finding.masked == "sk-…" + SECRETS["openai_api_key"][-4:]


@pytest.mark.parametrize(
    "line",
    [
        'api_key = "Zx81Kq7Lm2Np4Rt6Vw8Yb0Cd"',
        "const API_KEY='q8W2e9R4t7Y1u3I6o0P5'",
        '"clientSecret": "d41d8cd98f00b204e9800998ecf8427e"',
        "db_password: `Tr0ub4dor93xyzQ7w`",
    ],
)
def test_finds_generic_high_entropy_assignments(line):
    found = find_secrets(make({"cfg.js": f"\n\n{line}\n", **BASE_FILES}))
    assert [(f.kind, f.location) for f in found] == [("generic_secret", "files/cfg.js:3")]
    assert found[0].masked.startswith("…") and len(found[0].masked) == 5


@pytest.mark.parametrize(
    "text",
    [
        'const STORAGE_KEY = "sprig.diet.entries";',
        'const tokenKey = "sprigSessionTokenStorage";',
        'api_key = "your-api-key-goes-here-1234"',
        'api_key = "xxxxxxxxxxxxxxxxxxxxxxxx"',
        "api_key = process.env.API_KEY",
        '<div class="sk-button-primary-large-rounded">',
        '<div class="sk-Button-Primary-Large-Rounded">',
        "const id = 'sk-item-0012-0034-0056-0078';",
        "const token = localStorage.getItem('token');",
        'secret: "https://example.com/oauth2/callback1"',
        "AKIA is a prefix; AKIAshort",
        "notAKIAIOSFODNN7EXAMPLE",
    ],
)
def test_secret_scan_ignores_ordinary_code(text):
    assert find_secrets(make({"app.js": text, **BASE_FILES})) == []


def test_secret_in_manifest_is_found():
    b = make(description="key " + SECRETS["aws_access_key_id"])
    assert find_secrets(b) == [Finding("aws_access_key_id", "manifest.description", "AKIA…MPLE")]


def test_secret_beats_personal_data_for_the_code():
    b = make({"a.js": f"{SECRETS['github_token']}\njane.doe@example.com\n", **BASE_FILES})
    err = rejects(check_publishable, b, PROFILE, code="secret")
    assert {e["code"] for e in err.errors} == {"secret", "personal_data"}


def test_scans_of_a_full_size_bundle_are_fast():
    files = {f"src/f{i}.js": wordy_text(100_000, seed=i) for i in range(20)} | BASE_FILES
    b = make(files)
    assert b.size > 1_900_000
    start = time.perf_counter()
    assert find_secrets(b) == []
    assert find_personal_values(b, PROFILE) == []
    # Measured ~30 ms for both on a dev machine; the bound leaves room for slow CI.
    assert time.perf_counter() - start < 0.5


# --------------------------------------------------------------------------- diffs


def test_diff_root_bundle_is_all_added():
    new = make({"js/app.js": "a\nb\n", **BASE_FILES}, scopes=["diet.read"], hosts=["x.example.com"])
    d = diff_bundles(None, new)
    assert [(f["path"], f["status"]) for f in d["files"]] == [
        ("index.html", "added"),
        ("js/app.js", "added"),
    ]
    assert d["files"][1]["diff"] == "--- a/js/app.js\n+++ b/js/app.js\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    assert d["manifest"]["scopes_added"] == ["diet.read"]
    assert d["manifest"]["hosts_added"] == ["x.example.com"]
    assert d["manifest"]["name_changed"] and d["manifest"]["entry_changed"]
    assert d["stats"] == {
        "files_added": 2,
        "files_removed": 0,
        "files_modified": 0,
        "lines_added": 4,
        "lines_removed": 0,
    }


def test_diff_files_added_removed_modified():
    old = make({"app.js": "a\nb\nc\n", "gone.css": "x {}\n", "same.txt": "s", **BASE_FILES})
    new = make({"app.js": "a\nB\nc\nd\n", "new.md": "# hi\n", "same.txt": "s", **BASE_FILES})
    d = diff_bundles(old, new)
    by_path = {f["path"]: f for f in d["files"]}
    assert {p: f["status"] for p, f in by_path.items()} == {
        "app.js": "modified",
        "gone.css": "removed",
        "new.md": "added",
    }
    expected = "".join(
        difflib.unified_diff(
            ["a\n", "b\n", "c\n"],
            ["a\n", "B\n", "c\n", "d\n"],
            fromfile="a/app.js",
            tofile="b/app.js",
            n=3,
        )
    )
    assert (
        by_path["app.js"]["diff"]
        == expected
        == ("--- a/app.js\n+++ b/app.js\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n")
    )
    assert by_path["gone.css"]["diff"] == ("--- a/gone.css\n+++ b/gone.css\n@@ -1 +0,0 @@\n-x {}\n")
    assert not any(f["truncated"] for f in d["files"])
    assert d["stats"] == {
        "files_added": 1,
        "files_removed": 1,
        "files_modified": 1,
        "lines_added": 3,
        "lines_removed": 2,
    }
    assert d["manifest"] == {
        "scopes_added": [],
        "scopes_removed": [],
        "hosts_added": [],
        "hosts_removed": [],
        "entry_changed": False,
        "name_changed": False,
        "description_changed": False,
        "data_schema_changed": False,
    }


def test_diff_counts_added_lines_that_look_like_headers():
    d = diff_bundles(
        make({"a.txt": "x\n", **BASE_FILES}), make({"a.txt": "x\n++ y\n-- z\n", **BASE_FILES})
    )
    assert d["stats"]["lines_added"] == 2 and d["stats"]["lines_removed"] == 0


def test_diff_marks_missing_final_newline():
    d = diff_bundles(make({"a.txt": "x\ny", **BASE_FILES}), make({"a.txt": "x\nz", **BASE_FILES}))
    assert d["files"][0]["diff"].endswith(
        "-y\n\\ No newline at end of file\n+z\n\\ No newline at end of file\n"
    )


def test_diff_scopes_hosts_and_manifest_changes():
    old = make(scopes=["diet.read", "sleep.read"], hosts=["a.example.com"])
    new = make(
        scopes=["diet.read", "diet.write"],
        hosts=["b.example.com"],
        name="Renamed",
        data_schema={"type": "object"},
    )
    m = diff_bundles(old, new)["manifest"]
    assert m["scopes_added"] == ["diet.write"] and m["scopes_removed"] == ["sleep.read"]
    assert m["hosts_added"] == ["b.example.com"] and m["hosts_removed"] == ["a.example.com"]
    assert m["name_changed"] and m["data_schema_changed"] and not m["entry_changed"]
    assert diff_bundles(old, old)["files"] == []


def test_diff_text_is_truncated_but_stats_are_complete():
    old = make({"big.txt": "", **BASE_FILES})
    new = make({"big.txt": "line of text\n" * 40_000, **BASE_FILES})
    d = diff_bundles(old, new)
    f = d["files"][0]
    assert f["truncated"] is True
    assert len(f["diff"].encode()) <= MAX_DIFF_BYTES
    assert f["diff"].endswith("\n")
    assert d["stats"]["lines_added"] == 40_000


# --------------------------------------------------------------------------- properties

_SEGMENT = st.text(
    alphabet=string.ascii_letters + string.digits + "_-.éßΣ", min_size=1, max_size=10
).filter(lambda s: s not in (".", ".."))
_PATH = st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join)
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=300,
)


def _portable(files: dict[str, str]) -> bool:
    keys = [unicodedata.normalize("NFC", p).casefold() for p in files]
    if len(set(keys)) != len(keys) or "manifest.json" in keys:
        return False
    key_set = set(keys)
    return not any(
        "/".join(k.split("/")[:i]) in key_set for k in keys for i in range(1, k.count("/") + 1)
    )


_FILE_MAPS = st.dictionaries(_PATH, _TEXT, min_size=1, max_size=8).filter(_portable)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=_FILE_MAPS, scopes=st.lists(st.sampled_from(sorted(SCOPES)), max_size=5), data=st.data()
)
def test_property_deterministic_and_round_trips_through_zip(files, scopes, data):
    entry = data.draw(st.sampled_from(sorted(files)))
    raw = {"manifest": {"name": "Prop", "entry": entry, "scopes": scopes}, "files": files}
    first = bundle_from_json(raw)
    shuffled = dict(data.draw(st.permutations(list(files.items()))))
    second = bundle_from_json(
        {"files": shuffled, "manifest": dict(reversed(raw["manifest"].items()))}
    )
    assert first == second and first.sha256 == second.sha256
    assert first.files == files
    again = bundle_from_zip(bundle_to_zip(first))
    assert again.sha256 == first.sha256
    assert again.files == files
    assert bundle_from_canonical(first.canonical_bytes()) == first
