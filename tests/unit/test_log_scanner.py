"""The session's log scanner catches what must never be logged (so it can fail the suite)."""

from __future__ import annotations

import logging
import secrets

from tests.log_scanner import LogScanner, leaks, remember_personal

A_TOKEN = "sprig_" + secrets.token_urlsafe(32)  # the shape market.identity.tokens issues


def test_a_token_anywhere_in_a_line_is_caught():
    assert leaks(f"Authorization: Bearer {A_TOKEN}") == [f"token {A_TOKEN[:10]}…"]
    assert leaks("sprig_short and sprig.rank are not tokens") == []


def test_known_personal_values_are_caught_and_strangers_are_not():
    remember_personal(email="dana.eve@example.net", phone="+1 555 010 4321", address="1 Elm Row")
    assert leaks("signed in as dana.eve@example.net") == ["e-mail dana.eve@example.net"]
    assert leaks("called +1 555 010 4321 today") == ["phone +1 555 010 4321"]
    assert leaks("ships to 1 Elm Row, Leeds") == ["address 1 Elm Row"]
    assert leaks("noreply@example.com wrote 2026-12-01 10:00") == []


def test_a_leak_in_an_extra_field_is_caught():
    scanner = LogScanner()
    record = logging.LogRecord("market.probe", logging.INFO, __file__, 1, "clean", None, None)
    record.header = f"Bearer {A_TOKEN}"
    scanner.handle(record)
    assert scanner.findings == [("market.probe", [f"token {A_TOKEN[:10]}…"])]


def test_the_session_scanner_sees_every_logger(log_scanner):
    before = len(log_scanner.findings)
    logging.getLogger("market.probe").warning("token %s in a message", A_TOKEN)
    caught = log_scanner.findings[before:]
    # Taken back out: this leak was made on purpose, and would otherwise fail the session.
    del log_scanner.findings[before:]
    assert caught == [("market.probe", [f"token {A_TOKEN[:10]}…"])]
