"""Which writing system a text is in, and its words as runs of letters.

Used to tell what a listing or a request is written in (the index records it per listing;
suggestions and the "better branch" banner prefer the viewer's), and by both the character
n-grams and the word space of ``evolution.text_index``.
"""

from __future__ import annotations

import re
import unicodedata

SCRIPTS = ("latin", "zh", "ja", "ko")
_WORD = re.compile(r"\w+")


def normalized_words(text: str) -> list[str]:
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return _WORD.findall(text.lower())


_KANA = re.compile(r"[\u3040-\u30ff]")
_IDEOGRAPH = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_LETTER = re.compile(r"[^\W\d_]")


def script_of(text: str) -> str:
    """The writing system a text is mostly in: ja (any kana), zh (ideographs), ko, latin."""
    if text.isascii():
        return "latin"
    letters = len(_LETTER.findall(text))
    kana, ideographs = len(_KANA.findall(text)), len(_IDEOGRAPH.findall(text))
    hangul = len(_HANGUL.findall(text))
    others = letters - kana - ideographs - hangul
    if kana and kana + ideographs >= others:
        return "ja"
    if ideographs and ideographs >= others:
        return "zh"
    if hangul and hangul >= others:
        return "ko"
    return "latin"


def locale_script(locale: str | None) -> str | None:
    if not locale:
        return None
    language = locale.split("-")[0].lower()
    return {"zh": "zh", "ja": "ja", "ko": "ko"}.get(language, "latin")
