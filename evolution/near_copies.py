"""Near-copies of public sub-agents: when a new root is published, find the public sub-agents
it was copied from, so the publisher can be offered to publish it as a fork (lineage, reach
and credit flow to the original), and a declined copy that is nearly identical goes to
moderation with the evidence (the matches and their similarity).

Privacy (for whoever wires this in): only *public* sub-agents are added to the index. A
private or unlisted bundle may be the *query* (its author is told what it resembles, which
they already can see), but it is never added, so it is never a match for anyone else and
nothing about it leaks through another publisher's results.

How a bundle is compared:

1. **Normalized text** that survives renaming and reformatting: comments are dropped (``//``,
   ``/* */``, ``<!-- -->``); text is lowercased and cut into word tokens (``\\w+``), so
   whitespace, indentation, quotes and punctuation do not matter; every run of words of the
   app's own name (``manifest["name"]``, 3+ letters) becomes one placeholder, so a renamed
   copy reads the same; the manifest's name and description are left out, its other fields
   (scopes, hosts, data schema) are compared as one more file. Each file is shingled on its
   own, so the order of files does not matter, and a reordered function only changes the few
   shingles at its edges.
2. **Shingles**: word ``SHINGLE_WORDS``-grams, hashed to 32 bits (stable across processes).
3. **Boilerplate out**: apps written from one template share most of their text (the demo's
   water and caffeine trackers share the whole engine), so raw Jaccard cannot tell a copy from
   a look-alike. ``Boilerplate.learn`` finds the shingles whose document frequency in a sample
   of the catalog exceeds ``MAX_DOCUMENT_FREQUENCY``; they are removed before signing, so what
   is compared is what makes an app itself (its config, labels, fields, own code).
4. **MinHash** (``NUM_PERM`` permutations) of the remaining shingles; bundles with fewer than
   ``MIN_SHINGLES`` distinctive shingles are neither indexed nor matched (nothing to credit).
5. **LSH** (``LSH_BANDS`` bands of ``LSH_ROWS`` values, see ``NearCopyIndex``) gives
   candidates; each is verified on its full signature (estimated Jaccard), kept at
   ≥ ``FORK_OFFER`` and flagged for moderation at ≥ ``MODERATION``.

A signature depends on the ``Boilerplate`` it was made with: persist the signatures of public
sub-agents with the boilerplate they were signed against, rebuild the index from them
(``NearCopyIndex.from_signatures``), and re-sign everything when the boilerplate is re-learned.

The constants are chosen on ``bench/near_copies.py`` (100,000 demo-like sub-agents, 1,000
sources x 4 kinds of planted copy, 1,000 same-template look-alikes; one run, thresholds swept
on the same queries):

* fork offer 0.35: precision 0.983, recall 0.967 (renamed 0.998, reformatted 1.0, lightly
  edited 0.966, all three 0.905), look-alike false matches 0/1,000; the best match is the
  source in 99.9 % of copies. At 0.30 recall is 0.980 but precision 0.946 (the extra matches
  are apps of templates with little text of their own); at 0.40 recall falls to 0.947.
* 3-word shingles: 5 words lose recall on edited copies (--quick: 0.968 against 0.983 at about the
  same precision), because every changed word breaks ``SHINGLE_WORDS`` shingles.
* boilerplate removal is what makes it work: without it every look-alike matches (their
  nearest app is at 0.76-0.98) and precision is 0 (--quick).
* 128 permutations: the estimate's standard error at J = 0.35 is 0.04, below the gap between
  look-alikes (nearest app p99 0.21) and the threshold; query p99 4.9 ms, index 155 MiB.
* moderation 0.8: reformatted copies are at 1.0, renamed ones at 0.81 median; an edited copy
  (0.68 median) is offered a fork, not reported.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from datasketch import MinHash

SHINGLE_WORDS = 3
NUM_PERM = 128
MINHASH_SEED = 20
LSH_BANDS = 64
LSH_ROWS = 2
FORK_OFFER = 0.35
MODERATION = 0.8
MAX_DOCUMENT_FREQUENCY = 0.002
MIN_SHINGLES = 8
# A bundle is at most a few MiB; past this many tokens (or 8 characters a token) a file adds no
# evidence, only latency.
MAX_TOKENS_PER_FILE = 40_000

_PLACEHOLDER = "\x00name"
# ``//`` after a word, colon, quote or backslash is not a comment (``https://``, ``"a//b"``).
_COMMENT = re.compile(r"/\*[\s\S]*?(?:\*/|\Z)|<!--[\s\S]*?(?:-->|\Z)|//(?<![:\w\"'\\]//)[^\n]*")
_TOKEN = re.compile(r"\w+")
_BLOCK_MARK = re.compile(r"[{};]|\bfunction\b")
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_MANIFEST_LEFT_OUT = ("name", "description")


class BundleLike(Protocol):
    @property
    def manifest(self) -> Mapping[str, Any]: ...

    @property
    def files(self) -> Mapping[str, str]: ...


@lru_cache(maxsize=1 << 18)
def _token_hash(token: str) -> int:
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")


def _name_words(manifest: Mapping[str, Any]) -> frozenset[str]:
    name = str(manifest.get("name") or "").lower()
    return frozenset(w for w in _TOKEN.findall(name) if len(w) >= 3 and not w.isdigit())


def _name_to_placeholder(tokens: list[str], own: frozenset[str]) -> list[str]:
    """Each run of the app's name words becomes one placeholder ("Water Tracker" and "Daily
    Hydration Log" read the same)."""
    if not own.intersection(tokens):
        return tokens
    out: list[str] = []
    for token in tokens:
        if token not in own:
            out.append(token)
        elif not out or out[-1] is not _PLACEHOLDER:
            out.append(_PLACEHOLDER)
    return out


def _manifest_text(manifest: Mapping[str, Any]) -> str:
    kept = {k: v for k, v in manifest.items() if k not in _MANIFEST_LEFT_OUT}
    return repr(sorted((str(k), repr(v)) for k, v in kept.items()))


def _top_level_blocks(text: str) -> list[str]:
    """``text`` cut into its top-level statements: after a brace that closes a top-level block
    (a JS function, a CSS rule, CONFIG) or a top-level ``;``, and before a top-level
    ``function``, so that reordering functions or rules only reorders blocks."""
    cuts = [0]
    depth = 0
    for mark in _BLOCK_MARK.finditer(text):
        found = mark.group()
        if found == "{":
            depth += 1
        elif found == "}":
            depth = max(0, depth - 1)
            if depth == 0:
                cuts.append(mark.end())
        elif depth == 0:
            cuts.append(mark.end() if found == ";" else mark.start())
    cuts.append(len(text))
    return [text[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def normalized_tokens(bundle: BundleLike) -> list[list[str]]:
    """One token list per top-level block of each file (and one for the manifest), sorted so
    the order of files, functions and rules does not matter."""
    own = _name_words(bundle.manifest)
    texts = [*bundle.files.values(), _manifest_text(bundle.manifest)]
    out = []
    for text in texts:
        budget = MAX_TOKENS_PER_FILE
        for block in _top_level_blocks(_COMMENT.sub(" ", text[: MAX_TOKENS_PER_FILE * 8])):
            tokens = _TOKEN.findall(block.lower())[:budget]
            budget -= len(tokens)
            if tokens:
                out.append(_name_to_placeholder(tokens, own))
    return sorted(out)


def shingle_hashes(bundle: BundleLike, words: int = SHINGLE_WORDS) -> np.ndarray:
    """The bundle's set of word ``words``-gram hashes (sorted unique uint32); no shingle spans
    two blocks, and a block shorter than ``words`` is one shingle."""
    blocks = normalized_tokens(bundle)
    if not blocks:
        return np.zeros(0, np.uint32)
    # All blocks end to end, each padded to ``words`` tokens, and a gram kept only when its
    # first and last token are in the same block.
    sizes = [max(len(b), words) for b in blocks]
    tokens = [t for b in blocks for t in (b + [""] * (words - len(b)) if len(b) < words else b)]
    hashes = np.array(list(map(_token_hash, tokens)), np.uint64)
    block_of = np.repeat(np.arange(len(blocks)), sizes)
    grams = np.zeros(len(hashes) - words + 1, np.uint64)
    for offset in range(words):
        grams = grams * _MULTIPLIER + hashes[offset : offset + len(grams)]
    grams = grams[block_of[: len(grams)] == block_of[words - 1 :]]
    return np.unique((grams ^ (grams >> np.uint64(32))).astype(np.uint32))


def exact_fingerprint(bundle: BundleLike) -> str:
    """The exact-hash baseline: sha256 of the normalized text (same normalization, no
    shingles), so it survives renaming and whitespace/quote changes but no edit at all."""
    digest = hashlib.sha256()
    for tokens in normalized_tokens(bundle):
        digest.update(" ".join(tokens).encode())
        digest.update(b"\x01")
    return digest.hexdigest()


@dataclass(frozen=True)
class Boilerplate:
    """Shingles too common to be evidence of copying (template text), as sorted uint32."""

    hashes: np.ndarray

    @classmethod
    def none(cls) -> Boilerplate:
        return cls(np.zeros(0, np.uint32))

    @classmethod
    def learn(
        cls,
        bundles: Iterable[BundleLike],
        *,
        max_document_frequency: float = MAX_DOCUMENT_FREQUENCY,
        words: int = SHINGLE_WORDS,
    ) -> Boilerplate:
        """Shingles in more than ``max_document_frequency`` of ``bundles`` (a sample of the
        public catalog; a few thousand is enough, template text is in a share of it)."""
        sets = [shingle_hashes(b, words) for b in bundles]
        if not sets:
            return cls.none()
        values, counts = np.unique(np.concatenate(sets), return_counts=True)
        return cls(values[counts > max(1.0, max_document_frequency * len(sets))])

    def strip(self, shingles: np.ndarray) -> np.ndarray:
        if len(self.hashes) == 0:
            return shingles
        at = np.searchsorted(self.hashes, shingles).clip(max=len(self.hashes) - 1)
        return shingles[self.hashes[at] != shingles]


def distinctive_shingles(
    bundle: BundleLike, boilerplate: Boilerplate, *, words: int = SHINGLE_WORDS
) -> np.ndarray:
    """The bundle's shingles that are not boilerplate: what makes it itself."""
    return boilerplate.strip(shingle_hashes(bundle, words))


def jaccard(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """The exact Jaccard similarity of two sorted unique shingle sets, and how many shingles
    they share (what the MinHash estimate stands in for, computed on a few candidates)."""
    shared = len(np.intersect1d(a, b, assume_unique=True))
    union = len(a) + len(b) - shared
    return (shared / union if union else 0.0), shared


@dataclass(frozen=True)
class FileMatch:
    """A file of the copy and the original's file it shares most distinctive shingles with."""

    path: str
    original_path: str
    shared: int  # distinctive shingles in common
    share: float  # of the copy file's distinctive shingles


@dataclass(frozen=True)
class _OneFile:
    manifest: Mapping[str, Any]
    files: Mapping[str, str]


def matching_files(
    copy: BundleLike, original: BundleLike, boilerplate: Boilerplate, *, words: int = SHINGLE_WORDS
) -> list[FileMatch]:
    """Evidence for a moderator: each file of ``copy`` that shares distinctive shingles with a
    file of ``original``, paired with the file it shares most with, most shared first. Each
    file is shingled alone under its bundle's name (renamed copies still pair up)."""

    def per_file(bundle: BundleLike) -> dict[str, np.ndarray]:
        name = {"name": bundle.manifest.get("name") or ""}
        return {
            path: distinctive_shingles(_OneFile(name, {path: text}), boilerplate, words=words)
            for path, text in bundle.files.items()
        }

    theirs = per_file(original)
    found = []
    for path, mine in sorted(per_file(copy).items()):
        if len(mine) == 0:
            continue
        best = max(
            (
                (len(np.intersect1d(mine, other, assume_unique=True)), p)
                for p, other in theirs.items()
            ),
            default=(0, ""),
        )
        if best[0]:
            found.append(FileMatch(path, best[1], best[0], best[0] / len(mine)))
    return sorted(found, key=lambda m: (-m.shared, m.path))


def signature(
    bundle: BundleLike, boilerplate: Boilerplate, *, words: int = SHINGLE_WORDS
) -> np.ndarray | None:
    """The bundle's MinHash signature (uint32, ``NUM_PERM`` values) over its distinctive
    shingles, or None when it has fewer than ``MIN_SHINGLES`` of them."""
    distinctive = distinctive_shingles(bundle, boilerplate, words=words)
    if len(distinctive) < MIN_SHINGLES:
        return None
    minhash = MinHash(
        num_perm=NUM_PERM,
        seed=MINHASH_SEED,
        hashfunc=int,
        permutations=_permutations(),
        scheme="affine32",
    )
    minhash.update_batch(distinctive.tolist())
    return minhash.hashvalues.copy()


@dataclass(frozen=True)
class NearCopy:
    key: Hashable
    similarity: float  # estimated Jaccard of the distinctive shingles
    moderation: bool  # similarity >= the moderation threshold


class NearCopyIndex:
    """Public sub-agents' signatures, queried when a new root is published.

    Banded LSH (``LSH_BANDS`` bands of ``LSH_ROWS`` signature values): two bundles are
    candidates when one band is equal, so a pair of estimated Jaccard J is a candidate with
    probability 1 - (1 - J^rows)^bands (0.98 at J = 0.25, 0.47 at 0.1). The bands are kept as
    flat sorted numpy arrays (16 bytes a band and sub-agent), plus a small dict for what was
    added since the last merge: ``datasketch.MinHashLSH`` keeps a Python set per bucket, about
    18.5 MiB per 1,000 sub-agents at these bands (measured in ``bench/near_copies.py``), so
    1.8 GiB at 100,000. Candidates are verified on the whole signature.
    """

    def __init__(
        self,
        boilerplate: Boilerplate,
        *,
        words: int = SHINGLE_WORDS,
        fork_offer: float = FORK_OFFER,
        moderation: float = MODERATION,
    ) -> None:
        self.boilerplate = boilerplate
        self.words = words
        self.fork_offer = fork_offer
        self.moderation = moderation
        self._rows: dict[Hashable, int] = {}
        self._keys: list[Hashable] = []
        self._signatures = np.zeros((0, NUM_PERM), np.uint32)
        self._alive = np.zeros(0, bool)
        self._sorted_bands = np.zeros(0, np.uint64)
        self._sorted_rows = np.zeros(0, np.int64)
        self._recent: dict[int, list[int]] = {}
        self._recent_entries = 0

    @classmethod
    def from_signatures(
        cls, boilerplate: Boilerplate, signatures: Iterable[tuple[Hashable, np.ndarray]], **kw: Any
    ) -> NearCopyIndex:
        """The index of stored signatures, built in one sort."""
        index = cls(boilerplate, **kw)
        latest = dict(signatures)
        if latest:
            index._keys = list(latest)
            index._rows = {key: row for row, key in enumerate(index._keys)}
            index._signatures = np.stack([np.asarray(s, np.uint32) for s in latest.values()])
            index._alive = np.ones(len(latest), bool)
            index._merge()
        return index

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._rows

    def signatures(self) -> Iterable[tuple[Hashable, np.ndarray]]:
        return ((key, self._signatures[row]) for key, row in self._rows.items())

    def signature(self, bundle: BundleLike) -> np.ndarray | None:
        return signature(bundle, self.boilerplate, words=self.words)

    def add(self, key: Hashable, bundle: BundleLike) -> np.ndarray | None:
        """Index a public bundle; returns its signature to persist (None: nothing distinctive,
        not indexed)."""
        sig = self.signature(bundle)
        if sig is not None:
            self.add_signature(key, sig)
        return sig

    def add_signature(self, key: Hashable, sig: np.ndarray) -> None:
        self.remove(key)
        row = len(self._keys)
        if row == len(self._signatures):  # grow by half, so appending stays amortized O(1)
            grown = max(1024, row + row // 2)
            self._signatures = np.resize(self._signatures, (grown, NUM_PERM))
            self._alive = np.concatenate([self._alive, np.zeros(grown - row, bool)])
        self._keys.append(key)
        self._rows[key] = row
        self._signatures[row] = np.asarray(sig, np.uint32)
        self._alive[row] = True
        for band in _band_hashes(self._signatures[row : row + 1])[0].tolist():
            self._recent.setdefault(band, []).append(row)
        self._recent_entries += LSH_BANDS
        if self._recent_entries > max(1 << 16, len(self._sorted_bands) // 8):
            self._merge()

    def remove(self, key: Hashable) -> None:
        row = self._rows.pop(key, None)
        if row is not None:
            self._alive[row] = False

    def query(self, bundle: BundleLike) -> list[NearCopy]:
        sig = self.signature(bundle)
        return [] if sig is None else self.query_signature(sig)

    def query_signature(self, sig: np.ndarray) -> list[NearCopy]:
        """Indexed sub-agents whose estimated similarity is at least ``fork_offer``, most
        similar first."""
        sig = np.asarray(sig, np.uint32)
        bands = _band_hashes(sig[None, :])[0]
        lo = np.searchsorted(self._sorted_bands, bands, side="left")
        hi = np.searchsorted(self._sorted_bands, bands, side="right")
        spans = zip(lo.tolist(), hi.tolist(), strict=True)
        found = [self._sorted_rows[a:b] for a, b in spans if b > a]
        found += [np.asarray(self._recent[b]) for b in bands.tolist() if b in self._recent]
        if not found:
            return []
        rows = np.unique(np.concatenate(found))
        rows = rows[self._alive[rows]]
        similarity = (self._signatures[rows] == sig).mean(axis=1)
        keep = similarity >= self.fork_offer
        order = np.argsort(-similarity[keep], kind="stable")
        return [
            NearCopy(self._keys[row], float(sim), bool(sim >= self.moderation))
            for row, sim in zip(
                rows[keep][order].tolist(), similarity[keep][order].tolist(), strict=True
            )
        ]

    def _merge(self) -> None:
        """Fold the recent dict into the sorted arrays, dropping removed sub-agents."""
        rows = np.flatnonzero(self._alive[: len(self._keys)])
        bands = _band_hashes(self._signatures[rows]).ravel()
        rows = np.repeat(rows, LSH_BANDS)
        order = np.argsort(bands, kind="stable")
        self._sorted_bands, self._sorted_rows = bands[order], rows[order]
        self._recent = {}
        self._recent_entries = 0


def _band_hashes(signatures: np.ndarray) -> np.ndarray:
    """One uint64 per (signature, band); the band's number is mixed in, so equal values in
    two bands are not a match."""
    values = signatures[:, : LSH_BANDS * LSH_ROWS].astype(np.uint64)
    values = values.reshape(len(signatures), LSH_BANDS, LSH_ROWS)
    hashes = np.broadcast_to(np.arange(1, LSH_BANDS + 1, dtype=np.uint64), values.shape[:2])
    for r in range(LSH_ROWS):
        hashes = hashes * _MULTIPLIER + values[:, :, r]
    return hashes


@lru_cache(maxsize=1)
def _permutations() -> Any:
    """Drawn once: drawing them is most of the cost of signing a small set."""
    return MinHash(num_perm=NUM_PERM, seed=MINHASH_SEED, scheme="affine32").permutations
