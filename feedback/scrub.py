"""Free text scrubbed of identifiers before it leaves Sprig in a reward dataset.

What goes: email addresses; payment card numbers (13 to 19 digits, written together or in
groups, that pass the Luhn check); IBANs (whose check digits verify); phone numbers; other
long digit runs (16 digits or more: account and customer ids); URLs (their paths and queries
carry names, tokens and ids; the whole URL is replaced); IP addresses; @handles; any word that
is a Sprig handle; and the writer's own profile values (name, email, phone, address) wherever
they appear, matched case-insensitively with any spacing. Digits may be ASCII or full width
(as Chinese and Japanese keyboards type them). Each is replaced by a bracketed tag ("[email]",
"[card]", "[iban]", "[number]", "[phone]", ...), so the sentence still reads. What cannot be
promised: someone else's name written in plain words, or a place; the dataset card says so.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from stdnum import iban, luhn

# ASCII classes, not \w, around every pattern: in Chinese or Japanese text a number or an
# address follows a word with no space ("番号は090-1234-5678です"), and \w (which matches
# those words) would keep the pattern from seeing where the identifier starts.
_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+")
# A URL ends at whitespace or quotes, and at CJK or full-width punctuation: Chinese and
# Japanese put "，" or "。" right after a link, while its path may hold CJK words.
_URL = re.compile(
    r"(?:https?://|www\.)[^\s<>\"'\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff5b-\uff65]+",
    re.IGNORECASE,
)
# Exactly four dotted groups: "06.12.34.56.78" is a phone number, not an address.
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)")
# A phone: optional +, then at least 7 digits with spaces, dots, dashes or brackets between;
# judged by its digits (7 to 15, as E.164 allows), and never a date.
_PHONE = re.compile(r"(?<![A-Za-z0-9_+])\+?\(?\d(?:[\s().\-/]{0,2}\d){6,}(?![A-Za-z0-9_])")
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")
_HANDLE = re.compile(r"(?<![A-Za-z0-9_@])@[A-Za-z0-9_][A-Za-z0-9_.\-]{0,39}")
_DIGIT_RUN = re.compile(r"\d[\d\s().\-+]{5,}\d")
_WORD = re.compile(r"[A-Za-z0-9_]+")
# A card or an id: digits together or in groups of three or more, one space or dash between
# groups (so two dates side by side, "2024-01-01 2024-01-02", are not one number).
_GROUPED_DIGITS = re.compile(r"(?<![A-Za-z0-9_\d])\d{3,}(?:[ \-\u3000]\d{3,})*(?![A-Za-z0-9_\d])")
# An IBAN candidate: country, check digits, then letters and digits, optionally in groups.
# It may run on into the next word ("… 00 OK"); the longest prefix that verifies is the IBAN.
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}", re.IGNORECASE)
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ \-]?[A-Z0-9]){11,31}", re.IGNORECASE)
_CARD_DIGITS = range(13, 20)
_LONG_RUN_DIGITS = 16


def _phone_or_kept(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = sum(c.isdigit() for c in text)
    if digits > 15 or _DATE.fullmatch(text.strip()):
        return text
    return "[phone]"


def _card_or_number(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = re.sub(r"\D", "", unicodedata.normalize("NFKC", text))
    if len(digits) in _CARD_DIGITS and luhn.is_valid(digits):
        return "[card]"
    if len(digits) >= _LONG_RUN_DIGITS:
        return "[number]"
    return text  # short enough to be a phone (judged next) or an ordinary number


def _replace_ibans(text: str) -> str:
    pieces, position = [], 0
    for match in _IBAN.finditer(text):
        if match.start() < position:
            continue
        candidate = match.group(0)
        # Longest first: the pattern may have taken the start of the next word.
        for end in range(len(candidate), 14, -1):
            if candidate[end - 1] in " -":
                continue
            if iban.is_valid(candidate[:end].upper()):
                pieces += [text[position : match.start()], "[iban]"]
                position = match.start() + end
                break
    return "".join(pieces) + text[position:] if pieces else text


def _flexible(value: str) -> re.Pattern[str] | None:
    """A profile value matched case-insensitively with any whitespace between its words, and
    phones on their digits whatever the separators."""
    value = value.strip()
    if len(value) < 3:
        return None
    digits = re.sub(r"\D", "", value)
    if len(digits) >= 7 and len(digits) >= len(re.sub(r"[\s().+\-]", "", value)):
        return re.compile(r"[\s().\-]{0,2}".join(re.escape(d) for d in digits))
    words = value.split()
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


class Scrubber:
    """``scrub(text, own_values)``: the text without the identifiers of the module docstring.
    ``handles`` are every Sprig handle (lower-cased on the way in)."""

    def __init__(self, handles: Iterable[str] = ()) -> None:
        self.handles = {h.lower() for h in handles if h and len(h) >= 3}

    def scrub(self, text: str, own_values: Iterable[str | None] = ()) -> str:
        # Each pattern needs a character that most text lacks: test for it first (prompts and
        # comments are scrubbed by the hundred thousand).
        lowered = text.lower()
        if "http" in lowered or "www." in lowered:
            text = _URL.sub("[url]", text)
        if "@" in text:
            text = _EMAIL.sub("[email]", text)
        if _IBAN_START.search(text):
            text = _replace_ibans(text)
        if _DIGIT_RUN.search(text):
            text = _GROUPED_DIGITS.sub(_card_or_number, text)
            text = _IPV4.sub("[ip]", text)
            text = _PHONE.sub(_phone_or_kept, text)
        if "@" in text:
            text = _HANDLE.sub("[handle]", text)
        # The writer's own values last: what the patterns above did not recognize as an email
        # or a phone (an address, a name, an oddly written number) still goes.
        for value in own_values:
            pattern = _flexible(value) if isinstance(value, str) else None
            if pattern is not None:
                text = pattern.sub("[personal]", text)
        if self.handles:
            text = _WORD.sub(
                lambda m: "[handle]" if m.group().lower() in self.handles else m.group(), text
            )
        return text


_ANONYMOUS = Scrubber()


def scrub_contact_details(text: str) -> str:
    """The patterns alone (no handle list, no writer's values): for text shown beside a
    suggestion, where the writer is not looked up."""
    return _ANONYMOUS.scrub(text)
