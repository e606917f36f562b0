"""The zip wire format: a streaming reader that trusts no declared size, and the writer.

The reader checks every entry's structure before decompressing any, then inflates members
itself in small pieces, so the size, count and compression-ratio caps hold while reading.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

from feedback.json_limits import MAX_JSON_DEPTH, nesting_exceeds
from market.catalog.bundles import Bundle, build_bundle
from market.catalog.bundles.files import path_errors
from market.catalog.bundles.limits import (
    MAX_BUNDLE_BYTES,
    MAX_COMPRESSION_RATIO,
    MAX_FILES,
    MAX_MANIFEST_JSON_BYTES,
    MAX_ZIP_BYTES,
    MAX_ZIP_ENTRIES,
    RATIO_GRACE_BYTES,
    BundleError,
    error_item,
    file_location,
    printable,
    raise_collected,
    too_large,
    utf8_len,
)
from market.catalog.bundles.manifest import MANIFEST_FILENAME

__all__ = ["bundle_from_zip", "bundle_to_zip"]

_READ_CHUNK = 64 * 1024
# Compressed input is fed to zlib in small pieces so the compressed bytes
# consumed so far are known precisely when judging the ratio.
_INFLATE_IN_CHUNK = 4 * 1024


def _bad_zip(detail: str, location: str = "") -> BundleError:
    return BundleError(
        "bad_zip", detail, status=422, errors=[error_item("bad_zip", location, detail)]
    )


def _read_capped(data: bytes | bytearray | memoryview | BinaryIO) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
    elif hasattr(data, "read"):
        raw = data.read(MAX_ZIP_BYTES + 1)
        if not isinstance(raw, (bytes, bytearray)):
            raise TypeError("bundle_from_zip needs bytes or a binary file object")
        raw = bytes(raw)
    else:
        raise TypeError("bundle_from_zip needs bytes or a binary file object")
    if len(raw) > MAX_ZIP_BYTES:
        raise too_large(f"zip is larger than {MAX_ZIP_BYTES} bytes")
    return raw


def _member_name(info: zipfile.ZipInfo) -> str:
    # orig_filename keeps NUL bytes and backslashes that ZipInfo.filename silently rewrites.
    name = info.orig_filename
    if not info.flag_bits & 0x800 and not name.isascii():
        # Many tools store UTF-8 names without setting the UTF-8 flag; zipfile then
        # decodes them as cp437. Undo that when the bytes are valid UTF-8.
        with contextlib.suppress(UnicodeEncodeError, UnicodeDecodeError):
            name = name.encode("cp437").decode("utf-8")
    return name


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _data_start(raw: bytes, info: zipfile.ZipInfo, loc: str) -> int:
    off = info.header_offset
    if off < 0 or off + 30 > len(raw) or raw[off : off + 4] != b"PK\x03\x04":
        raise _bad_zip("local file header is missing or corrupt", loc)
    name_len, extra_len = struct.unpack_from("<HH", raw, off + 26)
    start = off + 30 + name_len + extra_len
    if start > len(raw):
        raise _bad_zip("local file header runs past the end of the zip", loc)
    return start


class _Budget:
    """Running uncompressed total across the members it is shared by."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.used = 0

    def take(self, n: int, loc: str) -> None:
        self.used += n
        if self.used > self.limit:
            raise too_large(
                f"{self.what} expand to more than {self.limit} bytes (stopped reading at {loc})",
                loc,
            )


def _iter_inflate(raw: bytes, start: int, end: int, loc: str) -> Iterator[tuple[bytes, int]]:
    """Yield (output chunk, compressed bytes consumed so far) for a raw deflate stream.

    zipfile's own reader trusts the declared sizes and reads compressed input in
    large blocks, which hides the true ratio of a bomb until megabytes are out.
    """
    d = zlib.decompressobj(-zlib.MAX_WBITS)
    pos = start
    fed = 0
    try:
        while not d.eof:
            if d.unconsumed_tail:
                chunk = d.decompress(d.unconsumed_tail, _READ_CHUNK)
            elif pos < end:
                piece = raw[pos : min(pos + _INFLATE_IN_CHUNK, end)]
                pos += len(piece)
                fed += len(piece)
                chunk = d.decompress(piece, _READ_CHUNK)
            else:
                # Input is exhausted but zlib may still hold output from its window.
                chunk = d.decompress(b"", _READ_CHUNK)
                if not chunk and not d.eof:
                    raise _bad_zip("compressed data ends before the deflate stream does", loc)
            consumed = fed - len(d.unconsumed_tail) - len(d.unused_data)
            if chunk:
                yield chunk, consumed
    except zlib.error as exc:
        raise _bad_zip(f"corrupt deflate data ({exc})", loc) from exc


def _read_member(raw: bytes, info: zipfile.ZipInfo, start: int, budget: _Budget, loc: str) -> bytes:
    end = min(start + info.compress_size, len(raw))
    parts: list[bytes] = []
    total = 0
    crc = 0
    if info.compress_type == zipfile.ZIP_STORED:
        chunks: Iterator[tuple[bytes, int]] = (
            (raw[p : min(p + _READ_CHUNK, end)], min(p + _READ_CHUNK, end) - start)
            for p in range(start, end, _READ_CHUNK)
        )
    else:
        chunks = _iter_inflate(raw, start, end, loc)
    for chunk, consumed in chunks:
        total += len(chunk)
        budget.take(len(chunk), loc)
        if total > RATIO_GRACE_BYTES and total > MAX_COMPRESSION_RATIO * max(consumed, 1):
            detail = (
                f"{loc} expands more than {MAX_COMPRESSION_RATIO}x "
                f"({total} bytes from {consumed} compressed); refusing a likely zip bomb"
            )
            raise BundleError(
                "zip_bomb", detail, status=413, errors=[error_item("zip_bomb", loc, detail)]
            )
        crc = zlib.crc32(chunk, crc)
        parts.append(chunk)
    if crc != info.CRC:
        raise _bad_zip("CRC-32 mismatch; the zip is corrupt", loc)
    if total != info.file_size:
        raise _bad_zip(f"header declares {info.file_size} bytes but the data holds {total}", loc)
    return b"".join(parts)


def _decode_member(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        detail = (
            f"{file_location(path)} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); only text files are allowed"
        )
        raise BundleError(
            "not_utf8", detail, errors=[error_item("not_utf8", file_location(path, line), detail)]
        ) from exc


def _parse_manifest_json(data: bytes) -> object:
    def no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ValueError(f"duplicate key '{printable(k)}'")
            out[k] = v
        return out

    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BundleError(
            "bad_manifest",
            "manifest.json is not UTF-8 text",
            errors=[error_item("bad_manifest", MANIFEST_FILENAME, "not UTF-8 text")],
        ) from exc
    if nesting_exceeds(text):
        msg = f"nested more than {MAX_JSON_DEPTH} levels deep"
        raise BundleError(
            "bad_manifest",
            f"{MANIFEST_FILENAME}: {msg}",
            errors=[error_item("bad_manifest", MANIFEST_FILENAME, msg)],
        )
    try:
        return json.loads(text, object_pairs_hook=no_dupes, parse_constant=no_constants)
    except json.JSONDecodeError as exc:
        loc = f"{MANIFEST_FILENAME}:{exc.lineno}"
        raise BundleError(
            "bad_manifest",
            f"{loc}: invalid JSON ({exc.msg})",
            errors=[error_item("bad_manifest", loc, f"invalid JSON: {exc.msg}")],
        ) from exc
    except ValueError as exc:
        msg = str(exc)
        raise BundleError(
            "bad_manifest",
            f"{MANIFEST_FILENAME}: {msg}",
            errors=[error_item("bad_manifest", MANIFEST_FILENAME, msg)],
        ) from exc


def bundle_from_zip(data: bytes | BinaryIO) -> Bundle:
    """Validate a zip upload whose root holds ``manifest.json`` plus the files.

    Every cap is enforced while decompressing: declared sizes are never trusted.
    """
    raw = _read_capped(data)
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            infos = zf.infolist()
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        ValueError,
        EOFError,
        OSError,
        NotImplementedError,
        struct.error,
    ) as exc:
        raise _bad_zip(f"not a readable zip file ({exc})") from exc

    if len(infos) > MAX_ZIP_ENTRIES:
        detail = f"zip has {len(infos)} entries (max {MAX_ZIP_ENTRIES}, directories included)"
        raise BundleError(
            "too_many_files", detail, status=413, errors=[error_item("too_many_files", "", detail)]
        )

    # Structure is checked for every entry before any member is decompressed.
    errors: list[dict[str, Any]] = []
    members: list[tuple[str, zipfile.ZipInfo]] = []
    seen: set[str] = set()
    manifest_info: zipfile.ZipInfo | None = None
    for info in infos:
        name = _member_name(info)
        loc = file_location(name)
        if _is_symlink(info):
            errors.append(error_item("symlink", loc, "symlinks are not allowed in bundles"))
            continue
        if name.endswith("/"):
            continue
        if name.startswith("__MACOSX/"):
            continue  # Finder's AppleDouble metadata, never app content.
        if name in seen:
            errors.append(
                error_item("duplicate_path", loc, "the zip holds this name more than once")
            )
            continue
        seen.add(name)
        if info.flag_bits & 0x1:
            errors.append(error_item("bad_zip", loc, "encrypted entries are not supported"))
            continue
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            errors.append(
                error_item(
                    "bad_zip",
                    loc,
                    f"compression method {info.compress_type} "
                    "is not supported (use deflate or store)",
                )
            )
            continue
        if name == MANIFEST_FILENAME:
            manifest_info = info
            continue
        path_errs = path_errors(name)
        if path_errs:
            errors.extend(path_errs)
            continue
        members.append((name, info))
    raise_collected(errors)

    if len(members) > MAX_FILES:
        detail = f"zip has {len(members)} files besides manifest.json (max {MAX_FILES})"
        raise BundleError(
            "too_many_files",
            detail,
            status=413,
            errors=[error_item("too_many_files", "files", detail)],
        )
    if manifest_info is None:
        nested = sorted(n for n in seen if n.endswith("/" + MANIFEST_FILENAME))
        hint = (
            f"; found '{printable(nested[0])}' — zip the folder's contents, not the folder"
            if nested
            else ""
        )
        msg = f"the zip has no {MANIFEST_FILENAME} at its root{hint}"
        raise BundleError(
            "bad_manifest", msg, errors=[error_item("bad_manifest", MANIFEST_FILENAME, msg)]
        )

    to_read = [(MANIFEST_FILENAME, manifest_info), *members]
    starts = {}
    for name, info in to_read:
        starts[name] = _data_start(raw, info, file_location(name))
    # Several directory entries pointing at one compressed blob is the
    # "overlapping files" bomb; honest zips never share bytes between members.
    spans = sorted(
        (info.header_offset, starts[name] + info.compress_size, name) for name, info in to_read
    )
    for (_, end, name), (nxt_off, _, _) in itertools.pairwise(spans):
        if end > nxt_off:
            raise _bad_zip("zip entries overlap", file_location(name))

    manifest_bytes = _read_member(
        raw,
        manifest_info,
        starts[MANIFEST_FILENAME],
        _Budget(MAX_MANIFEST_JSON_BYTES, "manifest.json's contents"),
        MANIFEST_FILENAME,
    )
    budget = _Budget(MAX_BUNDLE_BYTES, "the zip's files")
    raw_manifest = _parse_manifest_json(manifest_bytes)
    files: dict[str, str] = {}
    for name, info in members:
        loc = file_location(name)
        files[name] = _decode_member(name, _read_member(raw, info, starts[name], budget, loc))
    return build_bundle(raw_manifest, files, source="zip")


def _trips_ratio_guard(data: bytes) -> bool:
    """Would the upload reader call this file a bomb once deflated?

    Replays the reader's running-ratio check, since a file that is ordinary overall
    can still start with a long run of padding.
    """
    if len(data) <= RATIO_GRACE_BYTES:
        return False
    # Same settings as zipfile's ZIP_DEFLATED writer, so the bytes are identical.
    c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS)
    packed = c.compress(data) + c.flush()
    total = 0
    for chunk, consumed in _iter_inflate(packed, 0, len(packed), ""):
        total += len(chunk)
        if total > RATIO_GRACE_BYTES and total > MAX_COMPRESSION_RATIO * max(consumed, 1):
            return True
    return False


def bundle_to_zip(bundle: Bundle) -> bytes:
    """Deterministic zip of a bundle that :func:`bundle_from_zip` accepts back."""
    buf = io.BytesIO()
    manifest = json.dumps(bundle.manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if utf8_len(manifest) > MAX_MANIFEST_JSON_BYTES:  # a deeply nested data_schema
        manifest = json.dumps(bundle.manifest, sort_keys=True, ensure_ascii=False)
    entries = [(MANIFEST_FILENAME, manifest.encode("utf-8"))]
    entries += [(p, t.encode("utf-8")) for p, t in bundle.files.items()]
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            # Very repetitive files are stored, not deflated, so our own exports never
            # trip the upload's compression-ratio guard.
            stored = _trips_ratio_guard(data)
            info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()
