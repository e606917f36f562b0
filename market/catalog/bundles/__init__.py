"""Sub-agent bundles: the normalized :class:`Bundle`, its canonical bytes, and building one.

A bundle is a manifest plus UTF-8 text files written by a coding agent. It arrives
either as JSON (``{"manifest": {...}, "files": {path: text}}``) or as a zip whose root
holds ``manifest.json`` next to the files. Both are reduced to the same normalized
:class:`Bundle`, whose canonical bytes (and so whose sha256) do not depend on the wire
format, the key order or the zip layout.

The package is deliberately pure (no Flask, no database): the HTTP layer turns
``limits.BundleError`` into an ``application/problem+json`` response with ``status``.
Each name is defined in one module and imported from there:

- here: :class:`Bundle`, :func:`canonical_bytes`, :func:`bundle_from_json`,
  :func:`bundle_from_canonical` and :func:`build_bundle`, the checks both wire formats share;
- ``limits``: the caps, ``BundleError`` and the wording of its messages;
- ``files``: what a file's path and text may be;
- ``manifest``: the scope vocabulary and the manifest's normalization;
- ``archive``: the zip wire format, read as a stream (``bundle_from_zip``, ``bundle_to_zip``);
- ``scan``: secrets and the publisher's personal data (``check_publishable``);
- ``diff``: what changed between two bundles (``diff_bundles``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from market.catalog.bundles.files import path_conflicts, path_errors, text_errors
from market.catalog.bundles.limits import (
    MAX_BUNDLE_BYTES,
    MAX_FILES,
    BundleError,
    did_you_mean,
    error_item,
    file_location,
    printable,
    raise_collected,
    too_large,
    utf8_len,
)
from market.catalog.bundles.manifest import normalize_manifest

__all__ = [
    "Bundle",
    "build_bundle",
    "bundle_from_canonical",
    "bundle_from_json",
    "canonical_bytes",
]

_BUNDLE_KEYS = ("manifest", "files")

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


# --------------------------------------------------------------------------- building


def build_bundle(raw_manifest: object, files: Mapping[str, str], *, source: str) -> Bundle:
    """Shared tail of both wire formats: caps, paths, texts, manifest."""
    if len(files) > MAX_FILES:
        detail = f"{source} has {len(files)} files (max {MAX_FILES})"
        raise BundleError(
            "too_many_files",
            detail,
            status=413,
            errors=[error_item("too_many_files", "files", detail)],
        )
    files_bytes = sum(utf8_len(p) + utf8_len(t) for p, t in files.items())
    if files_bytes > MAX_BUNDLE_BYTES:
        raise too_large(f"files total {files_bytes} bytes (max {MAX_BUNDLE_BYTES})", "files")

    errors: list[dict[str, Any]] = []
    for path, text in files.items():
        path_errs = path_errors(path)
        errors.extend(path_errs)
        if not path_errs:
            errors.extend(text_errors(path, text))
    if not errors:
        errors.extend(path_conflicts(files))
    raise_collected(errors)

    manifest, errors = normalize_manifest(raw_manifest, files)
    raise_collected(errors)

    total = files_bytes + len(canonical_bytes(manifest, {}))
    if total > MAX_BUNDLE_BYTES:
        raise too_large(f"bundle totals {total} bytes with its manifest (max {MAX_BUNDLE_BYTES})")
    return _make_bundle(manifest, dict(files))


def bundle_from_json(obj: object) -> Bundle:
    """Validate a parsed JSON body ``{"manifest": {...}, "files": {path: text}}``."""
    if not isinstance(obj, Mapping):
        raise BundleError(
            "bad_bundle",
            "bundle must be a JSON object with 'manifest' and 'files'",
            errors=[error_item("bad_bundle", "", "expected a JSON object")],
        )
    errors = [
        error_item(
            "bad_bundle",
            printable(str(k)),
            f"unknown top-level key '{printable(str(k))}'{did_you_mean(str(k), _BUNDLE_KEYS)}",
        )
        for k in obj
        if k not in _BUNDLE_KEYS
    ]
    errors += [
        error_item("bad_bundle", k, f"'{k}' is required") for k in _BUNDLE_KEYS if k not in obj
    ]
    files = obj.get("files")
    if "files" in obj and not isinstance(files, Mapping):
        errors.append(
            error_item("bad_bundle", "files", "files must be an object mapping paths to text")
        )
    raise_collected(errors)
    assert isinstance(files, Mapping)
    if len(files) > MAX_FILES:
        # Before the per-file type checks so a huge map is refused cheaply.
        detail = f"bundle has {len(files)} files (max {MAX_FILES})"
        raise BundleError(
            "too_many_files",
            detail,
            status=413,
            errors=[error_item("too_many_files", "files", detail)],
        )
    errors = [
        error_item("bad_bundle", "files", f"file names must be strings, got {type(p).__name__}")
        for p in files
        if not isinstance(p, str)
    ]
    errors += [
        error_item(
            "bad_bundle", file_location(p), f"file content must be a string, got {type(t).__name__}"
        )
        for p, t in files.items()
        if isinstance(p, str) and not isinstance(t, str)
    ]
    raise_collected(errors)
    return build_bundle(obj["manifest"], files, source="bundle")


def bundle_from_canonical(data: bytes) -> Bundle:
    """Re-load a bundle from stored canonical bytes, revalidating it."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BundleError("bad_bundle", f"stored bundle is not valid JSON: {exc}") from exc
    return bundle_from_json(obj)
