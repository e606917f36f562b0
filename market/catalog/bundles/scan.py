"""Publish scans: obvious secrets and the publisher's own profile values.

Both scans read the same targets (the listing's text, the manifest's strings, every file)
and report :class:`Finding` items whose ``masked`` value never holds the whole secret.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from market.catalog.bundles import Bundle
from market.catalog.bundles.limits import MAX_FINDINGS, BundleError, file_location

__all__ = [
    "SECRET_KINDS",
    "Finding",
    "check_publishable",
    "find_personal_values",
    "find_secrets",
]


@dataclass(frozen=True)
class Finding:
    """Something in a bundle that must not be published. ``masked`` never holds the
    full value."""

    kind: str
    location: str
    masked: str


class _Lines:
    """Lazy offset -> line number map; most scans find nothing and never build it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._nl: list[int] | None = None

    def line(self, pos: int) -> int:
        if self._nl is None:
            self._nl = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._nl, pos) + 1


def _manifest_strings(value: Any, path: str = "manifest") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)
            sub = f"{path}.{k}" if plain else f"{path}[{json.dumps(k)}]"
            yield sub, k
            yield from _manifest_strings(v, sub)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _manifest_strings(v, f"{path}[{i}]")


def _targets(
    bundle: Bundle | None, listing: Mapping[str, str] | None
) -> Iterator[tuple[str, str, bool]]:
    """(location prefix, text, has line numbers) for every scanned string: the listing's text
    (title, summary, story, …, located by field name), then the bundle's manifest and files."""
    for field, text in (listing or {}).items():
        if text:
            yield field, text, False
    if bundle is None:
        return
    for loc, s in _manifest_strings(bundle.manifest):
        yield loc, s, False
    for path, text in bundle.files.items():
        yield file_location(path), text, True


def _finding_location(prefix: str, lines: _Lines | None, pos: int) -> str:
    return f"{prefix}:{lines.line(pos)}" if lines is not None else prefix


_SEP = r"[ \t\u00a0.\-()]{0,3}"
_PHONE_SEPS = " \t\u00a0.-()+"
_PHONE_STRIP = str.maketrans("", "", " \t\u00a0.-()")
_DIGITS = "0123456789"
_WORD = re.compile(r"\w")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lowered(text: str) -> str:
    """Lowercase copy with the same length, so match offsets apply to ``text``.

    Case-sensitive literal patterns on a lowered copy are ~10x faster than
    re.IGNORECASE, which disables the regex engine's literal-prefix search.
    str.lower() only grows for U+0130; fall back to ASCII-only folding there.
    """
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _mask_email(value: str) -> str:
    local, _, domain = value.partition("@")
    return f"{local[:1]}***@{domain}"


def _mask_words(value: str) -> str:
    return " ".join(f"{w[:1]}***" for w in value.split())


def _mask_phone(digits: str) -> str:
    return "*" * (len(digits) - 2) + digits[-2:]


@dataclass(frozen=True)
class _Matcher:
    kind: str
    regex: re.Pattern[str]  # run on _lowered(text) unless phone
    masked: str
    ok: Callable[[str, re.Match[str]], bool]  # boundary check against the original text
    phone_tail: str | None = None  # digits that must appear once separators are removed


def _phone_matcher(kind: str, value: str) -> _Matcher | None:
    digits = re.sub(r"[^0-9]", "", value)[-15:]
    if len(digits) < 7:
        return None
    head, tail = digits[:-7], digits[-7:]
    pat = ""
    for d in head:
        # Nested optional groups: only a contiguous run of the leading digits (right
        # before the mandatory last seven) may appear, so "123-4567" matches
        # "+1 555 123 4567" but "555 4567" does not.
        pat = f"(?:{pat}{d}{_SEP})?"
    regex = re.compile(r"\+?" + pat + _SEP.join(tail) + r"(?![0-9])")

    def ok(text: str, m: re.Match[str]) -> bool:
        if sum(c in _DIGITS for c in m.group()) == len(digits):
            return True  # whole number present; digits before it are a country code
        i = m.start() - 1
        while i >= 0 and text[i] in _PHONE_SEPS:
            i -= 1
        # A partial match glued to other digits is a different number.
        return not (i >= 0 and text[i] in _DIGITS)

    return _Matcher(kind, regex, _mask_phone(digits), ok, phone_tail=tail)


def _email_matcher(kind: str, value: str) -> _Matcher:
    def ok(text: str, m: re.Match[str]) -> bool:
        before = text[m.start() - 1 : m.start()]
        after = text[m.end() : m.end() + 2]
        if before and (before.isalnum() or before in "._%+-"):
            return False
        if after[:1] and (after[0].isalnum() or after[0] in "-_"):
            return False
        # "jane@example.com.au" is someone else's address.
        return not (after[:1] == "." and after[1:2].isalnum())

    return _Matcher(kind, re.compile(re.escape(value.lower())), _mask_email(value), ok)


def _words_matcher(kind: str, words: list[str]) -> _Matcher:
    def ok(text: str, m: re.Match[str]) -> bool:
        before = text[m.start() - 1 : m.start()]
        after = text[m.end() : m.end() + 1]
        return not (before and _WORD.match(before)) and not (after and _WORD.match(after))

    regex = re.compile(r"\s+".join(re.escape(w.lower()) for w in words))
    return _Matcher(kind, regex, _mask_words(" ".join(words)), ok)


def _personal_matcher(key: str, value: str) -> _Matcher | None:
    """How to look for one profile value, or None when it is too short to search for
    without false alarms ("Al")."""
    lowered_key = key.lower()
    if "phone" in lowered_key or "mobile" in lowered_key or lowered_key in ("tel", "telephone"):
        return _phone_matcher(key, value)
    words = value.split()
    normalized = " ".join(words)
    if len(normalized) < 4:
        return None
    if "email" in lowered_key or ("@" in normalized and len(words) == 1):
        return _email_matcher(key, normalized)
    return _words_matcher(key, words)


def find_personal_values(
    bundle: Bundle | None,
    values: Mapping[str, str | None],
    listing: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Find the publisher's own profile values (email, phone, name, address, ...)
    in file contents, manifest strings and ``listing`` texts. A finding's ``kind`` is the key in
    ``values``: emails match exactly, phones on their digits with separators,
    anything else as whole words with any whitespace between them."""
    matchers = [
        m
        for key, value in values.items()
        if isinstance(value, str) and (m := _personal_matcher(key, value)) is not None
    ]
    findings: list[Finding] = []
    if not matchers:
        return findings
    seen: set[tuple[str, str]] = set()
    for prefix, text, numbered in _targets(bundle, listing):
        lines = _Lines(text) if numbered else None
        low: str | None = None
        compact: str | None = None
        for matcher in matchers:
            if matcher.phone_tail is not None:
                if compact is None:
                    compact = text.translate(_PHONE_STRIP)
                if matcher.phone_tail not in compact:
                    continue  # the regex has no literal prefix; skip it when it cannot match
                haystack = text
            else:
                if low is None:
                    low = _lowered(text)
                haystack = low
            for m in matcher.regex.finditer(haystack):
                if not matcher.ok(text, m):
                    continue
                loc = _finding_location(prefix, lines, m.start())
                if (matcher.kind, loc) in seen:
                    continue
                seen.add((matcher.kind, loc))
                findings.append(Finding(matcher.kind, loc, matcher.masked))
                if len(findings) >= MAX_FINDINGS:
                    return findings
    return findings


# Every secret pattern starts with a literal so the regex engine can jump between
# candidates; the boundary before the literal is checked in Python for the same
# reason. Measured on a 2 MiB bundle: a few milliseconds per pattern.
_SECRET_PATTERNS: tuple[tuple[str, str, re.Pattern[str], int], ...] = (
    # (kind, label, pattern, length of the public prefix kept when masking)
    (
        "aws_access_key_id",
        "AWS access key ID",
        re.compile(r"AKIA[0-9A-Z]{16}(?![0-9A-Za-z])"),
        4,
    ),
    (
        "aws_access_key_id",
        "AWS access key ID",
        re.compile(r"ASIA[0-9A-Z]{16}(?![0-9A-Za-z])"),
        4,
    ),
    (
        "private_key",
        "private key (PEM block)",
        re.compile(r"-----BEGIN[ A-Z0-9]{0,20} PRIVATE KEY(?: BLOCK)?-----"),
        -1,
    ),
    (
        "github_token",
        "GitHub token",
        re.compile(r"gh[pousr]_[A-Za-z0-9]{36,255}(?![A-Za-z0-9_])"),
        4,
    ),
    (
        "github_token",
        "GitHub token",
        re.compile(r"github_pat_[A-Za-z0-9_]{22,255}(?![A-Za-z0-9_])"),
        11,
    ),
    (
        "stripe_live_key",
        "Stripe live key",
        re.compile(r"sk_live_[0-9A-Za-z]{10,247}(?![0-9A-Za-z])"),
        8,
    ),
    (
        "stripe_live_key",
        "Stripe live key",
        re.compile(r"rk_live_[0-9A-Za-z]{10,247}(?![0-9A-Za-z])"),
        8,
    ),
    (
        "slack_token",
        "Slack token",
        re.compile(r"xox[abprs]-[0-9A-Za-z-]{10,250}(?![0-9A-Za-z-])"),
        5,
    ),
    (
        "google_api_key",
        "Google API key",
        re.compile(r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
        4,
    ),
    (
        "openai_api_key",
        "OpenAI-style API key (sk-…)",
        re.compile(r"sk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_\-]{20,250}(?![A-Za-z0-9_\-])"),
        3,
    ),
)
# Run on _lowered(text): a keyword, an assignment, then a quoted opaque value.
_GENERIC_SECRET = re.compile(
    r"(?:api[_-]?key|secret|token|passw(?:or)?d|access[_-]?key|private[_-]?key)"
    r"[a-z0-9_]{0,30}+[\"']?\s{0,5}+(?::=|=|:)\s{0,5}+[\"'`]([a-z0-9+/=_\-.~]{16,256})[\"'`]"
)
_PLACEHOLDER = re.compile(r"your|example|placeholder|changeme|dummy|sample|xxxx|redacted")
SECRET_KINDS: dict[str, str] = {kind: label for kind, label, _, _ in _SECRET_PATTERNS}
SECRET_KINDS["generic_secret"] = "hard-coded secret assignment"  # noqa: S105 - a label


def _with_article(label: str) -> str:
    """The label with its article: an AWS access key ID, a GitHub token. Every label's first
    letter is read as it is spelt (acronyms and words alike), so a vowel letter takes "an"."""
    return f"{'an' if label[:1].upper() in 'AEIOU' else 'a'} {label}"


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _mask_secret(token: str, keep_prefix: int) -> str:
    if keep_prefix < 0:  # a PEM header names the key type and nothing secret
        return token
    rest = token[keep_prefix:]
    return f"{token[:keep_prefix]}…{rest[-4:]}" if len(rest) >= 16 else f"{token[:keep_prefix]}…"


def _is_generic_secret(value: str) -> bool:
    if "://" in value or _PLACEHOLDER.search(value.lower()):
        return False
    # Storage keys and CSS names ("sprigSessionToken") are letters only; real
    # credentials are random enough to contain digits and to score high entropy.
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    # Hex has only 16 symbols, so even a random hex key tops out near 4 bits/char.
    threshold = 3.0 if all(c in string.hexdigits for c in value) else 3.5
    return _entropy(value) >= threshold


def _mixed_case_and_digit(token: str) -> bool:
    # Separates "sk-proj-Zx81Kq..." from CSS/ids like "sk-button-primary-large".
    body = token[3:]
    return (
        any(c.isdigit() for c in body)
        and any(c.isupper() for c in body)
        and any(c.islower() for c in body)
    )


def find_secrets(bundle: Bundle | None, listing: Mapping[str, str] | None = None) -> list[Finding]:
    """Find obvious credentials (see :data:`SECRET_KINDS`) in files, manifest strings and
    ``listing`` texts."""
    findings: list[Finding] = []
    for prefix, text, numbered in _targets(bundle, listing):
        lines = _Lines(text) if numbered else None
        spans: list[tuple[int, int]] = []
        for kind, _label, regex, keep in _SECRET_PATTERNS:
            for m in regex.finditer(text):
                start = m.start()
                if start and (text[start - 1].isalnum() or text[start - 1] in "_-"):
                    continue
                if kind == "openai_api_key" and not _mixed_case_and_digit(m.group()):
                    continue
                if any(a <= start < b for a, b in spans):
                    continue  # e.g. an sk- key inside a longer token already reported
                spans.append((start, m.end()))
                loc = _finding_location(prefix, lines, start)
                findings.append(Finding(kind, loc, _mask_secret(m.group(), keep)))
                if len(findings) >= MAX_FINDINGS:
                    return findings
        for m in _GENERIC_SECRET.finditer(_lowered(text)):
            start, end = m.span(1)
            if any(a < end and start < b for a, b in spans):
                continue
            value = text[start:end]
            if _is_generic_secret(value):
                loc = _finding_location(prefix, lines, start)
                findings.append(Finding("generic_secret", loc, _mask_secret(value, 0)))
                if len(findings) >= MAX_FINDINGS:
                    return findings
    return findings


_PERSONAL_LABELS = {
    "email": "email address",
    "phone": "phone number",
    "name": "name",
    "address": "postal address",
}


def check_publishable(
    bundle: Bundle | None,
    personal_values: Mapping[str, str | None],
    listing: Mapping[str, str] | None = None,
) -> None:
    """Raise BundleError(422) if the bundle, or the text published beside it (``listing``:
    field name → text, such as the title, summary and story), holds a secret or the
    publisher's personal data.

    Secrets take precedence for ``code``; ``errors`` lists every finding either way.
    """
    secrets = find_secrets(bundle, listing)
    personal = find_personal_values(bundle, personal_values, listing)
    if not secrets and not personal:
        return
    errors = [
        {
            "location": f.location,
            "code": "secret",
            "kind": f.kind,
            "message": f"contains {_with_article(SECRET_KINDS.get(f.kind, f.kind))} ({f.masked}); "
            "remove it and have users supply credentials at run time",
        }
        for f in secrets
    ] + [
        {
            "location": f.location,
            "code": "personal_data",
            "kind": f.kind,
            "message": f"contains your {_PERSONAL_LABELS.get(f.kind, f.kind)} ({f.masked}) "
            "from your profile; remove it before publishing",
        }
        for f in personal
    ]
    code = "secret" if secrets else "personal_data"
    n = len(errors)
    detail = f"{errors[0]['location']}: {errors[0]['message']}" + (
        f" (and {n - 1} more finding{'s' if n > 2 else ''})" if n > 1 else ""
    )
    raise BundleError(code, detail, status=422, errors=errors)
