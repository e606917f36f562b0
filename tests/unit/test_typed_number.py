"""A whole number typed in a URL or a form (``market.platform.schemas.typed_number``): ASCII
digits within the bound are the number; anything else is None, never an exception."""

from __future__ import annotations

import pytest

from market.platform.schemas import INT32_MAX, typed_number


@pytest.mark.parametrize(
    ("text", "maximum", "number"),
    [
        ("0", 10, 0),
        ("7", 10, 7),
        ("10", 10, 10),
        ("007", 10, 7),
        ("2147483647", INT32_MAX, INT32_MAX),
    ],
)
def test_ascii_digits_within_the_bound_are_the_number(text, maximum, number):
    assert typed_number(text, maximum) == number


@pytest.mark.parametrize(
    "text",
    [
        "",
        "11",  # past the bound
        "2147483648",
        "-1",
        "+1",
        " 1",
        "1.0",
        "1e3",
        "²",  # a digit to str.isdigit, not to int
        "³⁰",
        "٣",  # Arabic-Indic three: int reads it, a URL should not
        "１",  # fullwidth one
        "9" * 5000,  # more digits than int converts by default
    ],
)
def test_anything_else_is_none(text):
    assert typed_number(text, INT32_MAX if len(text) > 2 else 10) is None
