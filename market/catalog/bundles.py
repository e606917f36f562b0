"""Sub-agent bundles: parsing, validation, canonical hashing, publish scans and diffs.

A bundle is a manifest plus UTF-8 text files written by a coding agent. It arrives
either as JSON (``{"manifest": {...}, "files": {path: text}}``) or as a zip whose root
holds ``manifest.json`` next to the files. Both are reduced to the same normalized
:class:`Bundle`, whose canonical bytes (and so whose sha256) do not depend on the wire
format, the key order or the zip layout.

This module is deliberately pure (no Flask, no database): the HTTP layer turns
:class:`BundleError` into an ``application/problem+json`` response with ``status``.
"""

from __future__ import annotations

import bisect
import contextlib
import difflib
import hashlib
import io
import itertools
import json
import math
import re
import stat
import string
import struct
import unicodedata
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from feedback.json_limits import MAX_JSON_DEPTH, first_unstorable, nesting_exceeds

__all__ = [
    "MAX_BUNDLE_BYTES",
    "MAX_COMPRESSION_RATIO",
    "MAX_DATA_SCHEMA_BYTES",
    "MAX_DIFF_BYTES",
    "MAX_DIFF_TOTAL_BYTES",
    "MAX_FILES",
    "MAX_HOSTS",
    "MAX_PATH_CHARS",
    "MAX_ZIP_BYTES",
    "MAX_ZIP_ENTRIES",
    "SCOPES",
    "SCOPE_DESCRIPTIONS",
    "SCOPE_DOMAINS",
    "SECRET_KINDS",
    "Bundle",
    "BundleError",
    "Finding",
    "bundle_from_canonical",
    "bundle_from_json",
    "bundle_from_zip",
    "bundle_to_zip",
    "canonical_bytes",
    "check_publishable",
    "diff_bundles",
    "find_personal_values",
    "find_secrets",
]

# --------------------------------------------------------------------------- limits

MAX_BUNDLE_BYTES = 2 * 1024 * 1024
MAX_FILES = 200
MAX_PATH_CHARS = 200
MAX_ZIP_BYTES = MAX_BUNDLE_BYTES
# Counted before any member is read, directories included, so a zip that is only
# a huge central directory is refused without decompressing anything.
MAX_ZIP_ENTRIES = 1000
MAX_COMPRESSION_RATIO = 100
# Small members legitimately reach high ratios (a file of blank lines), so the
# ratio is only judged once a member has produced this much output.
RATIO_GRACE_BYTES = 64 * 1024
# manifest.json is streamed against its own cap: counting its pretty-printing
# whitespace in the files' 2 MiB would refuse zips whose JSON twin is accepted.
# The exact canonical total is enforced afterwards for both formats alike.
MAX_MANIFEST_JSON_BYTES = 256 * 1024
MAX_NAME_CHARS = 80
MAX_DESCRIPTION_CHARS = 500
MAX_HOSTS = 20
MAX_DATA_SCHEMA_BYTES = 32 * 1024
# Nesting levels of a data_schema: deep enough for any real schema, and within the depth every
# JSON input is held to wherever the manifest arrives (a request body, a zip's manifest.json).
MAX_DATA_SCHEMA_DEPTH = 32
MAX_DIFF_BYTES = 200 * 1024
# A bundle can hold 200 files; without an overall cap one diff response could
# reach 200 x MAX_DIFF_BYTES.
MAX_DIFF_TOTAL_BYTES = 1024 * 1024
# Keeps problem+json bodies small when an upload is wrong everywhere.
MAX_ERRORS = 50
MAX_FINDINGS = 100

_READ_CHUNK = 64 * 1024
# Compressed input is fed to zlib in small pieces so the compressed bytes
# consumed so far are known precisely when judging the ratio.
_INFLATE_IN_CHUNK = 4 * 1024

MANIFEST_FILENAME = "manifest.json"
_MANIFEST_KEYS = ("name", "entry", "scopes", "hosts", "data_schema", "description")
_BUNDLE_KEYS = ("manifest", "files")

# --------------------------------------------------------------------------- scopes

_DOMAIN_NOUNS: dict[str, str] = {
    "profile": "your profile (name, age and preferences)",
    "diet": "your diet log",
    "hydration": "your water intake log",
    "fitness": "your workouts and activity",
    "health": "your general health records",
    "health.injuries": "your injury records",
    "health.medications": "your medication list",
    "sleep": "your sleep log",
    "mood": "your mood entries",
    "journal": "your journal entries",
    "finance": "your budget and spending records",
    "family": "your family members' details",
    "calendar": "your calendar",
    "location": "your saved places and location",
    "study": "your study plans and progress",
    "hobby": "your hobby projects",
    "travel": "your trips and travel plans",
    "photos": "your photos",
    "contacts": "your contacts",
    "home": "your home inventory and chores",
    "pets": "your pets' records",
    "music": "your music library and playlists",
}
SCOPE_DOMAINS: tuple[str, ...] = tuple(_DOMAIN_NOUNS)
SCOPE_DESCRIPTIONS: dict[str, str] = {}
for _domain, _noun in _DOMAIN_NOUNS.items():
    SCOPE_DESCRIPTIONS[f"{_domain}.read"] = f"reads {_noun}"
    SCOPE_DESCRIPTIONS[f"{_domain}.write"] = f"adds to and changes {_noun}"
SCOPES: frozenset[str] = frozenset(SCOPE_DESCRIPTIONS)

# Labels deliberately exclude IP literals and single-label names such as
# "localhost": a published app may only name public DNS hosts. The TLD must be
# alphabetic or punycode.
_HOST_RE = re.compile(
    r"(?=.{1,253}\Z)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})\Z"
)

# --------------------------------------------------------------------------- errors

_PROBLEM_TITLES = {
    "too_large": "Bundle too large",
    "too_many_files": "Too many files",
    "zip_bomb": "Suspicious compression ratio",
    "bad_zip": "Malformed zip",
    "bad_bundle": "Malformed bundle",
    "bad_manifest": "Invalid manifest",
    "missing_entry": "Entry file missing",
    "unknown_scope": "Unknown scope",
    "bad_host": "Invalid host",
    "too_many_hosts": "Too many hosts",
    "path_traversal": "Path traversal",
    "absolute_path": "Absolute path",
    "bad_path": "Invalid path",
    "reserved_path": "Reserved path",
    "duplicate_path": "Duplicate path",
    "symlink": "Symlink in zip",
    "not_utf8": "File is not UTF-8 text",
    "binary_content": "File contains binary data",
    "personal_data": "Personal data in bundle",
    "secret": "Secret in bundle",
}


class BundleError(Exception):
    """A bundle was refused.

    ``status`` is 413 for size caps and 422 otherwise; ``code`` is a short machine
    string; ``errors`` lists ``{"location", "message", "code"}`` dicts (findings
    also carry ``"kind"``), at most :data:`MAX_ERRORS` of them.
    """

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        status: int = 422,
        errors: Iterable[Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status
        # Never empty, so clients can always render the list.
        errs = [dict(e) for e in errors] if errors else [{"location": "", "message": detail}]
        for e in errs:
            e.setdefault("code", code)
        if len(errs) > MAX_ERRORS:
            dropped = len(errs) - MAX_ERRORS
            errs = errs[:MAX_ERRORS]
            errs.append(
                {"location": "", "message": f"{dropped} more problems not shown", "code": code}
            )
        self.errors: list[dict[str, Any]] = errs

    def __repr__(self) -> str:
        return f"BundleError(code={self.code!r}, status={self.status}, detail={self.detail!r})"

    def to_problem(self) -> dict[str, Any]:
        """RFC 9457 body for ``application/problem+json``."""
        return {
            "type": f"/problems/bundle/{self.code}",
            "title": _PROBLEM_TITLES.get(self.code, "Invalid bundle"),
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
            "errors": self.errors,
        }


def _err(code: str, location: str, message: str) -> dict[str, str]:
    return {"location": location, "message": message, "code": code}


def _raise_collected(errors: list[dict[str, Any]]) -> None:
    """Raise one BundleError for all collected problems; the first one names the code."""
    if not errors:
        return
    first = errors[0]
    where = f"{first['location']}: " if first["location"] else ""
    detail = f"{where}{first['message']}"
    if len(errors) > 1:
        detail += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    raise BundleError(first["code"], detail, status=422, errors=errors)


def _too_large(detail: str, location: str = "") -> BundleError:
    return BundleError(
        "too_large", detail, status=413, errors=[_err("too_large", location, detail)]
    )


def _bad_zip(detail: str, location: str = "") -> BundleError:
    return BundleError("bad_zip", detail, status=422, errors=[_err("bad_zip", location, detail)])


def _show(value: str, limit: int = 60) -> str:
    """Make untrusted text safe to echo in a message: escape invisibles, truncate."""
    out = []
    for ch in value[:limit]:
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out) + ("…" if len(value) > limit else "")


def _file_loc(path: str, line: int | None = None) -> str:
    loc = f"files/{_show(path, MAX_PATH_CHARS)}"
    return f"{loc}:{line}" if line is not None else loc


# --------------------------------------------------------------------------- bundle


@dataclass(frozen=True, repr=False)
class Bundle:
    """A validated, normalized bundle. Treat ``manifest`` and ``files`` as read-only:
    ``sha256`` and ``size`` were computed from them at construction."""

    manifest: dict[str, Any]
    files: dict[str, str]
    sha256: str
    size: int

    def canonical_bytes(self) -> bytes:
        return canonical_bytes(self.manifest, self.files)

    def __hash__(self) -> int:
        return hash(self.sha256)

    def __repr__(self) -> str:
        # The default repr would dump up to 2 MiB of file text into logs.
        return (
            f"Bundle(name={self.manifest.get('name')!r}, files={len(self.files)}, "
            f"size={self.size}, sha256={self.sha256[:12]}…)"
        )


def canonical_bytes(manifest: Mapping[str, Any], files: Mapping[str, str]) -> bytes:
    """The bytes that identify a bundle; ``Bundle.sha256`` is their sha256."""
    return json.dumps(
        {"files": files, "manifest": manifest},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=False,
    ).encode("utf-8")


def _make_bundle(manifest: dict[str, Any], files: dict[str, str]) -> Bundle:
    files = {p: files[p] for p in sorted(files)}
    data = canonical_bytes(manifest, files)
    return Bundle(
        manifest=manifest, files=files, sha256=hashlib.sha256(data).hexdigest(), size=len(data)
    )


def _utf8_len(s: str) -> int:
    # surrogatepass: lone surrogates are reported later as not_utf8, not as a crash here.
    return len(s.encode("utf-8", "surrogatepass"))


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# --------------------------------------------------------------------------- paths


def _path_errors(path: object) -> list[dict[str, str]]:
    if not isinstance(path, str):
        return [
            _err("bad_bundle", "files", f"file names must be strings, got {type(path).__name__}")
        ]
    loc = _file_loc(path)
    if path == "":
        return [_err("bad_path", "files/", "file path is empty")]
    if len(path) > MAX_PATH_CHARS:
        return [
            _err("bad_path", loc, f"path is {len(path)} characters long (max {MAX_PATH_CHARS})")
        ]
    if _has_surrogate(path):
        return [_err("not_utf8", loc, "path is not valid Unicode (lone surrogate)")]
    bad = [ch for ch in path if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]
    if bad:
        what = "a NUL character" if "\x00" in bad else f"control character U+{ord(bad[0]):04X}"
        return [_err("bad_path", loc, f"path contains {what}")]
    if path.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", path):
        return [
            _err("absolute_path", loc, "path must be relative (no leading '/' or drive letter)")
        ]
    if "\\" in path:
        return [_err("bad_path", loc, "path contains a backslash; use '/' as the separator")]
    segments = path.split("/")
    if ".." in segments:
        return [_err("path_traversal", loc, "path contains a '..' segment")]
    if "" in segments:
        return [_err("bad_path", loc, "path has an empty segment (double or trailing '/')")]
    if "." in segments:
        return [_err("bad_path", loc, "path contains a '.' segment; write the path without './'")]
    if path.casefold() == MANIFEST_FILENAME or segments[0] == "__MACOSX":
        # manifest.json at the root would collide with the manifest in the zip form;
        # __MACOSX/ is dropped from zips, so allowing it in JSON would break round trips.
        return [
            _err("reserved_path", loc, f"'{_show(segments[0])}' is reserved at the bundle root")
        ]
    return []


def _path_conflicts(paths: Iterable[str]) -> list[dict[str, str]]:
    """Paths that would collide once written to a case-insensitive or normalizing disk,
    and files that are also used as directories."""
    errors: list[dict[str, str]] = []
    keys: dict[str, str] = {}
    for p in paths:
        key = unicodedata.normalize("NFC", p).casefold()
        if key in keys:
            errors.append(
                _err(
                    "duplicate_path",
                    _file_loc(p),
                    f"collides with '{_show(keys[key])}' "
                    "(paths must differ by more than letter case or Unicode normalization)",
                )
            )
        else:
            keys[key] = p
    for key, p in keys.items():
        parts = key.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in keys:
                errors.append(
                    _err(
                        "duplicate_path",
                        _file_loc(p),
                        f"'{_show(keys[prefix])}' is a file, so it cannot also be a directory",
                    )
                )
                break
    return errors


def _text_errors(path: str, text: str) -> list[dict[str, str]]:
    if _has_surrogate(text):
        pos = next(i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF)
        line = text.count("\n", 0, pos) + 1
        return [
            _err(
                "not_utf8",
                _file_loc(path, line),
                "text contains a lone surrogate (not valid Unicode)",
            )
        ]
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        return [
            _err(
                "binary_content",
                _file_loc(path, line),
                "text contains a NUL character (binary files are not allowed)",
            )
        ]
    return []


# --------------------------------------------------------------------------- manifest


def _suggest(word: str, options: Iterable[str]) -> str:
    match = difflib.get_close_matches(word, list(options), n=1, cutoff=0.75)
    return f"; did you mean '{match[0]}'?" if match else ""


def _host_problem(host: str) -> str | None:
    if "://" in host:
        return "must be a bare hostname, without a scheme like 'https://'"
    if "/" in host:
        return "must be a bare hostname, without a path"
    if "@" in host:
        return "must be a bare hostname, without credentials"
    if ":" in host:
        return "must be a bare hostname, without a port"
    if "*" in host:
        return "wildcards are not allowed; list each hostname"
    if not _HOST_RE.match(host):
        return "is not a valid public DNS hostname (like 'api.example.com')"
    return None


def _normalize_manifest(raw: object, files: Mapping[str, str]) -> tuple[dict[str, Any], list[dict]]:
    errors: list[dict[str, str]] = []
    if not isinstance(raw, Mapping):
        kind = type(raw).__name__
        return {}, [_err("bad_manifest", "manifest", f"manifest must be a JSON object, got {kind}")]

    for key in raw:
        if key not in _MANIFEST_KEYS:
            shown = _show(str(key))
            errors.append(
                _err(
                    "bad_manifest",
                    f"manifest.{shown}",
                    f"unknown manifest key '{shown}'{_suggest(str(key), _MANIFEST_KEYS)}",
                )
            )

    out: dict[str, Any] = {}

    name = raw.get("name")
    if name is None:
        errors.append(_err("bad_manifest", "manifest.name", "name is required"))
    elif not isinstance(name, str):
        errors.append(_err("bad_manifest", "manifest.name", "name must be a string"))
    else:
        name = name.strip()
        if not 1 <= len(name) <= MAX_NAME_CHARS:
            errors.append(
                _err(
                    "bad_manifest",
                    "manifest.name",
                    f"name must be 1 to {MAX_NAME_CHARS} characters, got {len(name)}",
                )
            )
        elif _has_surrogate(name) or any(
            unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name
        ):
            errors.append(_err("bad_manifest", "manifest.name", "name contains control characters"))
        else:
            out["name"] = name

    entry = raw.get("entry")
    if entry is None:
        errors.append(_err("bad_manifest", "manifest.entry", "entry is required"))
    elif not isinstance(entry, str):
        errors.append(_err("bad_manifest", "manifest.entry", "entry must be a string path"))
    else:
        if entry not in files:
            errors.append(
                _err(
                    "missing_entry",
                    "manifest.entry",
                    f"entry '{_show(entry)}' is not one of the bundle's files"
                    f"{_suggest(entry, files)}",
                )
            )
        out["entry"] = entry

    scopes = raw.get("scopes")
    if scopes is None:
        scopes = []
    if not isinstance(scopes, list):
        errors.append(_err("bad_manifest", "manifest.scopes", "scopes must be a list of strings"))
        scopes = []
    clean_scopes: set[str] = set()
    for i, scope in enumerate(scopes):
        loc = f"manifest.scopes[{i}]"
        if not isinstance(scope, str):
            errors.append(_err("bad_manifest", loc, "scope must be a string"))
        elif scope not in SCOPES:
            errors.append(
                _err(
                    "unknown_scope", loc, f"unknown scope '{_show(scope)}'{_suggest(scope, SCOPES)}"
                )
            )
        else:
            clean_scopes.add(scope)
    out["scopes"] = sorted(clean_scopes)

    hosts = raw.get("hosts")
    if hosts is None:
        hosts = []
    if not isinstance(hosts, list):
        errors.append(_err("bad_manifest", "manifest.hosts", "hosts must be a list of hostnames"))
        hosts = []
    clean_hosts: set[str] = set()
    for i, host in enumerate(hosts):
        loc = f"manifest.hosts[{i}]"
        if not isinstance(host, str):
            errors.append(_err("bad_host", loc, "host must be a string"))
            continue
        lowered = host.lower()
        problem = _host_problem(lowered)
        if problem:
            errors.append(_err("bad_host", loc, f"'{_show(host)}' {problem}"))
        else:
            clean_hosts.add(lowered)
    if len(clean_hosts) > MAX_HOSTS:
        errors.append(
            _err(
                "too_many_hosts",
                "manifest.hosts",
                f"{len(clean_hosts)} hosts listed (max {MAX_HOSTS})",
            )
        )
    out["hosts"] = sorted(clean_hosts)

    description = raw.get("description")
    if description is not None:
        if not isinstance(description, str):
            errors.append(
                _err("bad_manifest", "manifest.description", "description must be a string")
            )
        else:
            description = description.strip()
            if len(description) > MAX_DESCRIPTION_CHARS:
                errors.append(
                    _err(
                        "bad_manifest",
                        "manifest.description",
                        f"description is {len(description)} characters "
                        f"(max {MAX_DESCRIPTION_CHARS})",
                    )
                )
            elif description:
                out["description"] = description

    schema = raw.get("data_schema")
    if schema is not None:
        if not isinstance(schema, Mapping):
            errors.append(
                _err(
                    "bad_manifest",
                    "manifest.data_schema",
                    "data_schema must be a JSON object (a JSON Schema)",
                )
            )
        else:
            try:
                text = json.dumps(
                    schema,
                    sort_keys=True,
                    ensure_ascii=False,
                    separators=(",", ":"),
                    allow_nan=False,
                )
                size = len(text.encode("utf-8"))
            except (TypeError, ValueError, RecursionError, UnicodeEncodeError) as exc:
                errors.append(
                    _err(
                        "bad_manifest",
                        "manifest.data_schema",
                        f"data_schema is not plain JSON ({type(exc).__name__})",
                    )
                )
            else:
                if size > MAX_DATA_SCHEMA_BYTES:
                    errors.append(
                        _err(
                            "bad_manifest",
                            "manifest.data_schema",
                            f"data_schema is {size} bytes (max {MAX_DATA_SCHEMA_BYTES})",
                        )
                    )
                elif nesting_exceeds(text, MAX_DATA_SCHEMA_DEPTH):
                    errors.append(
                        _err(
                            "bad_manifest",
                            "manifest.data_schema",
                            f"data_schema nests more than {MAX_DATA_SCHEMA_DEPTH} levels deep",
                        )
                    )
                else:
                    # Round trip detaches the caller's object and turns tuples into lists.
                    out["data_schema"] = json.loads(text)
    unstorable = first_unstorable(out, "manifest")
    if unstorable is not None:
        errors.append(_err("bad_manifest", *unstorable))
    return out, errors


# --------------------------------------------------------------------------- building


def _build(raw_manifest: object, files: Mapping[str, str], *, source: str) -> Bundle:
    """Shared tail of both wire formats: caps, paths, texts, manifest."""
    if len(files) > MAX_FILES:
        detail = f"{source} has {len(files)} files (max {MAX_FILES})"
        raise BundleError(
            "too_many_files", detail, status=413, errors=[_err("too_many_files", "files", detail)]
        )
    files_bytes = sum(_utf8_len(p) + _utf8_len(t) for p, t in files.items())
    if files_bytes > MAX_BUNDLE_BYTES:
        raise _too_large(f"files total {files_bytes} bytes (max {MAX_BUNDLE_BYTES})", "files")

    errors: list[dict[str, Any]] = []
    for path, text in files.items():
        path_errs = _path_errors(path)
        errors.extend(path_errs)
        if not path_errs:
            errors.extend(_text_errors(path, text))
    if not errors:
        errors.extend(_path_conflicts(files))
    _raise_collected(errors)

    manifest, errors = _normalize_manifest(raw_manifest, files)
    _raise_collected(errors)

    total = files_bytes + len(canonical_bytes(manifest, {}))
    if total > MAX_BUNDLE_BYTES:
        raise _too_large(f"bundle totals {total} bytes with its manifest (max {MAX_BUNDLE_BYTES})")
    return _make_bundle(manifest, dict(files))


def bundle_from_json(obj: object) -> Bundle:
    """Validate a parsed JSON body ``{"manifest": {...}, "files": {path: text}}``."""
    if not isinstance(obj, Mapping):
        raise BundleError(
            "bad_bundle",
            "bundle must be a JSON object with 'manifest' and 'files'",
            errors=[_err("bad_bundle", "", "expected a JSON object")],
        )
    errors = [
        _err(
            "bad_bundle",
            _show(str(k)),
            f"unknown top-level key '{_show(str(k))}'{_suggest(str(k), _BUNDLE_KEYS)}",
        )
        for k in obj
        if k not in _BUNDLE_KEYS
    ]
    errors += [_err("bad_bundle", k, f"'{k}' is required") for k in _BUNDLE_KEYS if k not in obj]
    files = obj.get("files")
    if "files" in obj and not isinstance(files, Mapping):
        errors.append(_err("bad_bundle", "files", "files must be an object mapping paths to text"))
    _raise_collected(errors)
    assert isinstance(files, Mapping)
    if len(files) > MAX_FILES:
        # Before the per-file type checks so a huge map is refused cheaply.
        detail = f"bundle has {len(files)} files (max {MAX_FILES})"
        raise BundleError(
            "too_many_files", detail, status=413, errors=[_err("too_many_files", "files", detail)]
        )
    errors = [
        _err("bad_bundle", "files", f"file names must be strings, got {type(p).__name__}")
        for p in files
        if not isinstance(p, str)
    ]
    errors += [
        _err("bad_bundle", _file_loc(p), f"file content must be a string, got {type(t).__name__}")
        for p, t in files.items()
        if isinstance(p, str) and not isinstance(t, str)
    ]
    _raise_collected(errors)
    return _build(obj["manifest"], files, source="bundle")


def bundle_from_canonical(data: bytes) -> Bundle:
    """Re-load a bundle from stored canonical bytes, revalidating it."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BundleError("bad_bundle", f"stored bundle is not valid JSON: {exc}") from exc
    return bundle_from_json(obj)


# --------------------------------------------------------------------------- zip


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
        raise _too_large(f"zip is larger than {MAX_ZIP_BYTES} bytes")
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
            raise _too_large(
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
                "zip_bomb", detail, status=413, errors=[_err("zip_bomb", loc, detail)]
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
            f"{_file_loc(path)} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); only text files are allowed"
        )
        raise BundleError(
            "not_utf8", detail, errors=[_err("not_utf8", _file_loc(path, line), detail)]
        ) from exc


def _parse_manifest_json(data: bytes) -> object:
    def no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ValueError(f"duplicate key '{_show(k)}'")
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
            errors=[_err("bad_manifest", MANIFEST_FILENAME, "not UTF-8 text")],
        ) from exc
    if nesting_exceeds(text):
        msg = f"nested more than {MAX_JSON_DEPTH} levels deep"
        raise BundleError(
            "bad_manifest",
            f"{MANIFEST_FILENAME}: {msg}",
            errors=[_err("bad_manifest", MANIFEST_FILENAME, msg)],
        )
    try:
        return json.loads(text, object_pairs_hook=no_dupes, parse_constant=no_constants)
    except json.JSONDecodeError as exc:
        loc = f"{MANIFEST_FILENAME}:{exc.lineno}"
        raise BundleError(
            "bad_manifest",
            f"{loc}: invalid JSON ({exc.msg})",
            errors=[_err("bad_manifest", loc, f"invalid JSON: {exc.msg}")],
        ) from exc
    except ValueError as exc:
        msg = str(exc)
        raise BundleError(
            "bad_manifest",
            f"{MANIFEST_FILENAME}: {msg}",
            errors=[_err("bad_manifest", MANIFEST_FILENAME, msg)],
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
            "too_many_files", detail, status=413, errors=[_err("too_many_files", "", detail)]
        )

    # Structure is checked for every entry before any member is decompressed.
    errors: list[dict[str, Any]] = []
    members: list[tuple[str, zipfile.ZipInfo]] = []
    seen: set[str] = set()
    manifest_info: zipfile.ZipInfo | None = None
    for info in infos:
        name = _member_name(info)
        loc = _file_loc(name)
        if _is_symlink(info):
            errors.append(_err("symlink", loc, "symlinks are not allowed in bundles"))
            continue
        if name.endswith("/"):
            continue
        if name.startswith("__MACOSX/"):
            continue  # Finder's AppleDouble metadata, never app content.
        if name in seen:
            errors.append(_err("duplicate_path", loc, "the zip holds this name more than once"))
            continue
        seen.add(name)
        if info.flag_bits & 0x1:
            errors.append(_err("bad_zip", loc, "encrypted entries are not supported"))
            continue
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            errors.append(
                _err(
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
        path_errs = _path_errors(name)
        if path_errs:
            errors.extend(path_errs)
            continue
        members.append((name, info))
    _raise_collected(errors)

    if len(members) > MAX_FILES:
        detail = f"zip has {len(members)} files besides manifest.json (max {MAX_FILES})"
        raise BundleError(
            "too_many_files", detail, status=413, errors=[_err("too_many_files", "files", detail)]
        )
    if manifest_info is None:
        nested = sorted(n for n in seen if n.endswith("/" + MANIFEST_FILENAME))
        hint = (
            f"; found '{_show(nested[0])}' — zip the folder's contents, not the folder"
            if nested
            else ""
        )
        msg = f"the zip has no {MANIFEST_FILENAME} at its root{hint}"
        raise BundleError(
            "bad_manifest", msg, errors=[_err("bad_manifest", MANIFEST_FILENAME, msg)]
        )

    to_read = [(MANIFEST_FILENAME, manifest_info), *members]
    starts = {}
    for name, info in to_read:
        starts[name] = _data_start(raw, info, _file_loc(name))
    # Several directory entries pointing at one compressed blob is the
    # "overlapping files" bomb; honest zips never share bytes between members.
    spans = sorted(
        (info.header_offset, starts[name] + info.compress_size, name) for name, info in to_read
    )
    for (_, end, name), (nxt_off, _, _) in itertools.pairwise(spans):
        if end > nxt_off:
            raise _bad_zip("zip entries overlap", _file_loc(name))

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
        loc = _file_loc(name)
        files[name] = _decode_member(name, _read_member(raw, info, starts[name], budget, loc))
    return _build(raw_manifest, files, source="zip")


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
    if _utf8_len(manifest) > MAX_MANIFEST_JSON_BYTES:  # a deeply nested data_schema
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


# --------------------------------------------------------------------------- scans


@dataclass(frozen=True)
class Finding:
    """Something in a bundle that must not be published. ``masked`` never holds the
    full value."""

    kind: str
    location: str
    masked: str


class _Lines:
    """Lazy offset -> line number map; most scans find nothing and never build it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._nl: list[int] | None = None

    def line(self, pos: int) -> int:
        if self._nl is None:
            self._nl = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._nl, pos) + 1


def _manifest_strings(value: Any, path: str = "manifest") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)
            sub = f"{path}.{k}" if plain else f"{path}[{json.dumps(k)}]"
            yield sub, k
            yield from _manifest_strings(v, sub)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _manifest_strings(v, f"{path}[{i}]")


def _targets(
    bundle: Bundle | None, listing: Mapping[str, str] | None
) -> Iterator[tuple[str, str, bool]]:
    """(location prefix, text, has line numbers) for every scanned string: the listing's text
    (title, summary, story, …, located by field name), then the bundle's manifest and files."""
    for field, text in (listing or {}).items():
        if text:
            yield field, text, False
    if bundle is None:
        return
    for loc, s in _manifest_strings(bundle.manifest):
        yield loc, s, False
    for path, text in bundle.files.items():
        yield _file_loc(path), text, True


def _finding_location(prefix: str, lines: _Lines | None, pos: int) -> str:
    return f"{prefix}:{lines.line(pos)}" if lines is not None else prefix


_SEP = r"[ \t\u00a0.\-()]{0,3}"
_PHONE_SEPS = " \t\u00a0.-()+"
_PHONE_STRIP = str.maketrans("", "", " \t\u00a0.-()")
_DIGITS = "0123456789"
_WORD = re.compile(r"\w")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lowered(text: str) -> str:
    """Lowercase copy with the same length, so match offsets apply to ``text``.

    Case-sensitive literal patterns on a lowered copy are ~10x faster than
    re.IGNORECASE, which disables the regex engine's literal-prefix search.
    str.lower() only grows for U+0130; fall back to ASCII-only folding there.
    """
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _mask_email(value: str) -> str:
    local, _, domain = value.partition("@")
    return f"{local[:1]}***@{domain}"


def _mask_words(value: str) -> str:
    return " ".join(f"{w[:1]}***" for w in value.split())


def _mask_phone(digits: str) -> str:
    return "*" * (len(digits) - 2) + digits[-2:]


@dataclass(frozen=True)
class _Matcher:
    kind: str
    regex: re.Pattern[str]  # run on _lowered(text) unless phone
    masked: str
    ok: Callable[[str, re.Match[str]], bool]  # boundary check against the original text
    phone_tail: str | None = None  # digits that must appear once separators are removed


def _phone_matcher(kind: str, value: str) -> _Matcher | None:
    digits = re.sub(r"[^0-9]", "", value)[-15:]
    if len(digits) < 7:
        return None
    head, tail = digits[:-7], digits[-7:]
    pat = ""
    for d in head:
        # Nested optional groups: only a contiguous run of the leading digits (right
        # before the mandatory last seven) may appear, so "123-4567" matches
        # "+1 555 123 4567" but "555 4567" does not.
        pat = f"(?:{pat}{d}{_SEP})?"
    regex = re.compile(r"\+?" + pat + _SEP.join(tail) + r"(?![0-9])")

    def ok(text: str, m: re.Match[str]) -> bool:
        if sum(c in _DIGITS for c in m.group()) == len(digits):
            return True  # whole number present; digits before it are a country code
        i = m.start() - 1
        while i >= 0 and text[i] in _PHONE_SEPS:
            i -= 1
        # A partial match glued to other digits is a different number.
        return not (i >= 0 and text[i] in _DIGITS)

    return _Matcher(kind, regex, _mask_phone(digits), ok, phone_tail=tail)


def _email_matcher(kind: str, value: str) -> _Matcher:
    def ok(text: str, m: re.Match[str]) -> bool:
        before = text[m.start() - 1 : m.start()]
        after = text[m.end() : m.end() + 2]
        if before and (before.isalnum() or before in "._%+-"):
            return False
        if after[:1] and (after[0].isalnum() or after[0] in "-_"):
            return False
        # "jane@example.com.au" is someone else's address.
        return not (after[:1] == "." and after[1:2].isalnum())

    return _Matcher(kind, re.compile(re.escape(value.lower())), _mask_email(value), ok)


def _words_matcher(kind: str, words: list[str]) -> _Matcher:
    def ok(text: str, m: re.Match[str]) -> bool:
        before = text[m.start() - 1 : m.start()]
        after = text[m.end() : m.end() + 1]
        return not (before and _WORD.match(before)) and not (after and _WORD.match(after))

    regex = re.compile(r"\s+".join(re.escape(w.lower()) for w in words))
    return _Matcher(kind, regex, _mask_words(" ".join(words)), ok)


def _personal_matcher(key: str, value: str) -> _Matcher | None:
    """How to look for one profile value, or None when it is too short to search for
    without false alarms ("Al")."""
    lowered_key = key.lower()
    if "phone" in lowered_key or "mobile" in lowered_key or lowered_key in ("tel", "telephone"):
        return _phone_matcher(key, value)
    words = value.split()
    normalized = " ".join(words)
    if len(normalized) < 4:
        return None
    if "email" in lowered_key or ("@" in normalized and len(words) == 1):
        return _email_matcher(key, normalized)
    return _words_matcher(key, words)


def find_personal_values(
    bundle: Bundle | None,
    values: Mapping[str, str | None],
    listing: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Find the publisher's own profile values (email, phone, name, address, ...)
    in file contents, manifest strings and ``listing`` texts. A finding's ``kind`` is the key in
    ``values``: emails match exactly, phones on their digits with separators,
    anything else as whole words with any whitespace between them."""
    matchers = [
        m
        for key, value in values.items()
        if isinstance(value, str) and (m := _personal_matcher(key, value)) is not None
    ]
    findings: list[Finding] = []
    if not matchers:
        return findings
    seen: set[tuple[str, str]] = set()
    for prefix, text, numbered in _targets(bundle, listing):
        lines = _Lines(text) if numbered else None
        low: str | None = None
        compact: str | None = None
        for matcher in matchers:
            if matcher.phone_tail is not None:
                if compact is None:
                    compact = text.translate(_PHONE_STRIP)
                if matcher.phone_tail not in compact:
                    continue  # the regex has no literal prefix; skip it when it cannot match
                haystack = text
            else:
                if low is None:
                    low = _lowered(text)
                haystack = low
            for m in matcher.regex.finditer(haystack):
                if not matcher.ok(text, m):
                    continue
                loc = _finding_location(prefix, lines, m.start())
                if (matcher.kind, loc) in seen:
                    continue
                seen.add((matcher.kind, loc))
                findings.append(Finding(matcher.kind, loc, matcher.masked))
                if len(findings) >= MAX_FINDINGS:
                    return findings
    return findings


# Every secret pattern starts with a literal so the regex engine can jump between
# candidates; the boundary before the literal is checked in Python for the same
# reason. Measured on a 2 MiB bundle: a few milliseconds per pattern.
_SECRET_PATTERNS: tuple[tuple[str, str, re.Pattern[str], int], ...] = (
    # (kind, label, pattern, length of the public prefix kept when masking)
    (
        "aws_access_key_id",
        "AWS access key id",
        re.compile(r"AKIA[0-9A-Z]{16}(?![0-9A-Za-z])"),
        4,
    ),
    (
        "aws_access_key_id",
        "AWS access key id",
        re.compile(r"ASIA[0-9A-Z]{16}(?![0-9A-Za-z])"),
        4,
    ),
    (
        "private_key",
        "private key (PEM block)",
        re.compile(r"-----BEGIN[ A-Z0-9]{0,20} PRIVATE KEY(?: BLOCK)?-----"),
        -1,
    ),
    (
        "github_token",
        "GitHub token",
        re.compile(r"gh[pousr]_[A-Za-z0-9]{36,255}(?![A-Za-z0-9_])"),
        4,
    ),
    (
        "github_token",
        "GitHub token",
        re.compile(r"github_pat_[A-Za-z0-9_]{22,255}(?![A-Za-z0-9_])"),
        11,
    ),
    (
        "stripe_live_key",
        "Stripe live key",
        re.compile(r"sk_live_[0-9A-Za-z]{10,247}(?![0-9A-Za-z])"),
        8,
    ),
    (
        "stripe_live_key",
        "Stripe live key",
        re.compile(r"rk_live_[0-9A-Za-z]{10,247}(?![0-9A-Za-z])"),
        8,
    ),
    (
        "slack_token",
        "Slack token",
        re.compile(r"xox[abprs]-[0-9A-Za-z-]{10,250}(?![0-9A-Za-z-])"),
        5,
    ),
    (
        "google_api_key",
        "Google API key",
        re.compile(r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
        4,
    ),
    (
        "openai_api_key",
        "OpenAI-style API key (sk-…)",
        re.compile(r"sk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_\-]{20,250}(?![A-Za-z0-9_\-])"),
        3,
    ),
)
# Run on _lowered(text): a keyword, an assignment, then a quoted opaque value.
_GENERIC_SECRET = re.compile(
    r"(?:api[_-]?key|secret|token|passw(?:or)?d|access[_-]?key|private[_-]?key)"
    r"[a-z0-9_]{0,30}+[\"']?\s{0,5}+(?::=|=|:)\s{0,5}+[\"'`]([a-z0-9+/=_\-.~]{16,256})[\"'`]"
)
_PLACEHOLDER = re.compile(r"your|example|placeholder|changeme|dummy|sample|xxxx|redacted")
SECRET_KINDS: dict[str, str] = {kind: label for kind, label, _, _ in _SECRET_PATTERNS}
SECRET_KINDS["generic_secret"] = "hard-coded secret assignment"  # noqa: S105 - a label


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _mask_secret(token: str, keep_prefix: int) -> str:
    if keep_prefix < 0:  # a PEM header names the key type and nothing secret
        return token
    rest = token[keep_prefix:]
    return f"{token[:keep_prefix]}…{rest[-4:]}" if len(rest) >= 16 else f"{token[:keep_prefix]}…"


def _is_generic_secret(value: str) -> bool:
    if "://" in value or _PLACEHOLDER.search(value.lower()):
        return False
    # Storage keys and CSS names ("sprigSessionToken") are letters only; real
    # credentials are random enough to contain digits and to score high entropy.
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    # Hex has only 16 symbols, so even a random hex key tops out near 4 bits/char.
    threshold = 3.0 if all(c in string.hexdigits for c in value) else 3.5
    return _entropy(value) >= threshold


def _mixed_case_and_digit(token: str) -> bool:
    # Separates "sk-proj-Zx81Kq..." from CSS/ids like "sk-button-primary-large".
    body = token[3:]
    return (
        any(c.isdigit() for c in body)
        and any(c.isupper() for c in body)
        and any(c.islower() for c in body)
    )


def find_secrets(bundle: Bundle | None, listing: Mapping[str, str] | None = None) -> list[Finding]:
    """Find obvious credentials (see :data:`SECRET_KINDS`) in files, manifest strings and
    ``listing`` texts."""
    findings: list[Finding] = []
    for prefix, text, numbered in _targets(bundle, listing):
        lines = _Lines(text) if numbered else None
        spans: list[tuple[int, int]] = []
        for kind, _label, regex, keep in _SECRET_PATTERNS:
            for m in regex.finditer(text):
                start = m.start()
                if start and (text[start - 1].isalnum() or text[start - 1] in "_-"):
                    continue
                if kind == "openai_api_key" and not _mixed_case_and_digit(m.group()):
                    continue
                if any(a <= start < b for a, b in spans):
                    continue  # e.g. an sk- key inside a longer token already reported
                spans.append((start, m.end()))
                loc = _finding_location(prefix, lines, start)
                findings.append(Finding(kind, loc, _mask_secret(m.group(), keep)))
                if len(findings) >= MAX_FINDINGS:
                    return findings
        for m in _GENERIC_SECRET.finditer(_lowered(text)):
            start, end = m.span(1)
            if any(a < end and start < b for a, b in spans):
                continue
            value = text[start:end]
            if _is_generic_secret(value):
                loc = _finding_location(prefix, lines, start)
                findings.append(Finding("generic_secret", loc, _mask_secret(value, 0)))
                if len(findings) >= MAX_FINDINGS:
                    return findings
    return findings


_PERSONAL_LABELS = {
    "email": "email address",
    "phone": "phone number",
    "name": "name",
    "address": "postal address",
}


def check_publishable(
    bundle: Bundle | None,
    personal_values: Mapping[str, str | None],
    listing: Mapping[str, str] | None = None,
) -> None:
    """Raise BundleError(422) if the bundle, or the text published beside it (``listing``:
    field name → text, such as the title, summary and story), holds a secret or the
    publisher's personal data.

    Secrets take precedence for ``code``; ``errors`` lists every finding either way.
    """
    secrets = find_secrets(bundle, listing)
    personal = find_personal_values(bundle, personal_values, listing)
    if not secrets and not personal:
        return
    errors = [
        {
            "location": f.location,
            "code": "secret",
            "kind": f.kind,
            "message": f"contains a {SECRET_KINDS.get(f.kind, f.kind)} ({f.masked}); "
            "remove it and have users supply credentials at run time",
        }
        for f in secrets
    ] + [
        {
            "location": f.location,
            "code": "personal_data",
            "kind": f.kind,
            "message": f"contains your {_PERSONAL_LABELS.get(f.kind, f.kind)} ({f.masked}) "
            "from your profile; remove it before publishing",
        }
        for f in personal
    ]
    code = "secret" if secrets else "personal_data"
    n = len(errors)
    detail = f"{errors[0]['location']}: {errors[0]['message']}" + (
        f" (and {n - 1} more finding{'s' if n > 2 else ''})" if n > 1 else ""
    )
    raise BundleError(code, detail, status=422, errors=errors)


# --------------------------------------------------------------------------- diff


def _split_lines(text: str) -> list[str]:
    # str.splitlines() also breaks on \r, \x0c, U+2028...; diffs must agree with git,
    # which only knows "\n".
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _file_diff(path: str, old: str, new: str, budget: int) -> tuple[str, bool, int, int]:
    out: list[str] = []
    used = 0
    truncated = False
    added = removed = 0
    lines = difflib.unified_diff(
        _split_lines(old), _split_lines(new), fromfile=f"a/{path}", tofile=f"b/{path}", n=3
    )
    for i, line in enumerate(lines):
        # The first two lines are the ---/+++ headers; counting by prefix alone
        # would miscount an added line that itself starts with "++".
        if i >= 2 and line.startswith("+"):
            added += 1
        elif i >= 2 and line.startswith("-"):
            removed += 1
        if truncated:
            continue
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        size = _utf8_len(line)
        if used + size > budget:
            truncated = True
            continue
        out.append(line)
        used += size
    return "".join(out), truncated, added, removed


def diff_bundles(old: Bundle | None, new: Bundle) -> dict[str, Any]:
    """Describe what changed from ``old`` to ``new`` (``old=None``: a root, all added)."""
    old_files = old.files if old is not None else {}
    old_manifest = old.manifest if old is not None else {}
    entries: list[dict[str, Any]] = []
    stats = {
        "files_added": 0,
        "files_removed": 0,
        "files_modified": 0,
        "lines_added": 0,
        "lines_removed": 0,
    }
    remaining = MAX_DIFF_TOTAL_BYTES
    for path in sorted(set(old_files) | set(new.files)):
        before, after = old_files.get(path), new.files.get(path)
        if before == after:
            continue
        if before is None:
            status = "added"
        elif after is None:
            status = "removed"
        else:
            status = "modified"
        stats[f"files_{status}"] += 1
        text, truncated, added, removed = _file_diff(
            path, before or "", after or "", min(MAX_DIFF_BYTES, remaining)
        )
        remaining -= _utf8_len(text)
        stats["lines_added"] += added
        stats["lines_removed"] += removed
        entries.append({"path": path, "status": status, "diff": text, "truncated": truncated})

    def listed(manifest: Mapping[str, Any], key: str) -> set[str]:
        return set(manifest.get(key, ()))

    manifest = {
        "scopes_added": sorted(listed(new.manifest, "scopes") - listed(old_manifest, "scopes")),
        "scopes_removed": sorted(listed(old_manifest, "scopes") - listed(new.manifest, "scopes")),
        "hosts_added": sorted(listed(new.manifest, "hosts") - listed(old_manifest, "hosts")),
        "hosts_removed": sorted(listed(old_manifest, "hosts") - listed(new.manifest, "hosts")),
        "entry_changed": old_manifest.get("entry") != new.manifest.get("entry"),
        "name_changed": old_manifest.get("name") != new.manifest.get("name"),
        "description_changed": old_manifest.get("description") != new.manifest.get("description"),
        "data_schema_changed": old_manifest.get("data_schema") != new.manifest.get("data_schema"),
    }
    return {"files": entries, "manifest": manifest, "stats": stats}
