r"""A text index over sub-agents that is updated one document at a time.

Two kinds of features, each its own half of the vector (see "Weights"):

Words (``evolution.words``): Latin words stemmed; Chinese and Japanese cut into words by
real segmenters (jieba, janome); and the English gloss of every Chinese and Japanese word
("pivot" terms), so a request in one language meets a listing written in another. A word
is hashed into its own 2^20 buckets.

Character n-grams, so a request matches "ounce" in "ounces", a typo still shares most of
its trigrams, and a Chinese or Japanese word the segmenter cut differently still matches:
  * Text is NFKC-normalized (full-width Latin becomes ASCII) and lower-cased; words are runs
    of ``\w``; each word is padded with a space on both sides, as scikit-learn's ``char_wb``
    analyzer does.
  * Every word gives its character trigrams (" wa", "wat", …, "er ").
  * Inside runs of CJK / kana / hangul (code points from U+2E80), single characters and
    character pairs are features too: most Chinese and Japanese words are one or two
    characters long ("水", "喝水", "弁当").
  * An n-gram is hashed into 2^20 buckets (a 64-bit polynomial hash with a final mix).
  The features are computed with NumPy over a whole batch at once: scikit-learn's
  ``HashingVectorizer(analyzer="char_wb")`` builds the same kind of features in Python loops,
  about 40 s per 100,000 sub-agents here, against ~3 s for this.

Weights (SMART "lnc.ltc", per half):
  * a document's field texts are weighted (title 3, tags 2, summary 2, fork request 1.5,
    story 1, manifest description 1, category 1, permission names 0.5); a feature's weight
    in the document is ln(1 + Σ_fields w_field · count); the n-gram half and the word half
    are each L2-normalized and scaled by 1/√2. The document side carries no idf, so a stored
    vector never changes when others arrive.
  * the query's features get ln(1 + count) · idf with idf = ln((1 + N) / (1 + df)) + 1, from
    document frequencies kept up to date on every add and remove, applied at query time;
    each half is L2-normalized, the n-gram half scaled by √2 · λ and the word half by
    √2 · (1 − λ) (``NGRAM_SHARE`` = λ).
  * relevance = the dot product = λ · cos(n-grams) + (1 − λ) · cos(words), in [0, 1].

Storage: an inverted index (CSC matrices: n-gram → postings) in segments. A new document
goes into a small open segment (≤ 512 rows) that is rebuilt on each add; when it fills it is
sealed, and the two newest sealed segments merge while the older is at most twice the newer,
so there are O(log N) segments and a document is rewritten O(log N) times. A removed
document is masked at once (its document frequencies are subtracted) and dropped from the
postings when more than a quarter of the rows are dead.

Search: the query's rarer n-grams are scored exactly over their whole postings, up to a
budget of postings (always at least the 6 rarest n-grams); the best candidates by that partial
score then get the exact contribution of the remaining common n-grams (" th", "er "), whose
idf is small. So every returned relevance is the exact cosine; only the choice of candidates
relies on rare n-grams, which is what makes a query cost milliseconds at 100,000 sub-agents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from hashlib import blake2b

import numpy as np
import scipy.sparse as sp

from evolution.lexicon import english_stem
from evolution.scripts import SCRIPTS, normalized_words, script_of
from evolution.words import STOP_WORDS, WordAnalyzer, shared_analyzer

FEATURE_BITS = 20
N_GRAM_FEATURES = 1 << FEATURE_BITS  # buckets [0, 2^20): n-grams; [2^20, 2^21): words
N_FEATURES = 2 * N_GRAM_FEATURES
NGRAM_SHARE = 0.5
DENSE_SCRIPT_START = 0x2E80  # CJK radicals onwards: kana, ideographs, hangul
FIELD_WEIGHTS: dict[str, float] = {
    "title": 3.0,
    "tags": 2.0,
    "summary": 2.0,
    "fork_request": 1.5,
    "story": 1.0,
    "description": 1.0,
    "category": 1.0,
    "permissions": 0.5,
}
FIELDS = tuple(FIELD_WEIGHTS)
# The first characters of a story carry its gist; a 4,000-character story would otherwise
# outweigh its title and cost memory in every worker.
FIELD_CHARS = {"story": 1500, "fork_request": 600, "description": 500}
OPEN_SEGMENT_ROWS = 512
POSTINGS_BUDGET = 300_000
MIN_EXACT_GRAMS = 6
CANDIDATES = 400
# The per-slot columns of an index (and its (slot, permission) pairs), in snapshots.
_SLOT_COLUMNS = ("ids", "alive", "category", "script", "root", "name", "scope_slot", "scope_id")

_SPACE = np.uint64(32)
_MASK = np.uint64(N_GRAM_FEATURES - 1)
_MULTIPLIERS = tuple(
    np.uint64(m)
    for m in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xFF51AFD7ED558CCD)
)
_ROTATE_LEFT, _ROTATE_RIGHT = np.uint64(17), np.uint64(47)


# ---------------------------------------------------------------------------- features


def _stream(text: str) -> str:
    """Words padded as char_wb pads them: " w1  w2 " (two spaces between words)."""
    words = normalized_words(text) if text else []
    return (" " + "  ".join(words) + " ") if words else ""


def _mix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * _MULTIPLIERS[3]
    h = h ^ (h >> np.uint64(29))
    return (h & _MASK).astype(np.int64)


def _rotate(h: np.ndarray) -> np.ndarray:
    return (h << _ROTATE_LEFT) | (h >> _ROTATE_RIGHT)


def _hash_grams(codes: np.ndarray, unit: np.ndarray):
    """(unit, feature) pairs of every n-gram in a code-point stream (see the docstring)."""
    length = len(codes)
    units, features = [], []
    dense = codes >= DENSE_SCRIPT_START
    space = codes == _SPACE
    with np.errstate(over="ignore"):
        h1 = codes * _MULTIPLIERS[0]
        units.append(unit[dense])
        features.append(_mix(h1[dense]))
        if length >= 2:
            h2 = _rotate(h1[:-1]) + codes[1:] * _MULTIPLIERS[1]
            pair = dense[:-1] & dense[1:]
            units.append(unit[:-1][pair])
            features.append(_mix(h2[pair] ^ _MULTIPLIERS[2]))
        if length >= 3:
            h3 = _rotate(h2[:-1]) + codes[2:] * _MULTIPLIERS[2]
            # Inside one padded word exactly when the middle character is not a space.
            within = ~space[1:-1]
            units.append(unit[:-2][within])
            features.append(_mix(h3[within]))
    return np.concatenate(units), np.concatenate(features)


def count_matrix(texts: Sequence[str], weights: Sequence[float] | None = None) -> sp.csr_matrix:
    """Rows of Σ weight · count per n-gram bucket, one row per text (float32 CSR)."""
    streams = [_stream(t) for t in texts]
    joined = " ".join(streams)  # the extra space keeps n-grams from spanning two texts
    codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    lengths = np.fromiter((len(s) + 1 for s in streams), dtype=np.int64, count=len(streams))
    unit = np.repeat(np.arange(len(streams), dtype=np.int64), lengths)[: len(codes)]
    rows, features = _hash_grams(codes, unit)
    values = (
        np.ones(len(rows), np.float32) if weights is None else np.asarray(weights, np.float32)[rows]
    )
    matrix = sp.csr_matrix((values, (rows, features)), shape=(len(texts), N_FEATURES))
    matrix.sum_duplicates()
    return matrix


@dataclass(frozen=True)
class SubAgentDocument:
    """What the index reads of a sub-agent (its latest public version)."""

    subagent_id: int
    title: str
    summary: str = ""
    story: str = ""
    tags: tuple[str, ...] = ()
    category: str = ""
    fork_request: str = ""
    description: str = ""
    permissions: tuple[str, ...] = ()
    root_id: int | None = None  # the fork tree's root (itself for a root)

    def field_texts(self) -> dict[str, str]:
        texts = {
            "title": self.title,
            "tags": " ".join(self.tags),
            "summary": self.summary,
            "fork_request": self.fork_request or "",
            "story": self.story,
            "description": self.description or "",
            "category": self.category,
            # "health.injuries.read" reads as the words "health injuries read"
            "permissions": " ".join(self.permissions),
        }
        return {name: text[: FIELD_CHARS.get(name, len(text))] for name, text in texts.items()}


def title_key(text: str) -> int:
    """A title's words, in order, as one number: "Water Tracker" and "water  tracker!" agree."""
    words = " ".join(normalized_words(text))
    return int.from_bytes(blake2b(words.encode("utf-8"), digest_size=8).digest(), "little") >> 1


@lru_cache(maxsize=500_000)
def word_feature(term: str) -> int:
    """A word's bucket, in the upper half of the feature space."""
    digest = blake2b(term.encode("utf-8"), digest_size=8).digest()
    return N_GRAM_FEATURES + (int.from_bytes(digest, "little") & (N_GRAM_FEATURES - 1))


def word_matrix(
    analyzer: WordAnalyzer, texts: Sequence[str], weights: Sequence[float] | None = None
) -> sp.csr_matrix:
    """Rows of Σ weight · term weight per word bucket, one row per text (float32 CSR)."""
    rows, features, values = [], [], []
    for row, text in enumerate(texts):
        if not text:
            continue
        scale = 1.0 if weights is None else weights[row]
        for term, weight in analyzer.terms(text).items():
            rows.append(row)
            features.append(word_feature(term))
            values.append(weight * scale)
    matrix = sp.csr_matrix(
        (np.asarray(values, np.float32), (rows, features)), shape=(len(texts), N_FEATURES)
    )
    matrix.sum_duplicates()
    return matrix


def _half_normalized(matrix: sp.csr_matrix) -> sp.csr_matrix:
    """Each row's n-gram half and word half L2-normalized and scaled by 1/√2."""
    matrix = matrix.tocsr()
    is_word = matrix.indices >= N_GRAM_FEATURES
    squares = matrix.data.astype(np.float64) ** 2
    row_of = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    rows = matrix.shape[0]
    gram_norm = np.sqrt(np.bincount(row_of[~is_word], squares[~is_word], minlength=rows))
    word_norm = np.sqrt(np.bincount(row_of[is_word], squares[is_word], minlength=rows))
    norm = np.where(is_word, word_norm[row_of], gram_norm[row_of]) * np.sqrt(2.0)
    matrix.data = (matrix.data / np.maximum(norm, 1e-12)).astype(np.float32)
    return matrix


def document_vectors(
    documents: Sequence[SubAgentDocument], analyzer: WordAnalyzer
) -> sp.csr_matrix:
    """lnc document vectors: ln(1 + Σ_fields w · count), each half L2-normalized to 1/√2."""
    texts, weights = [], []
    for document in documents:
        for name, text in document.field_texts().items():
            texts.append(text)
            weights.append(FIELD_WEIGHTS[name])
    units = count_matrix(texts, weights) + word_matrix(analyzer, texts, weights)
    units = units.tocsr()
    # Sum each document's field rows: units are laid out document-major.
    fields = len(FIELDS)
    owner = np.repeat(np.arange(len(texts)) // fields, np.diff(units.indptr))
    matrix = sp.csr_matrix((units.data, (owner, units.indices)), shape=(len(documents), N_FEATURES))
    matrix.sum_duplicates()
    np.log1p(matrix.data, out=matrix.data)
    return _half_normalized(matrix)


# ---------------------------------------------------------------------------- the index


class _Growable:
    """A 1-D NumPy array that grows by doubling (amortized O(1) appends)."""

    def __init__(self, dtype, fill=0):
        self._data = np.full(64, fill, dtype=dtype)
        self._fill = fill
        self.size = 0

    def extend(self, values) -> None:
        values = np.asarray(values, dtype=self._data.dtype)
        need = self.size + len(values)
        if need > len(self._data):
            grown = np.full(max(need, 2 * len(self._data)), self._fill, dtype=self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : need] = values
        self.size = need

    @property
    def view(self) -> np.ndarray:
        return self._data[: self.size]


@dataclass
class _Segment:
    offset: int  # slot of its first row
    postings: sp.csc_matrix  # rows = its slots, columns = n-gram buckets

    @property
    def rows(self) -> int:
        return self.postings.shape[0]


@dataclass(frozen=True)
class Match:
    subagent_id: int
    relevance: float
    script: str
    root_id: int = 0  # its fork tree (its own id for a root)
    word_relevance: float = 0.0  # cos(words), the half that carries meaning across languages
    coverage: float = 0.0  # share of the request's word weight (squared) the listing contains
    names_it: bool = False  # the request is the listing's title (its words, in order)


@dataclass
class _Vocabulary:
    ids: dict[str, int] = field(default_factory=dict)

    def id_of(self, name: str) -> int:
        return self.ids.setdefault(name, len(self.ids))


class SuggestionIndex:
    """Sub-agents by id; ``add`` (which replaces), ``remove``, ``search``. Not thread-safe:
    the caller serializes writes against reads."""

    def __init__(
        self, documents: Iterable[SubAgentDocument] = (), analyzer: WordAnalyzer | None = None
    ):
        self.analyzer = analyzer or shared_analyzer()
        self._segments: list[_Segment] = []
        self._df = np.zeros(N_FEATURES, dtype=np.int32)
        self._slot_of: dict[int, int] = {}
        self._ids = _Growable(np.int64)
        self._alive = _Growable(np.bool_, False)
        self._category = _Growable(np.int32, -1)
        self._script = _Growable(np.int8)
        self._root = _Growable(np.int64)
        self._name = _Growable(np.int64)  # title_key of each title
        self._scope_slot = _Growable(np.int64)  # one entry per (slot, permission)
        self._scope_id = _Growable(np.int32)
        self._categories = _Vocabulary()
        self._scopes = _Vocabulary()
        self._dead = 0
        self.add_many(documents)

    # -- size ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, subagent_id: int) -> bool:
        return subagent_id in self._slot_of

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    @property
    def postings(self) -> int:
        return sum(s.postings.nnz for s in self._segments)

    def document_frequency(self, features: np.ndarray) -> np.ndarray:
        return self._df[features]

    # -- writes -------------------------------------------------------------------------

    def add(self, document: SubAgentDocument) -> None:
        """Add a sub-agent, or replace what the index had for it."""
        self.add_many([document])

    update = add

    def add_many(self, documents: Iterable[SubAgentDocument]) -> None:
        pending: dict[int, SubAgentDocument] = {}
        for document in documents:
            pending[document.subagent_id] = document  # the last one given wins
        if pending:
            self._append(list(pending.values()))

    def remove(self, subagent_id: int) -> bool:
        return bool(self.remove_many([subagent_id]))

    def remove_many(self, subagent_ids: Iterable[int]) -> set[int]:
        """Remove these sub-agents (one pass over the postings for all of them); the ids that
        were in the index."""
        removed = {i: self._slot_of.pop(i) for i in set(subagent_ids) if i in self._slot_of}
        self._kill(list(removed.values()))
        if self._dead > 1000 and self._dead > len(self._ids.view) // 4:
            self._compact()
        return set(removed)

    def _kill(self, slots: list[int]) -> None:
        """Mask these rows and give back their document frequencies. A row's n-grams are
        found by scanning its segment's postings (CSC: by feature), so the rows are killed
        together, one scan per segment, not one per row: at a million sub-agents a scan is
        about a tenth of a second, and a catch-up may replace thousands of rows."""
        if not slots:
            return
        slots_array = np.asarray(slots, dtype=np.int64)
        for segment in self._segments:
            local = slots_array - segment.offset
            local = local[(local >= 0) & (local < segment.rows)]
            if not local.size:
                continue
            dying = np.zeros(segment.rows, dtype=bool)
            dying[local] = True
            postings = segment.postings
            positions = np.flatnonzero(dying[postings.indices])
            features = np.searchsorted(postings.indptr, positions, side="right") - 1
            np.subtract.at(self._df, features, 1)  # a feature may repeat across rows
        self._alive.view[slots_array] = False
        self._dead += len(slots)

    def _append(self, documents: list[SubAgentDocument]) -> None:
        replaced = [self._slot_of.pop(d.subagent_id, None) for d in documents]
        self._kill([slot for slot in replaced if slot is not None])
        # Featurized in batches: the n-gram arrays of a batch take ~50 bytes per character.
        vectors = sp.vstack(
            [
                document_vectors(documents[start : start + 4000], self.analyzer)
                for start in range(0, len(documents), 4000)
            ],
            format="csr",
        )
        first = len(self._ids.view)
        scope_slots, scope_ids = [], []
        for i, document in enumerate(documents):
            slot = first + i
            self._slot_of[document.subagent_id] = slot
            for scope in sorted(set(document.permissions)):
                scope_slots.append(slot)
                scope_ids.append(self._scopes.id_of(scope))
        self._scope_slot.extend(scope_slots)
        self._scope_id.extend(scope_ids)
        self._ids.extend([d.subagent_id for d in documents])
        self._alive.extend(np.ones(len(documents), bool))
        self._category.extend([self._categories.id_of(d.category) for d in documents])
        self._script.extend([SCRIPTS.index(script_of(f"{d.title} {d.summary}")) for d in documents])
        self._root.extend([d.root_id or d.subagent_id for d in documents])
        self._name.extend([title_key(d.title) for d in documents])
        self._df += np.bincount(vectors.indices, minlength=N_FEATURES).astype(np.int32)
        open_segment = self._segments[-1] if self._segments else None
        if open_segment is not None and open_segment.rows < OPEN_SEGMENT_ROWS:
            rows = sp.vstack([open_segment.postings.tocsr(), vectors], format="csr")
            self._segments[-1] = _Segment(open_segment.offset, rows.tocsc())
        else:
            self._segments.append(_Segment(first, vectors.tocsc()))
        if self._segments[-1].rows >= OPEN_SEGMENT_ROWS:
            self._merge_sealed()

    def _merge_sealed(self) -> None:
        while len(self._segments) >= 2:
            older, newer = self._segments[-2], self._segments[-1]
            if older.rows > 2 * newer.rows:
                break
            merged = sp.vstack([older.postings.tocsr(), newer.postings.tocsr()], format="csr")
            self._segments[-2:] = [_Segment(older.offset, merged.tocsc())]

    def _compact(self) -> None:
        """Drop dead rows from the postings and renumber the slots (dead > 25%)."""
        alive = self._alive.view.copy()
        rows = sp.vstack([s.postings.tocsr() for s in self._segments], format="csr")[alive]
        keep = np.flatnonzero(alive)
        new_slot = np.full(len(alive), -1, dtype=np.int64)
        new_slot[keep] = np.arange(len(keep))
        ids, categories, scripts, roots, names = (
            self._ids.view[keep],
            self._category.view[keep],
            self._script.view[keep],
            self._root.view[keep],
            self._name.view[keep],
        )
        scope_keep = alive[self._scope_slot.view]
        scope_slot = new_slot[self._scope_slot.view[scope_keep]]
        scope_id = self._scope_id.view[scope_keep]
        self._ids, self._alive = _Growable(np.int64), _Growable(np.bool_, False)
        self._category, self._script = _Growable(np.int32, -1), _Growable(np.int8)
        self._root, self._name = _Growable(np.int64), _Growable(np.int64)
        self._scope_slot, self._scope_id = _Growable(np.int64), _Growable(np.int32)
        self._ids.extend(ids)
        self._alive.extend(np.ones(len(keep), bool))
        self._category.extend(categories)
        self._script.extend(scripts)
        self._root.extend(roots)
        self._name.extend(names)
        self._scope_slot.extend(scope_slot)
        self._scope_id.extend(scope_id)
        self._slot_of = {int(i): s for s, i in enumerate(ids)}
        self._segments = [_Segment(0, rows.tocsc())] if len(keep) else []
        self._dead = 0

    # -- snapshots ----------------------------------------------------------------------

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Everything the index holds, as named NumPy arrays of plain dtypes (no objects), so
        a snapshot on disk is read back without unpickling anything; ``from_arrays`` is the
        inverse. The analyzer is not part of it: it is rebuilt from the package's data."""
        arrays = {
            "df": self._df,
            "dead": np.array([self._dead], np.int64),
            "categories": np.array(list(self._categories.ids), dtype=np.str_),
            "scopes": np.array(list(self._scopes.ids), dtype=np.str_),
            "segment_offsets": np.array([s.offset for s in self._segments], np.int64),
        }
        for name in _SLOT_COLUMNS:
            arrays[name] = getattr(self, f"_{name}").view
        for i, segment in enumerate(self._segments):
            postings = segment.postings
            arrays[f"segment{i}_shape"] = np.array(postings.shape, np.int64)
            arrays[f"segment{i}_data"] = postings.data
            arrays[f"segment{i}_indices"] = postings.indices
            arrays[f"segment{i}_indptr"] = postings.indptr
        return arrays

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, np.ndarray], analyzer: WordAnalyzer | None = None
    ) -> SuggestionIndex:
        """The index ``to_arrays`` described: equal to it in every array and in every answer."""
        index = cls(analyzer=analyzer)
        index._df = np.array(arrays["df"], dtype=np.int32)
        index._dead = int(arrays["dead"][0])
        index._categories = _Vocabulary({str(n): i for i, n in enumerate(arrays["categories"])})
        index._scopes = _Vocabulary({str(n): i for i, n in enumerate(arrays["scopes"])})
        for name in _SLOT_COLUMNS:
            getattr(index, f"_{name}").extend(arrays[name])
        alive = index._alive.view
        slots = np.flatnonzero(alive)
        index._slot_of = dict(zip(index._ids.view[slots].tolist(), slots.tolist(), strict=True))
        index._segments = [
            _Segment(
                int(offset),
                sp.csc_matrix(
                    (
                        arrays[f"segment{i}_data"],
                        arrays[f"segment{i}_indices"],
                        arrays[f"segment{i}_indptr"],
                    ),
                    shape=tuple(int(n) for n in arrays[f"segment{i}_shape"]),
                ),
            )
            for i, offset in enumerate(arrays["segment_offsets"].tolist())
        ]
        return index

    # -- reads --------------------------------------------------------------------------

    def query_vector(
        self, query: str, ngram_share: float = NGRAM_SHARE
    ) -> tuple[np.ndarray, np.ndarray]:
        """(features, weights) of the ltc query vector, rarest feature first: each half
        L2-normalized, the n-gram half scaled to √2·λ and the word half to √2·(1 − λ), so
        the dot product with a document is λ · cos(n-grams) + (1 − λ) · cos(words).

        A Chinese or Japanese word is as informative as its meaning: its document frequency
        is taken as the largest of its own and its glosses'. In a catalog mostly in English,
        "记录" (a record) is written in few listings but means what hundreds say ("log",
        "record"); with its own rarity it would outweigh "跑步" (running) and pull every
        Chinese log above the English running log."""
        terms, meanings = self.analyzer.terms_and_glosses(query)
        counts = count_matrix([query]).tocsr()
        words = {word_feature(term): weight for term, weight in terms.items()}
        features = np.concatenate(
            [counts.indices.astype(np.int64), np.fromiter(words, np.int64, len(words))]
        )
        if not len(features):
            return features, np.zeros(0)
        raw = np.concatenate(
            [counts.data.astype(np.float64), np.fromiter(words.values(), np.float64, len(words))]
        )
        df = self._df[features].astype(np.float64)
        meaning_df = df.copy()
        position = {feature: i for i, feature in enumerate(features.tolist())}
        for word, glosses in meanings.items():
            i = position[word_feature(word)]
            meaning_df[i] = max(df[i], *(self._df[word_feature(g)] for g in glosses))
        n = float(len(self))
        weights = np.log1p(raw) * (np.log((1 + n) / (1 + meaning_df)) + 1)
        is_word = features >= N_GRAM_FEATURES
        for half, share in ((~is_word, ngram_share), (is_word, 1.0 - ngram_share)):
            norm = np.linalg.norm(weights[half])
            if norm:
                weights[half] *= np.sqrt(2.0) * share / norm
        order = np.argsort(df, kind="stable")
        return features[order], weights[order]

    def _allowed(self, category: str | None, granted_scopes: Iterable[str] | None) -> np.ndarray:
        allowed = self._alive.view.copy()
        if category is not None:
            code = self._categories.ids.get(category)
            if code is None:
                return np.zeros_like(allowed)
            allowed &= self._category.view == code
        if granted_scopes is not None:
            granted = [self._scopes.ids[s] for s in set(granted_scopes) if s in self._scopes.ids]
            outside = np.ones(len(self._scopes.ids), bool)
            outside[granted] = False
            entries = self._scope_slot.view[outside[self._scope_id.view]]
            allowed[entries] = False
        return allowed

    def search(
        self,
        query: str,
        *,
        limit: int = 100,
        category: str | None = None,
        granted_scopes: Iterable[str] | None = None,
        ngram_share: float = NGRAM_SHARE,
    ) -> list[Match]:
        """The ``limit`` most relevant sub-agents, best first (ties: lower id first).

        ``category``: only that category. ``granted_scopes``: only sub-agents whose
        permissions are all among them (an empty list admits only those asking none)."""
        if not self._segments:
            return []
        features, weights = self.query_vector(query, ngram_share)
        if not len(features):
            return []
        df = self._df[features]
        budget = np.cumsum(df) <= POSTINGS_BUDGET
        budget[:MIN_EXACT_GRAMS] = True
        exact = int(budget.sum())
        slots = len(self._ids.view)
        partial = self._accumulate(features[:exact], weights[:exact], slots)
        np.multiply(partial, self._allowed(category, granted_scopes), out=partial)
        hit = top_slots(partial, CANDIDATES)
        if not len(hit):
            return []
        relevance = partial[hit] + self._lookup(features[exact:], weights[exact:], hit)
        is_word = features >= N_GRAM_FEATURES
        # The word half alone, unscaled (÷ √2·(1 − λ)·(1/√2)): cos(words) in [0, 1].
        word_scale = 1.0 - ngram_share
        word_features, word_weights = features[is_word], weights[is_word]
        word_part = self._lookup(word_features, word_weights, hit)
        word_cosine = word_part / word_scale if word_scale > 0 else word_part
        # Which of the request's words a listing contains, each by its share of the request:
        # "釣りの記録" (a fishing log) shares only "記録" (a record) with a baby-feeding log, a
        # close cosine from one common word, but a small coverage.
        squares = word_weights**2
        total = squares.sum()
        coverage = (
            self._lookup(word_features, squares / total, hit, presence=True)
            if total
            else np.zeros(len(hit))
        )
        ids = self._ids.view[hit]
        order = np.lexsort((ids, -relevance))[:limit]
        shown = hit[order]
        # Columns as Python lists first: building a few hundred matches element by element
        # from NumPy scalars cost more than the rest of this function's Python.
        columns = zip(
            ids[order].tolist(),
            np.minimum(relevance[order], 1.0).tolist(),
            self._script.view[shown].tolist(),
            self._root.view[shown].tolist(),
            np.minimum(word_cosine[order], 1.0).tolist(),
            np.minimum(coverage[order], 1.0).tolist(),
            (self._name.view[shown] == title_key(query)).tolist(),
            strict=True,
        )
        return [
            Match(subagent_id, relevance, SCRIPTS[script], root, words, covered, names_it)
            for subagent_id, relevance, script, root, words, covered, names_it in columns
        ]

    def _accumulate(self, features: np.ndarray, weights: np.ndarray, slots: int) -> np.ndarray:
        """Σ document weight · query weight over ``features``, for every slot (0 for none).

        Per segment, its postings' columns of the features times the query: one sparse
        matrix-vector product in SciPy's C++, in float32 as the postings are stored (sums of a
        few dozen terms, within about a millionth of float64's). At a million
        sub-agents, about 220,000 postings a search, it took a third of the time of gathering
        the postings per feature and summing them with ``np.bincount`` in float64, and the
        candidates' selection after it reads half the bytes: a search 4.3–5.5 → 3.2–4.9 ms
        (median; mean 6.1–7.6 → 3.8–5.8), four alternated runs in process."""
        partial = np.zeros(slots, np.float32)
        query = weights.astype(np.float32)
        for segment in self._segments:
            partial[segment.offset : segment.offset + segment.rows] += (
                segment.postings[:, features] @ query
            )
        return partial

    def _lookup(
        self, features: np.ndarray, weights: np.ndarray, slots: np.ndarray, presence: bool = False
    ) -> np.ndarray:
        """Exact contributions of ``features`` to the given (sorted) slots: Σ document weight
        · query weight, or with ``presence`` Σ query weight over the features present."""
        extra = np.zeros(len(slots))
        if not len(features):
            return extra
        for segment in self._segments:
            inside = (slots >= segment.offset) & (slots < segment.offset + segment.rows)
            if not inside.any():
                continue
            positions = np.flatnonzero(inside)
            local = (slots[positions] - segment.offset).astype(np.int32)
            for posting, data, weight in _postings(segment, features, weights):
                where = np.searchsorted(posting, local)  # posting rows are sorted
                where[where == len(posting)] = 0
                found = posting[where] == local
                extra[positions[found]] += weight if presence else data[where[found]] * weight
        return extra


# Every SAMPLE_STRIDE-th slot is read to guess how high the k-th best partial score is.
SAMPLE_STRIDE = 64


def top_slots(partial: np.ndarray, k: int) -> np.ndarray:
    """The slots of the ``k`` highest positive scores (all positive ones when fewer), sorted.

    A common word's n-grams reach nearly every listing: at a million sub-agents a search for
    "reading" scored all 1,005,000, and listing the positive slots and selecting the best 400
    among them took 4 ms of its 11. A stride sample guesses a threshold that about twice ``k``
    slots reach; when at least ``k`` do, the best ``k`` are among them (every slot left out
    scores below the threshold, and so below ``k`` slots that reach it), and only those are
    selected. Otherwise, as with few hits, every positive slot is. On a million random scores
    (all positive, or a tenth): 5.7–6.0 → 1.2 ms and 3.4 → 1.4 ms, the same scores selected."""
    sample = partial[::SAMPLE_STRIDE]
    guess = 2 * k // SAMPLE_STRIDE + 1
    if sample.size > guess:
        threshold = np.partition(sample, sample.size - guess)[sample.size - guess]
        if threshold > 0:
            hit = np.flatnonzero(partial >= threshold)
            if len(hit) >= k:
                return _best(partial, hit, k)
    return _best(partial, np.flatnonzero(partial > 0), k)


def _best(partial: np.ndarray, hit: np.ndarray, k: int) -> np.ndarray:
    if len(hit) > k:
        hit = hit[np.argpartition(-partial[hit], k - 1)[:k]]
        hit.sort()
    return hit


def _postings(segment, features: np.ndarray, weights: np.ndarray):
    """(rows, values, query weight) of each query feature present in the segment."""
    indptr, indices, data = (
        segment.postings.indptr,
        segment.postings.indices,
        segment.postings.data,
    )
    for feature, weight in zip(features.tolist(), weights.tolist(), strict=True):
        start, end = indptr[feature], indptr[feature + 1]
        if start != end:
            yield indices[start:end], data[start:end], weight


# ---------------------------------------------------------------------------- why it matched


def _grams(word: str) -> set[str]:
    padded = f" {word} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def _is_dense(char: str) -> bool:
    return ord(char) >= DENSE_SCRIPT_START


def _dense_runs(words: Iterable[str]) -> Iterable[str]:
    for word in words:
        run = ""
        for char in word:
            if _is_dense(char):
                run += char
            elif run:
                yield run
                run = ""
        if run:
            yield run


def _common_substrings(run: str, text: str) -> list[str]:
    """Greedy longest pieces of ``run`` (two characters or more) that occur in ``text``."""
    found, i = [], 0
    while i < len(run):
        end = i + 1
        while end < len(run) and run[i : end + 1] in text:
            end += 1
        if end - i >= 2 or (len(run) == 1 and run in text):
            found.append(run[i:end])
            i = end
        else:
            i += 1
    return found


def explain_match(
    query: str, fields: Mapping[str, str], analyzer: WordAnalyzer | None = None
) -> dict[str, list[str]]:
    """Which words of the query each field matched ({field: [terms]}, fields in index order).

    A Latin word matches a field that shares at least 60% of its trigrams ("ounce" matches
    "ounces"); a run of CJK characters matches the longest pieces of it the field contains;
    and a Chinese or Japanese word whose English gloss the field says matches as "word
    (gloss)": "跑步 (run)" in a listing written in English."""
    _terms, meanings = (analyzer or shared_analyzer()).terms_and_glosses(query)
    words = normalized_words(query)
    latin = [
        w
        for w in dict.fromkeys(words)
        if len(w) >= 2 and w not in STOP_WORDS and not any(map(_is_dense, w))
    ]
    dense = list(dict.fromkeys(_dense_runs(words)))
    matched: dict[str, list[str]] = {}
    for name in FIELDS:
        text = fields.get(name) or ""
        if not text:
            continue
        field_words = normalized_words(text)
        field_grams = set().union(*(_grams(w) for w in field_words)) if field_words else set()
        joined = "".join(field_words)
        terms = [w for w in latin if len(_grams(w) & field_grams) >= 0.6 * len(_grams(w))]
        for run in dense:
            terms.extend(t for t in _common_substrings(run, joined) if t not in terms)
        if meanings:
            stems = {english_stem(w) for w in field_words if w.isascii()}
            for word, glosses in meanings.items():
                said = [g for g in glosses if g in stems]
                if said and not any(word in t for t in terms):
                    terms.append(f"{word} ({', '.join(said)})")
        if terms:
            matched[name] = terms
    return matched
