"""What a bundle's files may be called and hold: relative, portable paths and UTF-8 text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from market.catalog.bundles.limits import (
    MAX_PATH_CHARS,
    error_item,
    file_location,
    has_surrogate,
    printable,
)
from market.catalog.bundles.manifest import MANIFEST_FILENAME


def path_errors(path: object) -> list[dict[str, str]]:
    if not isinstance(path, str):
        return [
            error_item(
                "bad_bundle", "files", f"file names must be strings, got {type(path).__name__}"
            )
        ]
    loc = file_location(path)
    if path == "":
        return [error_item("bad_path", "files/", "file path is empty")]
    if len(path) > MAX_PATH_CHARS:
        return [
            error_item(
                "bad_path", loc, f"path is {len(path)} characters long (max {MAX_PATH_CHARS})"
            )
        ]
    if has_surrogate(path):
        return [error_item("not_utf8", loc, "path is not valid Unicode (lone surrogate)")]
    bad = [ch for ch in path if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]
    if bad:
        what = "a NUL character" if "\x00" in bad else f"control character U+{ord(bad[0]):04X}"
        return [error_item("bad_path", loc, f"path contains {what}")]
    if path.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", path):
        return [
            error_item(
                "absolute_path", loc, "path must be relative (no leading '/' or drive letter)"
            )
        ]
    if "\\" in path:
        return [error_item("bad_path", loc, "path contains a backslash; use '/' as the separator")]
    segments = path.split("/")
    if ".." in segments:
        return [error_item("path_traversal", loc, "path contains a '..' segment")]
    if "" in segments:
        return [error_item("bad_path", loc, "path has an empty segment (double or trailing '/')")]
    if "." in segments:
        return [
            error_item("bad_path", loc, "path contains a '.' segment; write the path without './'")
        ]
    if path.casefold() == MANIFEST_FILENAME or segments[0] == "__MACOSX":
        # manifest.json at the root would collide with the manifest in the zip form;
        # __MACOSX/ is dropped from zips, so allowing it in JSON would break round trips.
        return [
            error_item(
                "reserved_path", loc, f"'{printable(segments[0])}' is reserved at the bundle root"
            )
        ]
    return []


def path_conflicts(paths: Iterable[str]) -> list[dict[str, str]]:
    """Paths that would collide once written to a case-insensitive or normalizing disk,
    and files that are also used as directories."""
    errors: list[dict[str, str]] = []
    keys: dict[str, str] = {}
    for p in paths:
        key = unicodedata.normalize("NFC", p).casefold()
        if key in keys:
            errors.append(
                error_item(
                    "duplicate_path",
                    file_location(p),
                    f"collides with '{printable(keys[key])}' "
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
                    error_item(
                        "duplicate_path",
                        file_location(p),
                        f"'{printable(keys[prefix])}' is a file, so it cannot also be a directory",
                    )
                )
                break
    return errors


def text_errors(path: str, text: str) -> list[dict[str, str]]:
    if has_surrogate(text):
        pos = next(i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF)
        line = text.count("\n", 0, pos) + 1
        return [
            error_item(
                "not_utf8",
                file_location(path, line),
                "text contains a lone surrogate (not valid Unicode)",
            )
        ]
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        return [
            error_item(
                "binary_content",
                file_location(path, line),
                "text contains a NUL character (binary files are not allowed)",
            )
        ]
    return []
