"""Opaque cursors for keyset pagination (base64url JSON, validated on the way back in)."""

from __future__ import annotations

import base64
import binascii
import json

from market.platform.errors import BadRequest


def encode_cursor(*values: object) -> str:
    raw = json.dumps(list(values), separators=(",", ":"), default=str).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, shape: tuple[type, ...]) -> list:
    """Decode a cursor made by :func:`encode_cursor`, checking its shape; bad ones are a 400."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise BadRequest("The cursor is not one this API made.") from None
    if not isinstance(values, list) or len(values) != len(shape):
        raise BadRequest("The cursor is not one this API made.")
    for value, kind in zip(values, shape, strict=True):
        if not isinstance(value, kind) or isinstance(value, bool):
            raise BadRequest("The cursor is not one this API made.")
        # Keys and counts are 32-bit columns: anything wider was not made here.
        if isinstance(value, int) and not -(2**31) <= value < 2**31:
            raise BadRequest("The cursor is out of range.")
    return values
