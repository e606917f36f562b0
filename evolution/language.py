"""The language a listing is written in, and the one a reader reads, coarsely.

Scripts tell Chinese, Japanese and Korean apart (``evolution.text_index.script_of``). Latin
script is shared by many languages, and a Spanish translation is no better for an English
reader than a Chinese one: among Latin-script texts the language is told by its most common
short words, which every sentence uses and other languages rarely do. A text with none of
them (a two-word title) is ``latin``: some language in Latin script, which any Latin-script
reader is offered.
"""

from __future__ import annotations

import re

from evolution.text_index import script_of

LATIN = "latin"

# Short words frequent in each language (articles, conjunctions, prepositions, pronouns);
# ones shared by most ("a", "in", "de", "la", "un") are left out, and a tie names none.
_COMMON_WORDS = {
    "en": {"the", "and", "that", "with", "your", "you", "for", "of", "to", "every", "is", "this"},
    "es": {"el", "los", "las", "y", "con", "tu", "tus", "cada", "que", "del", "para", "una"},
    "fr": {"le", "les", "et", "avec", "ton", "ta", "tes", "chaque", "pour", "du", "des", "une"},
    "de": {"der", "die", "das", "und", "mit", "dein", "deine", "jeden", "jede", "für", "ist"},
    "pt": {"o", "os", "e", "com", "seu", "sua", "cada", "para", "do", "da", "não", "uma"},
    "it": {"il", "gli", "e", "con", "tuo", "tua", "ogni", "per", "della", "che", "una"},
}
_WORD = re.compile(r"[^\W\d_]+")


# Each common word's languages: a text's words are looked up once, not once per language (an
# export names the language of every listing it writes; counting per language took 25 µs each).
def _languages_of_words() -> dict[str, list[str]]:
    languages: dict[str, list[str]] = {}
    for language, words in _COMMON_WORDS.items():
        for word in words:
            languages.setdefault(word, []).append(language)
    return languages


_LANGUAGES_OF_WORD = _languages_of_words()


def language_of(text: str) -> str:
    """zh, ja or ko by script; for Latin script en, es, fr, de, pt or it by common words,
    else ``latin``."""
    script = script_of(text)
    if script != LATIN:
        return script
    hits = dict.fromkeys(_COMMON_WORDS, 0)
    for word in _WORD.findall(text):
        for language in _LANGUAGES_OF_WORD.get(word.casefold(), ()):
            hits[language] += 1
    best = max(hits.values())
    leaders = [language for language, count in hits.items() if count == best]
    return leaders[0] if best and len(leaders) == 1 else LATIN


def locale_language(locale: str | None) -> str | None:
    """The language of a BCP 47 locale as ``language_of`` names it (None for none)."""
    if not locale or locale == "*":
        return None
    language = locale.split("-")[0].split("_")[0].casefold()
    if language in ("zh", "ja", "ko") or language in _COMMON_WORDS:
        return language
    return LATIN


def reads(reader: str, language: str) -> bool:
    """Whether someone reading ``reader`` reads a text in ``language``: the same one, or a
    Latin-script text of unknown language for a Latin-script reader (and the reverse)."""
    if reader == language:
        return True
    latin_reader = reader not in ("zh", "ja", "ko")
    latin_text = language not in ("zh", "ja", "ko")
    return latin_reader and latin_text and LATIN in (reader, language)
