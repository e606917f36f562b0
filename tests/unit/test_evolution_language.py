"""evolution.language: the language of a listing and of a reader."""

from __future__ import annotations

import random
import re

import pytest

from evolution.language import _COMMON_WORDS, LATIN, language_of, locale_language, reads
from evolution.scripts import script_of


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Water Tracker Tap a glass, watch the bar fill, and see the last week at a glance.", "en"),
        ("Water Tracker — oz Water tracker that counts in ounces instead of millilitres.", "en"),
        ("Control de Agua (en español) Registra cada vaso con un toque y mira tu semana.", "es"),
        ("Suivi d'eau Note chaque verre et regarde ta semaine avec une courbe.", "fr"),
        ("Wassertracker Jedes Glas zählt, und die Woche ist auf einen Blick da.", "de"),
        ("喝水记录（中文版） 点一下记录一杯水，进度条和近 7 天图表一目了然。", "zh"),
        ("水分補給トラッカー ワンタップで一杯を記録。", "ja"),
        ("물 마시기 기록", "ko"),
        ("Kakeibo Pro", LATIN),
        ("", LATIN),
    ],
)
def test_language_of(text, language):
    assert language_of(text) == language


@pytest.mark.parametrize(
    ("locale", "language"),
    [
        ("en-US", "en"),
        ("zh-CN", "zh"),
        ("zh-Hant-TW", "zh"),
        ("ja", "ja"),
        ("es_MX", "es"),
        ("nl-NL", LATIN),
        ("*", None),
        (None, None),
    ],
)
def test_locale_language(locale, language):
    assert locale_language(locale) == language


def test_reads_its_language_and_unknown_latin_text_in_latin_script():
    assert reads("en", "en")
    assert not reads("en", "es")
    assert not reads("en", "zh")
    assert reads("en", LATIN) and reads(LATIN, "es")
    assert not reads("zh", LATIN) and not reads(LATIN, "ja")
    assert reads("zh", "zh") and not reads("zh", "ja")


def counted_per_language(text: str) -> str:
    """``language_of``'s definition, language by language: the slow twin of its one pass."""
    script = script_of(text)
    if script != LATIN:
        return script
    words = [w.casefold() for w in re.findall(r"[^\W\d_]+", text)]
    hits = {lang: sum(w in common for w in words) for lang, common in _COMMON_WORDS.items()}
    best = max(hits.values(), default=0)
    leaders = [lang for lang, count in hits.items() if count == best]
    return leaders[0] if best and len(leaders) == 1 else LATIN


def test_language_of_counts_each_word_for_every_language_that_has_it():
    """Words several languages share ("e", "con", "para", "una") count for each; ties name
    none; case and punctuation do not matter."""
    rng = random.Random(19)
    vocabulary = sorted({w for words in _COMMON_WORDS.values() for w in words})
    vocabulary += ["Water", "Tracker", "ÉTÉ", "glass", "7", "x2", "Straße", "naïve"]
    for _ in range(2_000):
        words = rng.choices(vocabulary, k=rng.randrange(12))
        text = rng.choice([" ", ", ", " — "]).join(
            word.upper() if rng.random() < 0.2 else word for word in words
        )
        assert language_of(text) == counted_per_language(text), text
    assert language_of("e con para una") == LATIN  # it and pt tie
