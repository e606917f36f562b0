"""The web's three catalogs: every string the templates and views hand to gettext is in each,
translated in Chinese and Japanese, with the same placeholders as its English source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.pofile import read_po

from market.web.i18n import LANGUAGES, TRANSLATIONS_DIR, catalog

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]|%%")
TAG = re.compile(r"<(/?\w+)")


def source_messages() -> set[str | tuple[str, str]]:
    """What ``make messages`` extracts (babel.cfg's method map), keyed like a catalog's ids."""
    methods = [("market/**.py", "python"), ("market/web/templates/**.html", "jinja2")]
    keywords = {**DEFAULT_KEYWORDS, "lazy_gettext": None}
    found = set()
    for _file, _line, message, _comments, _context in extract_from_dir(
        str(ROOT), methods, keywords=keywords
    ):
        found.add(message if isinstance(message, str) else tuple(message))
    return found


def read_catalog(language: str):
    with (TRANSLATIONS_DIR / language / "LC_MESSAGES" / "messages.po").open("rb") as source:
        return read_po(source, locale=language)


def marks(text: str) -> list[str]:
    """The placeholders and HTML tags of a message, which a translation must keep."""
    return sorted(PLACEHOLDER.findall(text) + TAG.findall(text))


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_every_string_of_the_pages_is_in_the_catalog(language):
    ids = {message.id for message in read_catalog(language) if message.id}
    missing = source_messages() - ids
    assert not missing, f"run `make messages` and translate: {sorted(map(str, missing))}"


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_every_message_is_translated_with_its_placeholders(language):
    problems = []
    for message in read_catalog(language):
        if not message.id:
            continue
        singular = message.id[0] if isinstance(message.id, tuple) else message.id
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if message.fuzzy or not all(strings):
            problems.append(f"untranslated: {singular!r}")
            continue
        sources = message.id if isinstance(message.id, tuple) else (message.id,)
        for string in strings:
            if marks(string) != marks(sources[-1]):
                problems.append(f"placeholders or tags differ: {singular!r} -> {string!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("language", ["zh", "ja"])
def test_chinese_and_japanese_are_not_english(language):
    """A translation that copies the English (the usual slip when filling a catalog) fails."""
    copied = [
        message.id
        for message in read_catalog(language)
        if message.id and isinstance(message.id, str) and message.string == message.id
    ]
    assert not copied, copied


def test_catalogs_compile_and_translate():
    assert catalog("zh").gettext("Your data") == "你的数据"
    assert catalog("ja").gettext("Your data") == "あなたのデータ"
    assert (
        catalog("ja").ngettext("%(num)d install", "%(num)d installs", 3)
        == "インストール %(num)d 件"
    )
    assert catalog("en").ngettext("%(num)d install", "%(num)d installs", 1) == "%(num)d install"
