"""feedback.scrub: identifiers out of free text, the sentence kept."""

from __future__ import annotations

import pytest

from feedback.scrub import Scrubber


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to ana.lopez+x@mail.example.org now", "write to [email] now"),
        ("call +44 20 7946 0958 or (555) 123-4567", "call [phone] or [phone]"),
        ("photos at https://pics.example.com/ana?id=42 ok", "photos at [url] ok"),
        ("www.example.com/me", "[url]"),
        ("from 192.168.10.24", "from [ip]"),
        ("thanks @ana_lopez!", "thanks [handle]!"),
        ("drink 3000 ml, 8 glasses", "drink 3000 ml, 8 glasses"),
        ("too slow on my phone", "too slow on my phone"),
    ],
)
def test_patterns(text, expected):
    assert Scrubber().scrub(text) == expected


def test_known_handles_as_words_and_the_writers_own_values():
    scrubber = Scrubber(["marta_k", "Bo"])  # too short a handle is not a word to drop
    own = ("Ana Lopez", "12 Rue des Lilas, Lyon", "ana@example.org", "+33 6 12 34 56 78", None)
    text = (
        "ANA   lopez here (12 Rue des Lilas, Lyon), ask marta_k or Bo; "
        "my number is 06.12.34.56.78 and +33 6 12 34 56 78"
    )
    assert scrubber.scrub(text, own) == (
        "[personal] here ([personal]), ask [handle] or Bo; my number is [phone] and [phone]"
    )
