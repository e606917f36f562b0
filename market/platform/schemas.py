"""Input and output building blocks the API models of every domain use: strict inputs, whole
numbers, ids, tags, cursors, UTC datetimes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StringConstraints,
    field_validator,
)

from feedback.json_limits import first_unstorable

INT32_MAX = 2**31 - 1


def _whole_number(value: Any) -> Any:
    """JSON has one number type: 3.0 is the integer 3 (JSON Schema's "integer" says so too);
    3.5, true and "3" are still refused by the strict check after this."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def whole_number(ge: int, le: int) -> Any:
    """An integer input between ``ge`` and ``le``: strict (no true, no "3"), 3.0 accepted.
    The bounds sit inside the annotation so that an optional field still documents them as
    minimum and maximum."""
    return Annotated[StrictInt, Field(ge=ge, le=le), BeforeValidator(_whole_number)]


Id = whole_number(1, INT32_MAX)


def typed_number(text: str, maximum: int) -> int | None:
    """A whole number from 0 to ``maximum`` typed in a URL or a form field, as ASCII digits;
    None for anything else. ``str.isdigit`` alone lets in digits that ``int`` refuses ("²")
    or reads from another script ("٣"), and a long enough run of digits is more than ``int``
    will convert."""
    if not (text.isascii() and text.isdigit()) or len(text.lstrip("0")) > len(str(maximum)):
        return None
    number = int(text)
    return number if number <= maximum else None


class StrictInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value):
        # Text a database cannot store (NUL, lone surrogates): a 422 naming the field rather
        # than a failure at the database. Free-form objects (a bundle's manifest and files)
        # are the bundle checks' to judge, in either wire format (market.catalog.bundles).
        found = first_unstorable(value) if isinstance(value, str | list) else None
        if found is not None:
            where, reason = found
            raise ValueError(f"{where} {reason}" if where else reason)
        return value


def _assume_utc(value):
    # SQLite hands back naive datetimes (stored in UTC): say so on the way out.
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


UtcDatetime = Annotated[datetime, BeforeValidator(_assume_utc)]


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[dict] = Field(default_factory=list)


Tag = Annotated[str, StringConstraints(min_length=1, max_length=40, pattern=r"^[\w][\w .+\-]*$")]
# A page's ``cursor`` (``market.platform.pagination``): opaque, and never longer than any made.
Cursor = Annotated[str, StringConstraints(max_length=200)]
