"""The log scanner: every log record of the test session, checked for secrets and personal data.

A handler on the root logger formats each record exactly as production writes it (the JSON
formatter of ``market.platform.logs``, so extra fields are read too) and notes each line that
holds an API token (``sprig_`` and 43 url-safe characters) or a personal value the test
factories made (their e-mail addresses, phone numbers and street addresses, registered in
:data:`PERSONAL_VALUES` as they are made).
"""

from __future__ import annotations

import logging
import re

from market.platform.logs import json_formatter

TOKEN = re.compile(r"sprig_[A-Za-z0-9_-]{43}")
# Anything shaped like an e-mail address or a phone number is looked up among the known values:
# a set lookup per candidate, where a substring search per known value would grow with the suite.
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
PHONE = re.compile(r"\+?\d[\d ().-]{5,}\d")

# E-mails, phones and addresses handed out by tests/factories.py (and tests that pass their own).
PERSONAL_VALUES: set[str] = set()
# Addresses are free text: they are searched for, the few there are.
PERSONAL_TEXTS: set[str] = set()


def remember_personal(*, email: str | None, phone: str | None, address: str | None) -> None:
    for value in (email, phone):
        if value:
            PERSONAL_VALUES.add(value)
    if address:
        PERSONAL_TEXTS.add(address)


def leaks(line: str) -> list[str]:
    """What in ``line`` must never be logged (a token is named by its prefix only)."""
    found = [f"token {match[:10]}…" for match in TOKEN.findall(line)]
    found += [f"e-mail {m}" for m in EMAIL.findall(line) if m in PERSONAL_VALUES]
    found += [f"phone {m}" for m in PHONE.findall(line) if m in PERSONAL_VALUES]
    found += [f"address {text}" for text in PERSONAL_TEXTS if text in line]
    return found


class LogScanner(logging.Handler):
    """Collects ``(logger, leaks)`` for each record whose formatted line leaks something."""

    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.setFormatter(json_formatter())
        self.findings: list[tuple[str, list[str]]] = []
        self.scanned = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.scanned += 1
        try:
            line = self.format(record)
        except Exception:  # a record that cannot be formatted is checked by its raw text
            line = f"{record.msg} {record.args}"
        found = leaks(line)
        if found:
            self.findings.append((record.name, found))
