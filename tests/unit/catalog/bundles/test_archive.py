"""Unit tests for market.catalog.bundles.archive: the streaming zip reader and the writer."""

from __future__ import annotations

import io
import json
import random
import stat
import string
import struct
import time
import tracemalloc
import unicodedata
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from market.catalog.bundles import bundle_from_canonical, bundle_from_json
from market.catalog.bundles.archive import bundle_from_zip, bundle_to_zip
from market.catalog.bundles.limits import MAX_BUNDLE_BYTES, MAX_FILES, MAX_ZIP_ENTRIES, BundleError
from market.catalog.bundles.manifest import SCOPES
from tests.unit.catalog.bundles.helpers import (
    BASE_FILES,
    BASE_MANIFEST,
    make,
    manifest_entry,
    rejects,
    valid_zip,
    wordy_text,
    zip_bytes,
)

# --------------------------------------------------------------------------- helpers


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


# --------------------------------------------------------------------------- round trips


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


# --------------------------------------------------------------------------- size caps


def test_rejects_oversized_manifest_json_in_zip():
    padded = json.dumps(BASE_MANIFEST)[:-1] + " " * 300_000 + "}"
    raw = zip_bytes([("manifest.json", padded), *BASE_FILES.items()], zipfile.ZIP_STORED)
    err = rejects(bundle_from_zip, raw, code="too_large", status=413)
    assert err.errors[0]["location"] == "manifest.json"


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


# --------------------------------------------------------------------------- entries


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
