"""What a bundle may weigh and hold, and the error that refuses one.

Every cap lives here, whichever check enforces it. :class:`BundleError` carries the
problems found as ``{"location", "message", "code"}`` items; the helpers below word those
messages the same way for every check.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "MAX_BUNDLE_BYTES",
    "MAX_COMPRESSION_RATIO",
    "MAX_DATA_MIGRATION_BYTES",
    "MAX_DATA_SAMPLES",
    "MAX_DATA_SAMPLES_BYTES",
    "MAX_DATA_SCHEMA_BYTES",
    "MAX_DIFF_BYTES",
    "MAX_DIFF_TOTAL_BYTES",
    "MAX_FILES",
    "MAX_HOSTS",
    "MAX_PATH_CHARS",
    "MAX_ZIP_BYTES",
    "MAX_ZIP_ENTRIES",
    "BundleError",
]

# --------------------------------------------------------------------------- caps

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
# A fork's declared migration from its parent's schema: a field mapping, no bigger than a schema.
MAX_DATA_MIGRATION_BYTES = 32 * 1024
# Sample records the publisher gives for the migration check at fork: a few per value worth
# showing (an old enum value each, a missing field), not a data set.
MAX_DATA_SAMPLES = 50
MAX_DATA_SAMPLES_BYTES = 64 * 1024
# Checking a migration against its samples validates them with the schemas' ``pattern``s, which
# Python's backtracking ``re`` runs: a hostile pattern could take hours on one sample. The check
# runs in a child process that is killed after this long (market.catalog.schema_checks); a real
# check of 50 small records takes milliseconds.
MIGRATION_CHECK_SECONDS = 2.0
MAX_DIFF_BYTES = 200 * 1024
# A bundle can hold 200 files; without an overall cap one diff response could
# reach 200 x MAX_DIFF_BYTES.
MAX_DIFF_TOTAL_BYTES = 1024 * 1024
# Keeps problem+json bodies small when an upload is wrong everywhere.
MAX_ERRORS = 50
MAX_FINDINGS = 100

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


def error_item(code: str, location: str, message: str) -> dict[str, str]:
    return {"location": location, "message": message, "code": code}


def raise_collected(errors: list[dict[str, Any]]) -> None:
    """Raise one BundleError for all collected problems; the first one names the code."""
    if not errors:
        return
    first = errors[0]
    where = f"{first['location']}: " if first["location"] else ""
    detail = f"{where}{first['message']}"
    if len(errors) > 1:
        detail += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    raise BundleError(first["code"], detail, status=422, errors=errors)


def too_large(detail: str, location: str = "") -> BundleError:
    return BundleError(
        "too_large", detail, status=413, errors=[error_item("too_large", location, detail)]
    )


# --------------------------------------------------------------------------- messages and text


def printable(value: str, limit: int = 60) -> str:
    """Make untrusted text safe to echo in a message: escape invisibles, truncate."""
    out = []
    for ch in value[:limit]:
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out) + ("…" if len(value) > limit else "")


def file_location(path: str, line: int | None = None) -> str:
    loc = f"files/{printable(path, MAX_PATH_CHARS)}"
    return f"{loc}:{line}" if line is not None else loc


def did_you_mean(word: str, options: Iterable[str]) -> str:
    match = difflib.get_close_matches(word, list(options), n=1, cutoff=0.75)
    return f"; did you mean '{match[0]}'?" if match else ""


def utf8_len(s: str) -> int:
    # surrogatepass: lone surrogates are reported later as not_utf8, not as a crash here.
    return len(s.encode("utf-8", "surrogatepass"))


def has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
