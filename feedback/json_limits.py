"""Limits every JSON input shares, wherever it enters: request bodies, zip manifests, usage
events. Pure (no I/O), so the bundle checks and the event validator ask the same rules.

- **Depth.** Python's ``json`` recurses once per nesting level: 100,000 brackets raise
  RecursionError, and a few hundred already break serializing the value back out. The depth
  is measured on the raw text, before any parser runs.
- **Storable text.** PostgreSQL's text (and JSON it reads as text) cannot hold U+0000, and a
  lone surrogate (what a JSON escape such as ``\\ud800`` decodes to) is not valid Unicode, so
  no database driver can send it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np

MAX_JSON_DEPTH = 64

# A JSON string, escapes included. The closing quote is optional so that an unterminated
# string ends the scan in one pass instead of being retried from every later quote.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
# Opening brackets become 1 and closing ones 255 (-1 as a signed byte).
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def nesting_exceeds(raw: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON text nests arrays and objects more than ``limit`` deep (what a parser would
    recurse into before it found any syntax error further on)."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    if len(brackets) <= limit:
        return False
    depths = np.cumsum(np.frombuffer(brackets.translate(_STEPS), dtype=np.int8), dtype=np.int64)
    return int(depths.max()) > limit


def unstorable_reason(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "contains a NUL character (U+0000)"
    return f"contains a lone surrogate (U+{ord(found.group()):04X}), which is not valid Unicode"


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield f"{path}[key {key!r}]", key
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def first_unstorable(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first string (key or value, at any depth) that cannot be stored, as (where, why)."""
    for where, text in _strings(value, path):
        reason = unstorable_reason(text)
        if reason is not None:
            return where, reason
    return None
