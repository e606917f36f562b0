"""Free text scrubbed of identifiers before it leaves Sprig in a reward dataset.

What goes: email addresses, phone numbers and other long digit runs (cards, ids), URLs
(their paths and queries carry names, tokens and ids; the whole URL is replaced), IP
addresses, @handles, any word that is a Sprig handle, and the writer's own profile values
(name, email, phone, address) wherever they appear, matched case-insensitively with any
spacing. Each is replaced by a bracketed tag ("[email]", "[phone]", ...), so the sentence still
reads. What cannot be promised: someone else's name written in plain words, or a place; the
dataset card says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# ASCII classes, not \w, around every pattern: in Chinese or Japanese text a number or an
# address follows a word with no space ("番号は090-1234-5678です"), and \w (which matches
# those words) would keep the pattern from seeing where the identifier starts.
_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+")
_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"']+", re.IGNORECASE)
# Exactly four dotted groups: "06.12.34.56.78" is a phone number, not an address.
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)")
# A phone: optional +, then at least 7 digits with spaces, dots, dashes or brackets between;
# judged by its digits (7 to 15, as E.164 allows), and never a date.
_PHONE = re.compile(r"(?<![A-Za-z0-9_+])\+?\(?\d(?:[\s().\-/]{0,2}\d){6,}(?![A-Za-z0-9_])")
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")
_HANDLE = re.compile(r"(?<![A-Za-z0-9_@])@[A-Za-z0-9_][A-Za-z0-9_.\-]{0,39}")
_DIGIT_RUN = re.compile(r"\d[\d\s().\-+]{5,}\d")
_WORD = re.compile(r"[A-Za-z0-9_]+")


def _phone_or_kept(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = sum(c.isdigit() for c in text)
    if digits > 15 or _DATE.fullmatch(text.strip()):
        return text
    return "[phone]"


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
        if _DIGIT_RUN.search(text):
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
