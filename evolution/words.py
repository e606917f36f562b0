"""The words of a text in any language, and their English meaning: the text index's word space.

* Latin-script text: runs of ``\\w`` lower-cased, stop words dropped, English words stemmed
  (Snowball), so "drinks" and "drinking" are the word "drink".
* Chinese: jieba (MIT; its dictionary ships in the wheel) in search mode, which also yields
  the shorter words inside a long one ("喝水记录" → 喝水, 记录, 喝水记录).
* Japanese (any kana in the text): janome (Apache 2.0; IPADIC ships in the wheel), the
  dictionary form of nouns, verbs and adjectives ("飲みたい" → 飲む); particles and
  auxiliaries are not words here.
* Korean: words are space-separated; they stay as written (no dictionary is packaged).

Each Chinese or Japanese word also brings its English gloss (``evolution.lexicon``) as
*pivot* terms: stems in the same space as English words, so "记账" meets "account" and
"budget" meets "预算" (through its gloss "budget"). Within a text, the pivot terms together
weigh as much as the Chinese and Japanese words they gloss (equal L2 norms, times
``GLOSS_BALANCE``), each word's share split among its glosses: then "睡眠" meets an English
"Sleep Log" about as well as a Chinese one would meet it, instead of the untranslatable
surface word taking most of the query's weight. A word without an entry (jieba knows words
CC-CEDICT lacks, such as "喝水") is glossed through its characters.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from functools import lru_cache

from evolution.lexicon import Lexicon, english_stem
from evolution.scripts import normalized_words, script_of

GLOSS_BALANCE = 1.0

# Words as common in requests as in every listing ("I want an app to ..."): they would
# match everything and say nothing. English and Spanish function words; the Chinese and
# Japanese ones that segmentation keeps (pronouns, "want", light verbs).
_STOP_WORDS_TEXT = """
a an and are as at be but by can for from has have i in into is it its make me my
of on or our please so some that the their them this to tool us want wants we with
would you your app apps help need like just also every each all how much many
el la los las un una de del que y en para por con mi mis quiero
我 我们 你 你们 他 她 它 想 要 希望 需要 帮 帮我 请 一个 一下 的 了 吗 呢 吧 和 跟 与 在 是 有
把 给 让 用 能 可以 会 就 都 也 还 很 这 那 这个 那个 什么 怎么 时 自己 一 个 啊
する いる ある なる できる 思う 欲しい ほしい たい こと もの よう ため 私 僕
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_JAPANESE_CONTENT = ("名詞", "動詞", "形容詞")
_JAPANESE_SKIP = ("非自立", "代名詞", "数", "助数詞")


def _norm(weights: dict[str, float]) -> float:
    return sum(w * w for w in weights.values()) ** 0.5


def _is_cjk(word: str) -> bool:
    return any("\u3040" <= ch <= "\u30ff" or "\u3400" <= ch <= "\u9fff" for ch in word)


class WordAnalyzer:
    """Words and pivot terms of texts; segmenters and dictionaries load on first use
    (jieba ~1 s, janome ~0.5 s) and are shared by the threads of a process."""

    def __init__(self, lexicon: Lexicon | None = None):
        self.lexicon = lexicon or Lexicon()
        self._lock = threading.Lock()
        self._jieba = None
        self._janome = None
        # Words repeat across a catalog (a million listings share some hundred thousand
        # words): building the search index looked most of them up again and again.
        self._word_terms = lru_cache(maxsize=200_000)(self._uncached_word_terms)
        self._cjk_terms = lru_cache(maxsize=200_000)(self._uncached_cjk_terms)

    # -- segmentation -------------------------------------------------------------------

    def _chinese_words(self, text: str) -> list[str]:
        with self._lock:
            if self._jieba is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                self._jieba = jieba.Tokenizer()
            tokenizer = self._jieba
        return [w for w in tokenizer.cut_for_search(text) if w.strip()]

    def _japanese_words(self, text: str) -> list[str]:
        with self._lock:
            if self._janome is None:
                from janome.tokenizer import Tokenizer

                self._janome = Tokenizer()
            tokens = list(self._janome.tokenize(text))
        words, nouns = [], []
        for token in tokens:
            parts = token.part_of_speech.split(",")
            if parts[0] == "名詞":
                nouns.append(token.surface)
            else:
                words.extend(self._compounds(nouns))
                nouns = []
            if parts[0] not in _JAPANESE_CONTENT or any(p in _JAPANESE_SKIP for p in parts[1:3]):
                continue
            base = token.base_form if token.base_form != "*" else token.surface
            words.append(base)
        words.extend(self._compounds(nouns))
        return words

    def _compounds(self, nouns: list[str]) -> list[str]:
        """Runs of two or three nouns that JMdict knows as one word: IPADIC cuts "家計簿"
        (household account book) into 家計 + 簿, and only the whole has the meaning."""
        found = []
        for size in (3, 2):
            for start in range(len(nouns) - size + 1):
                compound = "".join(nouns[start : start + size])
                if self.lexicon.japanese_terms(compound):
                    found.append(compound)
        return found

    def segment(self, text: str) -> tuple[str, list[str]]:
        """(script, words as written) of a text; Latin words are not stemmed yet."""
        if not text:
            return "latin", []
        text = unicodedata.normalize("NFKC", text).lower()
        script = script_of(text)
        if script == "zh":
            return script, self._chinese_words(text)
        if script == "ja":
            return script, self._japanese_words(text)
        return script, normalized_words(text)

    # -- terms --------------------------------------------------------------------------

    def terms(self, text: str) -> dict[str, float]:
        """{term: weight}: words (stemmed when English-like) with weight 1 per occurrence,
        and the pivot terms of Chinese and Japanese words, balanced against those words (see
        the module docstring)."""
        return self.terms_and_glosses(text)[0]

    def terms_and_glosses(self, text: str) -> tuple[dict[str, float], dict[str, tuple[str, ...]]]:
        """``terms(text)``, and each glossed Chinese or Japanese word's pivot terms: how
        common a word's meaning is is how common its glosses are (see ``text_index``)."""
        script, words = self.segment(text)
        found: dict[str, float] = {}
        glossed: dict[str, float] = {}  # the Chinese and Japanese words that have glosses
        meanings: dict[str, tuple[str, ...]] = {}
        pivot: dict[str, float] = {}
        for word in words:
            terms = self.word_terms(word, script)
            if not terms:
                continue
            (surface, weight), glosses = terms[0], terms[1:]
            found[surface] = found.get(surface, 0.0) + weight
            if glosses:
                glossed[surface] = glossed.get(surface, 0.0) + weight
                meanings[surface] = tuple(term for term, _ in glosses)
            for term, share in glosses:
                pivot[term] = pivot.get(term, 0.0) + share
        if pivot:
            scale = GLOSS_BALANCE * _norm(glossed) / _norm(pivot)
            for term, weight in pivot.items():
                found[term] = found.get(term, 0.0) + weight * scale
        return found, meanings

    def word_terms(self, word: str, script: str) -> tuple[tuple[str, float], ...]:
        """One word's terms: itself (stemmed when English), and its pivot terms."""
        return self._word_terms(word, script)

    def _uncached_word_terms(self, word: str, script: str) -> tuple[tuple[str, float], ...]:
        if word in STOP_WORDS or not any(ch.isalnum() for ch in word):
            return ()
        if not _is_cjk(word):
            return ((english_stem(word) if word.isascii() else word, 1.0),)
        return self._cjk_terms(word, script)

    def _uncached_cjk_terms(self, word: str, script: str) -> tuple[tuple[str, float], ...]:
        glosses = self.glosses(word, script)
        share = 1.0 / len(glosses) ** 0.5 if glosses else 0.0
        return ((word, 1.0), *((gloss, share) for gloss in glosses))

    def glosses(self, word: str, script: str) -> tuple[str, ...]:
        """The pivot terms of one Chinese or Japanese word ('' script-appropriate dictionary
        first, the other as a fallback for words written in kanji only)."""
        lexicon = self.lexicon
        if script == "ja":
            found = lexicon.japanese_terms(word) or lexicon.chinese_terms(word)
        else:
            found = lexicon.chinese_terms(word) or lexicon.japanese_terms(word)
        if found or len(word) == 1:
            return found
        # A word the dictionaries lack: what its characters mean, each a word of its own.
        pieces: list[str] = []
        for char in word:
            for term in self.glosses(char, script)[:2]:
                if term not in pieces:
                    pieces.append(term)
        return tuple(pieces)


_SHARED: list[WordAnalyzer] = []
_shared_lock = threading.Lock()


def shared_analyzer() -> WordAnalyzer:
    """The process's analyzer: the segmenters' and dictionaries' memory is paid once."""
    with _shared_lock:
        if not _SHARED:
            _SHARED.append(WordAnalyzer())
        return _SHARED[0]
