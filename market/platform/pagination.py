"""Opaque cursors for keyset pagination (base64url JSON, validated on the way back in)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import Select
from sqlmodel import Session

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


def decode_offset(cursor: str | None) -> int:
    """A cursor that is a place in a list, from 0 (``encode_cursor(offset)``); none is the
    start. A negative place was not made here: a 400, not a slice from the list's end."""
    if not cursor:
        return 0
    (offset,) = decode_cursor(cursor, (int,))
    if offset < 0:
        raise BadRequest("The cursor is not one this API made.")
    return offset


def newest_first_page(
    session: Session,
    statement: Select,
    id_column,
    *,
    limit: int,
    cursor: str | None,
    row_id: Callable[[Any], int] = lambda row: row.id,
) -> tuple[list, str | None]:
    """One page of ``statement``'s rows, newest (highest ``id_column``) first, after the row
    ``cursor`` names; (rows, the cursor of the next page or None). ``row_id`` reads the id back
    from a row (``row[0].id`` when the statement selects several entities)."""
    if cursor:
        (last_id,) = decode_cursor(cursor, (int,))
        statement = statement.where(id_column < last_id)
    rows = list(session.exec(statement.order_by(id_column.desc()).limit(limit + 1)))
    next_cursor = encode_cursor(row_id(rows[limit - 1])) if len(rows) > limit else None
    return rows[:limit], next_cursor
