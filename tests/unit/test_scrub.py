"""feedback.scrub: identifiers out of free text, the sentence kept."""

from __future__ import annotations

import pytest

from feedback.scrub import Scrubber, scrub_contact_details


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
        # Chinese and Japanese: no space between the words and the identifier.
        ("私の番号は090-1234-5678です", "私の番号は[phone]です"),
        ("电话13812345678，邮箱li@example.cn", "电话[phone]，邮箱[email]"),
        ("请联系@li_wei谢谢", "请联系[handle]谢谢"),
        ("13812345678", "[phone]"),
        # Dates, times and small numbers are not phones.
        ("drink 3000 ml by 2024-05-01", "drink 3000 ml by 2024-05-01"),
        ("since 01/05/2024 at 7:30, ids 12 34", "since 01/05/2024 at 7:30, ids 12 34"),
        ("mail me at jo.doe+x@mail.example.com!", "mail me at [email]!"),
    ],
)
def test_patterns(text, expected):
    assert Scrubber().scrub(text) == expected
    # What a suggestion shows beside a branch goes through the same patterns.
    assert scrub_contact_details(text) == expected


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
