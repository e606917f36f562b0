"""Contact details out of user text before it is shown to a third party.

Feedback comments are written for Sprig, not for the coding agent that reads them in a
suggestion: an email address or a phone number someone typed into a comment is replaced by
a placeholder. Dates and plain amounts ("3000 ml", "2024-05-01") are left alone.
"""

from __future__ import annotations

import re

# ASCII classes, not \w: in Chinese or Japanese text a number or an address follows a
# letter with no space ("番号は090…"), and \w would swallow the words around it.
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
# A run of digits with the separators phone numbers are written with; judged by its digits.
_PHONE = re.compile(r"(?<![A-Za-z0-9+])\+?\(?\d[\d \t\u00a0.\-()/]{5,}\d(?![A-Za-z0-9])")
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")
EMAIL_PLACEHOLDER = "[email]"
PHONE_PLACEHOLDER = "[phone]"


def _phone_or_kept(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = sum(c.isdigit() for c in text)
    if digits < 7 or digits > 15 or _DATE.fullmatch(text.strip()):
        return text
    return PHONE_PLACEHOLDER


def scrub_contact_details(text: str) -> str:
    return _PHONE.sub(_phone_or_kept, _EMAIL.sub(EMAIL_PLACEHOLDER, text))
