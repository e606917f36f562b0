"""One reward-dataset export: arrays in, a run directory of shards out. No database here.

The caller (``market.exports.services`` for the real catalog, the benchmark and the simulator
tests for made-up ones) hands over the versions as arrays, the consenting feedback as arrays,
and a ``TextSource`` that loads prompts, bundles and comments for a batch of ids. The numbers
(debiased rewards, pairs, labels; ``feedback.rewards``) are computed once over all the arrays;
text is loaded and rows are written one batch at a time, group by group (split × category), so
memory holds the numeric arrays (a few dozen bytes per rating) plus one batch of text.

Kinds (each a config of the dataset card; ``*_conversational`` has the same rows with
``prompt``/``completion``/``chosen``/``rejected`` as lists of {role, content} messages):

* ``scalar``: one row per exported version: prompt, completion, reward ± sd, evidence and raw
  rating figures, exposure propensities.
* ``pairwise``: TRL preference rows, ``prompt``/``chosen``/``rejected``/``margin``.
* ``unpaired``: TRL KTO rows, ``prompt``/``completion``/``label``.
* ``ratings``: the correlated feedback itself, one row per consenting rating of an exported
  version, the rater as a pseudonym: HMAC-SHA256 of the user id under a key drawn for this run
  and never stored, so pseudonyms link a person's ratings within one export and not across two.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa

from evolution.tree import Forest
from feedback import rewards
from feedback.dataset_files import (
    JsonLines,
    ShardedConfig,
    ShardInfo,
    card_front_matter,
    finish_files,
)
from feedback.rewards import RELATIONS, RatingArrays, VersionText
from feedback.scrub import Scrubber

MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
PSEUDONYM_HEX = 32  # 128 bits of the HMAC: collisions are out of reach at any user count
KINDS = ("scalar", "pairwise", "unpaired", "ratings")
TEXT_KINDS = ("scalar", "pairwise", "unpaired")

_COMMON = [
    ("version_id", pa.int64()),
    ("subagent_id", pa.int64()),
    ("root_id", pa.int64()),
    ("category", pa.string()),
]


def _schema(text_fields: list[tuple[str, pa.DataType]], rest: list) -> pa.Schema:
    return pa.schema(text_fields + rest)


SCALAR_FIELDS = [
    ("reward", pa.float64()),
    ("reward_sd", pa.float64()),
    ("reward_lower", pa.float64()),
    *_COMMON,
    ("parent_version_id", pa.int64()),
    ("version_number", pa.int32()),
    ("ratings", pa.int64()),
    ("raters", pa.int64()),
    ("own_mean", pa.float64()),
    ("own_precision", pa.float64()),
    ("raw_mean", pa.float64()),
    ("stars_count", pa.int64()),
    ("stars_mean", pa.float64()),
    ("thumbs_up", pa.int64()),
    ("thumbs_down", pa.int64()),
    ("exposed_ratings", pa.int64()),
    ("propensity_mean", pa.float64()),
    ("propensity_min", pa.float64()),
    ("ips_mean", pa.float64()),
]
PAIRWISE_FIELDS = [
    ("margin", pa.float64()),
    ("margin_sd", pa.float64()),
    ("p_chosen_better", pa.float64()),
    ("relation", pa.string()),
    ("chosen_version_id", pa.int64()),
    ("rejected_version_id", pa.int64()),
    ("chosen_root_id", pa.int64()),
    ("rejected_root_id", pa.int64()),
    ("category", pa.string()),
    ("co_raters", pa.int64()),
    ("chosen_reward", pa.float64()),
    ("rejected_reward", pa.float64()),
]
UNPAIRED_FIELDS = [
    ("label", pa.bool_()),
    ("p_above_reference", pa.float64()),
    ("reference", pa.float64()),
    ("reward", pa.float64()),
    ("reward_sd", pa.float64()),
    *_COMMON,
]
RATINGS_SCHEMA = pa.schema(
    [
        ("rater", pa.string()),
        *_COMMON,
        ("scale", pa.string()),
        ("rating", pa.int8()),
        ("rating_z", pa.float32()),
        ("rater_leniency", pa.float32()),
        ("debiased", pa.float32()),
        ("propensity", pa.float64()),
        ("day", pa.date32()),
        ("comment", pa.string()),
        ("tags", pa.list_(pa.string())),
    ]
)


# In memory the two label columns stay dictionary-encoded (no string per row); the files do not
# store the Arrow schema, so every reader gets RATINGS_SCHEMA's plain strings.
_LABEL = pa.dictionary(pa.int8(), pa.string())
RATINGS_WRITE_SCHEMA = pa.schema(
    [pa.field(f.name, _LABEL) if f.name in ("category", "scale") else f for f in RATINGS_SCHEMA]
)


def text_schema(kind: str, conversational: bool) -> pa.Schema:
    text = MESSAGES if conversational else pa.string()
    if kind == "scalar":
        return pa.schema([("prompt", text), ("completion", text), *SCALAR_FIELDS])
    if kind == "pairwise":
        return pa.schema([("prompt", text), ("chosen", text), ("rejected", text), *PAIRWISE_FIELDS])
    return pa.schema([("prompt", text), ("completion", text), *UNPAIRED_FIELDS])


SCHEMAS = {kind: text_schema(kind, False) for kind in TEXT_KINDS}


# --------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class ExportParameters:
    k_anonymity: int = rewards.DEFAULT_K_ANONYMITY
    confidence: float = rewards.DEFAULT_CONFIDENCE
    test_share: float = rewards.DEFAULT_TEST_SHARE
    include_comments: bool = False
    conversational: bool = True  # also write the *_conversational configs
    openai_jsonl: bool = False
    max_pairs_per_item: int = rewards.DEFAULT_MAX_PAIRS_PER_ITEM
    sibling_window: int = rewards.DEFAULT_SIBLING_WINDOW
    # Batches bound memory: versions' text per batch, ratings per Arrow batch.
    text_batch: int = 1024
    ratings_batch: int = 1_000_000
    max_rows_per_shard: int = 5_000_000
    max_bytes_per_shard: int = 256 * 1024 * 1024

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CatalogArrays:
    """The exportable versions (public, active), index-aligned."""

    version_id: np.ndarray  # int64
    parent_version_id: np.ndarray  # int64, -1 for none (a root, or a parent not exported)
    subagent_id: np.ndarray  # int64
    category: np.ndarray  # int32 codes into ``categories``
    categories: tuple[str, ...]


@dataclass(frozen=True)
class FeedbackColumns:
    """Consenting ratings, one per (user, version)."""

    feedback_id: np.ndarray  # int64
    user_id: np.ndarray  # int64
    version_id: np.ndarray  # int64
    is_thumb: np.ndarray  # bool
    rating: np.ndarray  # int8: stars 1..5, thumbs 0/1
    propensity: np.ndarray  # float64, NaN when the rating cites no exposure
    day: np.ndarray  # int32, UTC days since 1970-01-01 of the last write
    is_new: np.ndarray | None = None  # written after the previous run's watermark (incremental)

    def __len__(self) -> int:
        return int(self.feedback_id.size)


@dataclass(frozen=True)
class Comment:
    text: str | None
    tags: list[str]
    own_values: tuple[str | None, ...]  # the writer's profile values, scrubbed wherever seen


class TextSource(Protocol):
    def versions(self, version_ids: Sequence[int]) -> dict[int, VersionText]: ...

    def comments(self, feedback_ids: Sequence[int]) -> dict[int, Comment]: ...

    def comment_scrubber(self) -> Scrubber: ...


Progress = Callable[[str, int, int], None]


@dataclass
class ExportResult:
    shards: list[ShardInfo]
    counts: dict
    model: dict
    seconds: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers
def dense_index(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique ids, index of each id among them). A direct table when ids are dense (the
    usual case for database keys), a sort otherwise."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size == 0:
        return ids, ids
    low, high = int(ids.min()), int(ids.max())
    if low >= 0 and high < 4 * ids.size + 1_000_000:
        present = np.bincount(ids, minlength=high + 1) > 0
        unique = np.flatnonzero(present)
        position = np.cumsum(present) - 1
        return unique, position[ids]
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, inverse


def pseudonyms(user_ids: np.ndarray, key: bytes) -> np.ndarray:
    """HMAC-SHA256(key, decimal user id), first 128 bits in hex, as fixed-width ASCII
    (``S32``): the ratings column is then a gather of 32-byte records, not of string objects."""
    half = PSEUDONYM_HEX // 2
    keyed = hmac.new(key, digestmod=hashlib.sha256)  # keyed once; each id continues a copy
    digests = bytearray()
    for user in user_ids.tolist():
        mac = keyed.copy()
        mac.update(b"%d" % user)
        digests += mac.digest()[:half]
    return np.frombuffer(digests.hex().encode("ascii"), dtype=f"S{PSEUDONYM_HEX}")


def fixed_width_strings(values: np.ndarray) -> pa.Array:
    """An Arrow string array over a numpy ``S<w>`` array's bytes, every value ``w`` long: the
    offsets are a multiple of ``w``, so there is nothing to scan or copy per value."""
    width = values.dtype.itemsize
    n = values.size
    if width * n >= 2**31:
        raise ValueError(f"{n} strings of {width} bytes do not fit one Arrow string array")
    offsets = np.arange(0, width * (n + 1), width, dtype=np.int32)
    data = np.ascontiguousarray(values)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def _nullable(values: np.ndarray) -> pa.Array:
    values = np.asarray(values, dtype=np.float64)
    return pa.array(values, mask=~np.isfinite(values))


def messages(role: str, text: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each string as a one-message conversation [{"role": role, "content": text}], built
    column-wise (no Python dict per row)."""
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    n = len(text)
    turn = pa.StructArray.from_arrays([_repeated(role, n), text], names=["role", "content"])
    offsets = pa.array(np.arange(n + 1, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, turn, type=MESSAGES, mask=text.is_null())


def _repeated(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(n, np.int8)), pa.array([value], pa.string())
    ).cast(pa.string())


def _group_runs(groups: np.ndarray) -> Iterator[tuple[int, int, int]]:
    """(group code, start, stop) of the runs of equal codes in a sorted array."""
    if groups.size == 0:
        return
    edges = np.r_[0, np.flatnonzero(groups[1:] != groups[:-1]) + 1, groups.size]
    for start, stop in itertools.pairwise(edges):
        yield int(groups[start]), int(start), int(stop)


class _LockedTexts:
    """One text source shared by two threads: a database session is not thread-safe."""

    def __init__(self, texts: TextSource) -> None:
        self.texts, self.lock = texts, threading.Lock()

    def versions(self, version_ids: Sequence[int]) -> dict[int, VersionText]:
        with self.lock:
            return self.texts.versions(version_ids)

    def comments(self, feedback_ids: Sequence[int]) -> dict[int, Comment]:
        with self.lock:
            return self.texts.comments(feedback_ids)

    def comment_scrubber(self) -> Scrubber:
        with self.lock:
            return self.texts.comment_scrubber()


class _TextCache:
    """The most recently used versions' text, up to ``budget`` bytes: a version shows up in
    its scalar row and then in several pairs of the same group, and loading it (a database
    read and a decompression) costs more than keeping it."""

    def __init__(self, source, version_id: np.ndarray, budget: int = 64 * 1024 * 1024) -> None:
        self.source, self.version_id, self.budget = source, version_id, budget
        self.entries: OrderedDict[int, VersionText] = OrderedDict()
        self.size = 0
        self.scrubber = Scrubber()
        self.prompts: dict[int, str] = {}
        self.sibling_prompts: dict[tuple[str, str | None, str | None], str] = {}

    def prompt(self, version_id: int) -> str:
        """The version's own prompt, scrubbed (prompts quote people's fork requests)."""
        prompt = self.prompts.get(version_id)
        if prompt is None:
            prompt = self.scrubber.scrub(rewards.version_prompt(self.entries[version_id]))
            self.prompts[version_id] = prompt
        return prompt

    def pair_prompt(self, relation: int, chosen: VersionText, rejected: VersionText) -> str:
        """A sibling or co-rated pair's shared prompt (a parent-child pair uses ``prompt``)."""
        key = (chosen.category, chosen.parent_title, chosen.parent_summary)
        if relation != rewards.SIBLING:
            key = (chosen.category, None, None)
        prompt = self.sibling_prompts.get(key)
        if prompt is None:
            prompt = self.scrubber.scrub(rewards.pair_prompt(relation, chosen, rejected, 0))
            if len(self.sibling_prompts) > 100_000:
                self.sibling_prompts.clear()
            self.sibling_prompts[key] = prompt
        return prompt

    def get(self, nodes: np.ndarray) -> dict[int, VersionText]:
        wanted = [int(v) for v in self.version_id[nodes]]
        missing = [v for v in wanted if v not in self.entries]
        loaded = self.source.versions(missing) if missing else {}
        out = {}
        for vid in wanted:
            text = self.entries.get(vid)
            if text is None:
                text = loaded.get(vid)
                if text is None:
                    continue
                self.entries[vid] = text
                self.size += len(text.completion) + 256
            else:
                self.entries.move_to_end(vid)
            out[vid] = text
        while self.size > self.budget and len(self.entries) > len(out):
            old_id, old = self.entries.popitem(last=False)
            self.prompts.pop(old_id, None)
            self.size -= len(old.completion) + 256
        return out


class _Ticker:
    """Progress from two threads, summed."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0
        self.lock = threading.Lock()

    def add_to_total(self, rows: int) -> None:
        with self.lock:
            self.total += rows

    def __call__(self, rows: int) -> None:
        with self.lock:
            self.done += rows
            self.progress("rows", self.done, self.total)


# --------------------------------------------------------------------------- the export
class RewardExport:
    """Computes everything numeric on construction; ``write`` streams the files."""

    def __init__(
        self,
        catalog: CatalogArrays,
        feedback: FeedbackColumns,
        parameters: ExportParameters,
        *,
        pseudonym_key: bytes,
        progress: Progress | None = None,
    ) -> None:
        """``pseudonym_key``: the HMAC key of this export only (the caller draws it and keeps
        it nowhere); the pseudonyms are computed on a second thread while the model is fitted."""
        started = time.perf_counter()
        self.catalog, self.parameters = catalog, parameters
        self.progress = progress or (lambda stage, done, total: None)
        self.seconds: dict[str, float] = {}
        self.forest = Forest.from_parents(catalog.version_id, catalog.parent_version_id)
        n = self.forest.n

        item = self.forest.index_of(feedback.version_id, missing=-1)
        known = item >= 0
        if not known.all():  # ratings of versions that are not exported: not used at all
            feedback = FeedbackColumns(
                **{
                    name: (value[known] if value is not None else None)
                    for name, value in vars(feedback).items()
                }
            )
            item = item[known]
        self.feedback = feedback
        # int64 indices: every numpy gather and bincount below wants them, and converting
        # ten million indices each time costs more than the memory they take.
        self.item = item.astype(np.int64, copy=False)
        self.user_ids, user_idx = dense_index(feedback.user_id)
        self.user_idx = user_idx.astype(np.int64, copy=False)
        # Which ratings are exported needs only the raters per version (one rating per user
        # and version): known before the model, so their pseudonyms can be made meanwhile.
        self.eligible = np.bincount(self.item, minlength=n) >= parameters.k_anonymity
        if feedback.is_new is None:
            self.touched = np.ones(n, dtype=bool)
            self.rating_rows = np.flatnonzero(self.eligible[self.item])
        else:
            self.touched = np.bincount(self.item[feedback.is_new], minlength=n) > 0
            self.rating_rows = np.flatnonzero(self.eligible[self.item] & feedback.is_new)
        self.root_id = catalog.subagent_id[self.forest.root]
        self.test = rewards.is_test_root(self.root_id, parameters.test_share)
        self.category = np.asarray(catalog.category, dtype=np.int32)
        self._prepared: dict[str, object] = {}
        self._prepare_thread = threading.Thread(
            target=self._prepare, args=(pseudonym_key,), name="export-prepare"
        )
        self._prepare_thread.start()
        self.progress("model", 0, 1)
        self.estimate = rewards.estimate_rewards(
            self.forest,
            RatingArrays(
                user_idx=self.user_idx,
                item_idx=self.item,
                value=feedback.rating,
                is_thumb=feedback.is_thumb,
                propensity=feedback.propensity,
                unique_pairs=True,
            ),
            n_users=int(self.user_ids.size),
        )
        self.seconds["model"] = time.perf_counter() - started
        assert np.array_equal(
            self.eligible, rewards.eligible_items(self.estimate, parameters.k_anonymity)
        )

    def _prepare(self, key: bytes) -> None:
        """On a second thread while the model is fitted (the caller draws ``key`` for this
        export and keeps it nowhere): what the writing needs and the model does not decide,
        namely the raters' pseudonyms, the ratings' groups and the co-rated pair candidates."""
        try:
            started = time.perf_counter()
            exported = np.flatnonzero(
                np.bincount(self.user_idx[self.rating_rows], minlength=self.user_ids.size)
            )
            # Users with no exported rating never appear in a written row: their slot stays
            # blank rather than costing an HMAC.
            names = np.zeros(self.user_ids.size, dtype=f"S{PSEUDONYM_HEX}")
            names[exported] = pseudonyms(self.user_ids[exported], key)
            self._prepared["raters"] = names
            self.seconds["pseudonyms"] = time.perf_counter() - started
            self._prepared["ratings_groups"] = self._ratings_groups()
            self._prepared["co_rated"] = rewards.co_rated_candidates(
                RatingArrays(self.user_idx, self.item, self.feedback.rating, unique_pairs=True),
                self.eligible,
                self.category,
                self.test,
            )
        except BaseException as error:  # re-raised by _prepared_value, on the caller's thread
            self._prepared["error"] = error

    def _prepared_value(self, name: str):
        self._prepare_thread.join()
        if "error" in self._prepared:
            raise self._prepared["error"]
        return self._prepared[name]

    # The pairs and labels are computed when first asked for: ``write`` starts writing the
    # ratings (which need only the model) first, so the pair search overlaps that.
    @cached_property
    def pairs(self) -> rewards.Pairs:
        started = time.perf_counter()
        pairs = rewards.select_pairs(
            self.forest,
            self.estimate,
            RatingArrays(self.user_idx, self.item, self.feedback.rating, unique_pairs=True),
            eligible=self.eligible,
            category=self.category,
            test=self.test,
            confidence=self.parameters.confidence,
            sibling_window=self.parameters.sibling_window,
            max_pairs_per_item=self.parameters.max_pairs_per_item,
            co_rated=self._prepared_value("co_rated"),
        )
        self.seconds["pairs"] = time.perf_counter() - started
        return pairs

    @cached_property
    def unpaired(self) -> rewards.UnpairedLabels:
        return rewards.unpaired_labels(
            self.estimate,
            eligible=self.eligible,
            category=self.category,
            confidence=self.parameters.confidence,
        )

    def rater_names(self) -> np.ndarray:
        """Pseudonym of every user index (``S32``; blank for users with no exported rating)."""
        return self._prepared_value("raters")

    # ------------------------------------------------------------------ groups
    def _group_of(self, nodes: np.ndarray) -> np.ndarray:
        """Split and category as one small code: test × n_categories + category."""
        n_categories = max(len(self.catalog.categories), 1)
        return (self.test[nodes].astype(np.int32) * n_categories + self.category[nodes]).astype(
            np.int16 if 2 * n_categories < 2**15 else np.int32
        )

    def _group_name(self, code: int) -> tuple[str, str]:
        n_categories = max(len(self.catalog.categories), 1)
        split = "test" if code >= n_categories else "train"
        return self.catalog.categories[code % n_categories], split

    # ------------------------------------------------------------------ writing
    def write(self, directory: Path, texts: TextSource) -> ExportResult:
        """Write every config's shards into ``directory`` (the threads: see below). The
        ratings and the text rows share the text source under a lock."""
        p = self.parameters
        shapes = [False, True] if p.conversational else [False]
        configs: dict[str, ShardedConfig] = {}
        for kind in TEXT_KINDS:
            for conversational in shapes:
                name = kind + ("_conversational" if conversational else "")
                configs[name] = ShardedConfig(
                    directory,
                    name,
                    text_schema(kind, conversational),
                    max_rows=p.max_rows_per_shard,
                    max_bytes=p.max_bytes_per_shard,
                )
        # One ratings writer per thread that writes ratings: a group (category, split) is
        # written by one thread only, so their files never collide.
        ratings_configs = [
            ShardedConfig(
                directory,
                "ratings",
                RATINGS_WRITE_SCHEMA,
                max_rows=p.max_rows_per_shard,
                max_bytes=p.max_bytes_per_shard,
                store_schema=False,
            )
            for _thread in range(2)
        ]
        openai = JsonLines(directory, "openai") if p.openai_jsonl else None
        counts: dict[str, dict[str, int]] = {name: {} for name in [*configs, "ratings", "openai"]}
        source = _LockedTexts(texts)

        # The ratings (numeric; Arrow's C++ encoder, which releases the GIL, does most of the
        # work) are written on a second thread while this one builds the text rows. They need
        # only the model, so they start before the pair search below. The text rows take less
        # time than the ratings, so this thread then takes ratings groups too, until none is
        # left. (A writer thread per kind, so that encoding overlapped row building, was tried:
        # on two cores both are already busy, and the extra threads only added contention.)
        started = time.perf_counter()
        tick = _Ticker(self.progress, self.rating_rows.size)
        ratings_groups = deque(
            sorted(
                self._prepared_value("ratings_groups"),
                key=lambda group: group[1].size,
                reverse=True,
            )
        )
        scrubber = self._comment_scrubber(source)
        ratings_error: list[BaseException] = []
        ratings_thread = threading.Thread(
            target=self._write_ratings,
            args=(ratings_groups, ratings_configs[0], counts["ratings"], source, scrubber, tick),
            kwargs={"errors": ratings_error},
            name="export-ratings",
        )
        ratings_thread.start()
        try:
            scalar_items = np.flatnonzero(self.eligible & self.touched)
            scalar_items = scalar_items[np.argsort(self.catalog.version_id[scalar_items])]
            scalar_groups = self._group_of(scalar_items)
            order = np.argsort(scalar_groups, kind="stable")
            scalar_items, scalar_groups = scalar_items[order], scalar_groups[order]
            pair_keep = np.flatnonzero(
                self.touched[self.pairs.chosen] | self.touched[self.pairs.rejected]
            )
            pairs = self.pairs.take(pair_keep)
            pair_groups = self._group_of(pairs.chosen)
            order = np.argsort(pair_groups, kind="stable")
            pairs, pair_groups = pairs.take(order), pair_groups[order]
            tick.add_to_total(scalar_items.size + len(pairs))
            self._write_text_kinds(
                configs,
                openai,
                counts,
                source,
                scalar_items,
                scalar_groups,
                pairs,
                pair_groups,
                tick,
            )
            self._write_ratings(
                ratings_groups, ratings_configs[1], counts["ratings"], source, scrubber, tick
            )
        finally:
            ratings_thread.join()
        if ratings_error:
            raise ratings_error[0]
        shards = [shard for config in configs.values() for shard in config.close()]
        ratings_shards = [s for config in ratings_configs for s in config.close(placeholder=False)]
        # Sorted, so the manifest does not depend on which thread wrote which group; the
        # empty placeholder (a config with no rows) once, not once per writer.
        shards += sorted(ratings_shards, key=lambda shard: shard.path) or ratings_configs[0].close()
        if openai is not None:
            shards += openai.close()
        self.seconds["write"] = time.perf_counter() - started
        started = time.perf_counter()
        finish_files(directory, shards)
        self.seconds["hash"] = time.perf_counter() - started
        summary = {
            name: {"total": sum(by_group.values()), "by_group": dict(sorted(by_group.items()))}
            for name, by_group in counts.items()
            if name != "openai" or openai is not None
        }
        return ExportResult(
            shards=shards, counts=summary, model=self.model_summary(), seconds=self.seconds
        )

    def _write_text_kinds(
        self, configs, openai, counts, source, scalar_items, scalar_groups, pairs, pair_groups, tick
    ) -> None:
        p = self.parameters
        label_of = np.full(self.forest.n, -1, dtype=np.int64)
        label_of[self.unpaired.item] = np.arange(self.unpaired.item.size)
        scalar_runs = {code: (a, b) for code, a, b in _group_runs(scalar_groups)}
        pair_runs = {code: (a, b) for code, a, b in _group_runs(pair_groups)}
        cache = _TextCache(source, self.catalog.version_id)
        vid = self.catalog.version_id
        for code in sorted(set(scalar_runs) | set(pair_runs)):
            category, split = self._group_name(code)
            a, b = scalar_runs.get(code, (0, 0))
            for start in range(a, b, p.text_batch):
                batch = scalar_items[start : min(start + p.text_batch, b)]
                loaded = cache.get(batch)
                batch = batch[np.isin(vid[batch], np.fromiter(loaded, np.int64, len(loaded)))]
                ids = vid[batch].tolist()
                prompts = pa.array([cache.prompt(v) for v in ids], pa.string())
                completions = pa.array([loaded[v].completion for v in ids], pa.string())
                numbers = np.fromiter((loaded[v].number for v in ids), np.int32, len(ids))
                table = self._scalar_table(batch, prompts, completions, numbers, category)
                self._write_shapes(configs, "scalar", category, split, table, counts)
                labelled = np.flatnonzero(label_of[batch] >= 0)
                if labelled.size:
                    take = pa.array(labelled)
                    table = self._unpaired_table(
                        batch[labelled],
                        prompts.take(take),
                        completions.take(take),
                        label_of[batch[labelled]],
                        category,
                    )
                    self._write_shapes(configs, "unpaired", category, split, table, counts)
                tick(batch.size)
            a, b = pair_runs.get(code, (0, 0))
            for start in range(a, b, p.text_batch):
                part = pairs.take(np.arange(start, min(start + p.text_batch, b)))
                table, lines = self._pair_table(part, cache, category)
                self._write_shapes(configs, "pairwise", category, split, table, counts)
                if openai is not None:
                    openai.write(category, split, lines)
                    key = f"{category}/{split}"
                    counts["openai"][key] = counts["openai"].get(key, 0) + len(lines)
                tick(len(part))
            for config in configs.values():
                config.close_group(category, split)

    def _ratings_groups(self) -> list[tuple[int, np.ndarray]]:
        """(group code, rating rows) of each group (split × category) with ratings to write,
        in code order."""
        rows_all = self.rating_rows
        groups = self._group_of(self.item[rows_all])
        order = np.argsort(groups, kind="stable")
        rows_all, groups = rows_all[order], groups[order]
        return [(code, rows_all[a:b]) for code, a, b in _group_runs(groups)]

    def ratings_batches(self, source: TextSource | None) -> Iterator[tuple[str, str, pa.Table]]:
        """(category, split, table) of the ``ratings`` rows, group by group, in batches of
        ``ratings_batch`` rows."""
        scrubber = self._comment_scrubber(source)
        for code, rows in self._prepared_value("ratings_groups"):
            for table in self._ratings_tables(code, rows, source, scrubber):
                yield (*self._group_name(code), table)

    def _comment_scrubber(self, source: TextSource | None) -> Scrubber | None:
        """One scrubber per export (it reads every handle from the database), if comments
        are exported at all."""
        return source.comment_scrubber() if self.parameters.include_comments else None

    def _ratings_tables(
        self, code: int, rows: np.ndarray, source: TextSource | None, scrubber: Scrubber | None
    ) -> Iterator[pa.Table]:
        p = self.parameters
        rater_names = self.rater_names()
        category, _split = self._group_name(code)
        for start in range(0, rows.size, p.ratings_batch):
            batch = rows[start : start + p.ratings_batch]
            yield self._ratings_table(batch, rater_names, category, source, scrubber)

    def _write_ratings(self, groups, config, counts, source, scrubber, tick, errors=None) -> None:
        """Write ratings groups taken from ``groups`` until it is empty. On the ratings thread,
        ``errors`` takes what went wrong, for the main thread to raise."""
        try:
            while True:
                try:
                    code, rows = groups.popleft()  # atomic: two threads take from one deque
                except IndexError:
                    return
                category, split = self._group_name(code)
                key = f"{category}/{split}"
                for table in self._ratings_tables(code, rows, source, scrubber):
                    config.write(category, split, table)
                    counts[key] = counts.get(key, 0) + table.num_rows
                    tick(table.num_rows)
                config.close_group(category, split)
        except BaseException as error:
            if errors is None:
                raise
            errors.append(error)
            groups.clear()  # the other thread stops too

    def _write_shapes(self, configs, kind, category, split, table, counts) -> None:
        """The standard table, and (if asked) the same rows with messages for text."""
        shapes = {kind: table}
        if self.parameters.conversational:
            conversational = table
            for column in ("prompt", "completion", "chosen", "rejected"):
                index = table.schema.get_field_index(column)
                if index >= 0:
                    role = "user" if column == "prompt" else "assistant"
                    conversational = conversational.set_column(
                        index, column, messages(role, table.column(index))
                    )
            shapes[f"{kind}_conversational"] = conversational
        key = f"{category}/{split}"
        for config, rows in shapes.items():
            configs[config].write(category, split, rows)
            counts[config][key] = counts[config].get(key, 0) + rows.num_rows

    def _common(self, nodes: np.ndarray, category: str) -> list[pa.Array]:
        return [
            pa.array(self.catalog.version_id[nodes]),
            pa.array(self.catalog.subagent_id[nodes]),
            pa.array(self.root_id[nodes]),
            _repeated(category, nodes.size),
        ]

    def _scalar_table(self, nodes, prompts, completions, numbers, category) -> pa.Table:
        e = self.estimate
        parent = self.forest.parent[nodes]
        parent_id = np.where(parent >= 0, self.catalog.version_id[np.maximum(parent, 0)], 0)
        stars_mean = np.divide(
            e.stars_sum[nodes],
            e.stars_count[nodes],
            out=np.full(nodes.size, np.nan),
            where=e.stars_count[nodes] > 0,
        )
        columns = [
            prompts,
            completions,
            pa.array(e.mean[nodes]),
            pa.array(e.sd[nodes]),
            pa.array(e.lower[nodes]),
            *self._common(nodes, category),
            pa.array(parent_id, mask=parent < 0),
            pa.array(numbers),
            pa.array(e.ratings[nodes].astype(np.int64)),
            pa.array(e.raters[nodes].astype(np.int64)),
            _nullable(e.own_mean[nodes]),
            pa.array(e.own_precision[nodes]),
            _nullable(e.raw_mean[nodes]),
            pa.array(e.stars_count[nodes].astype(np.int64)),
            _nullable(stars_mean),
            pa.array(e.thumbs_up[nodes].astype(np.int64)),
            pa.array(e.thumbs_down[nodes].astype(np.int64)),
            pa.array(e.exposed[nodes].astype(np.int64)),
            _nullable(e.propensity_mean[nodes]),
            _nullable(e.propensity_min[nodes]),
            _nullable(e.ips_mean[nodes]),
        ]
        return pa.Table.from_arrays(columns, schema=SCHEMAS["scalar"])

    def _unpaired_table(self, nodes, prompts, completions, label_index, category) -> pa.Table:
        u, e = self.unpaired, self.estimate
        columns = [
            prompts,
            completions,
            pa.array(u.label[label_index]),
            pa.array(u.p_above[label_index]),
            pa.array(u.reference[label_index]),
            pa.array(e.mean[nodes]),
            pa.array(e.sd[nodes]),
            *self._common(nodes, category),
        ]
        return pa.Table.from_arrays(columns, schema=SCHEMAS["unpaired"])

    def _pair_table(self, part: rewards.Pairs, cache: _TextCache, category: str):
        vid = self.catalog.version_id
        nodes = np.unique(np.concatenate([part.chosen, part.rejected]))
        loaded = cache.get(nodes)
        have = np.fromiter(loaded, np.int64, len(loaded))
        present = np.isin(vid[part.chosen], have) & np.isin(vid[part.rejected], have)
        part = part.take(np.flatnonzero(present))
        nodes = nodes[np.isin(vid[nodes], have)]
        completions = pa.array([loaded[int(v)].completion for v in vid[nodes]], pa.string())
        chosen = completions.take(pa.array(np.searchsorted(nodes, part.chosen)))
        rejected = completions.take(pa.array(np.searchsorted(nodes, part.rejected)))
        parent = self.forest.parent
        # One prompt per distinct context, then taken per pair: a parent and child pair asks
        # what the child's own prompt asked; siblings share their parent; co-rated versions
        # share their category.
        child = np.where(parent[part.chosen] == part.rejected, part.chosen, part.rejected)
        context = np.where(
            part.relation == rewards.PARENT_CHILD,
            child,
            np.where(part.relation == rewards.SIBLING, parent[part.chosen], -1),
        )
        key = context * 4 + part.relation  # co-rated: (-1, category of the group)
        unique_keys, first, index = np.unique(key, return_index=True, return_inverse=True)
        texts = []
        for i in first.tolist():
            relation = int(part.relation[i])
            chosen_text = loaded[int(vid[part.chosen[i]])]
            if relation == rewards.PARENT_CHILD:
                texts.append(cache.prompt(int(vid[child[i]])))
            else:
                rejected_text = loaded[int(vid[part.rejected[i]])]
                texts.append(cache.pair_prompt(relation, chosen_text, rejected_text))
        prompt_column = pa.array(texts, pa.string()).take(pa.array(index.astype(np.int64)))
        del unique_keys
        lines = []
        if self.parameters.openai_jsonl:
            lines = [
                rewards.openai_preference_line(prompt.as_py(), c.as_py(), r.as_py())
                for prompt, c, r in zip(prompt_column, chosen, rejected, strict=True)
            ]
        e = self.estimate
        columns = [
            prompt_column,
            chosen,
            rejected,
            pa.array(part.margin),
            pa.array(part.margin_sd),
            pa.array(part.p_better),
            pa.DictionaryArray.from_arrays(
                pa.array(part.relation.astype(np.int8)), pa.array(list(RELATIONS))
            ).cast(pa.string()),
            pa.array(vid[part.chosen]),
            pa.array(vid[part.rejected]),
            pa.array(self.root_id[part.chosen]),
            pa.array(self.root_id[part.rejected]),
            _repeated(category, len(part)),
            pa.array(part.co_raters.astype(np.int64)),
            pa.array(e.mean[part.chosen]),
            pa.array(e.mean[part.rejected]),
        ]
        return pa.Table.from_arrays(columns, schema=SCHEMAS["pairwise"]), lines

    def _ratings_table(
        self,
        rows: np.ndarray,
        rater_names: np.ndarray,
        category: str,
        texts: TextSource,
        scrubber: Scrubber | None,
    ) -> pa.Table:
        f, e = self.feedback, self.estimate
        item = self.item[rows]
        user = self.user_idx[rows]
        z = e.rating_z[rows]
        leniency = e.user_offset[user]
        thumb = f.is_thumb[rows]
        comments = pa.nulls(rows.size, pa.string())
        tags = pa.nulls(rows.size, pa.list_(pa.string()))
        if scrubber is not None:
            found = texts.comments(f.feedback_id[rows].tolist())
            texts_out, tags_out = [], []
            for fid in f.feedback_id[rows].tolist():
                comment = found.get(fid)
                if comment is None:
                    texts_out.append(None)
                    tags_out.append(None)
                    continue
                own = comment.own_values
                texts_out.append(scrubber.scrub(comment.text, own) if comment.text else None)
                tags_out.append([scrubber.scrub(t, own) for t in comment.tags])
            comments = pa.array(texts_out, pa.string())
            tags = pa.array(tags_out, pa.list_(pa.string()))
        return pa.Table.from_arrays(
            [
                fixed_width_strings(rater_names[user]),
                pa.array(self.catalog.version_id[item]),
                pa.array(self.catalog.subagent_id[item]),
                pa.array(self.root_id[item]),
                pa.DictionaryArray.from_arrays(
                    pa.array(np.zeros(rows.size, np.int8)), pa.array([category])
                ),
                pa.DictionaryArray.from_arrays(
                    pa.array(thumb.astype(np.int8)), pa.array(["stars", "thumbs"])
                ),
                pa.array(f.rating[rows].astype(np.int8)),
                pa.array(z.astype(np.float32)),
                pa.array(leniency.astype(np.float32)),
                pa.array((z - e.global_mean - leniency).astype(np.float32)),
                _nullable(f.propensity[rows]),
                pa.array(f.day[rows].astype(np.int32)).cast(pa.date32()),
                comments,
                tags,
            ],
            schema=RATINGS_WRITE_SCHEMA,
        )

    # ------------------------------------------------------------------ summaries
    def model_summary(self) -> dict:
        e = self.estimate
        return {
            "versions": int(self.forest.n),
            "ratings": int(self.item.size),
            "raters": int(self.user_ids.size),
            "exported_versions": int(self.eligible.sum()),
            "below_k_versions": int(((e.ratings > 0) & ~self.eligible).sum()),
            "pairs": {
                name: int((self.pairs.relation == code).sum())
                for code, name in enumerate(RELATIONS)
            },
            "unpaired": {
                "desirable": int(self.unpaired.label.sum()),
                "undesirable": int((~self.unpaired.label).sum()),
            },
            "prior": asdict(e.prior),
            "global_mean": e.global_mean,
            "noise_var": e.noise_var,
        }


# --------------------------------------------------------------------------- the card
def card_configs(parameters: ExportParameters) -> list[str]:
    names = []
    for kind in KINDS:
        names.append(kind)
        if kind in TEXT_KINDS and parameters.conversational:
            names.append(f"{kind}_conversational")
    return names


OPENAI_NOTE = (
    "* `openai/<category>/<split>.jsonl`: the pairs as OpenAI preference fine-tuning lines "
    "(`input.messages`, `preferred_output`, `non_preferred_output`)."
)
COMMENTS_INCLUDED = (
    "included, scrubbed of emails, phone numbers, URLs, IP addresses, handles and the "
    "writer's own profile values; names of other people written in plain words cannot be "
    "caught"
)


def dataset_card(result: ExportResult, parameters: ExportParameters, run_info: dict) -> str:
    configs = card_configs(parameters)
    front = card_front_matter(
        [s for s in result.shards if s.config != "openai"], configs, "pairwise"
    )
    counts = result.counts
    rows = "\n".join(f"| {name} | {counts.get(name, {}).get('total', 0):,} |" for name in configs)
    model = result.model
    prior = model["prior"]
    since = run_info.get("since_run")
    scope = (
        f"Incremental: only rows whose feedback changed after run {since}'s watermark; a row "
        "supersedes the row with the same version (or pair) in earlier runs."
        if since
        else "Full snapshot of every exportable version."
    )
    return f"""{front}
# Sprig reward dataset, run {run_info.get("run")}

Correlated feedback on Sprig's sub-agents (AI-written lifestyle mini-apps), turned into reward
data for retraining the coding agent, per scenario (category). {scope}
Watermark: feedback last written at or before {run_info.get("watermark")}.
Code version: {run_info.get("code_version")}.

| config | rows |
| --- | --- |
{rows}

Each config has `train` and `test` splits, split by **lineage root**: every version derived
from one original sub-agent is in the same split. Shards sit under `<config>/<category>/`, so
`load_dataset("parquet", data_files="pairwise/diet/train-*.parquet")` reads one scenario;
`load_dataset(this_directory, name="pairwise")` reads every scenario.

## Kinds

* `scalar` (prompt, completion): one row per version. `reward` is the posterior mean of the
  version's quality after taking each rater's leniency out (Koren baseline μ + b_u + b_v) and
  pooling along the fork tree (exact Gaussian posterior); `reward_sd` its posterior sd;
  `reward_lower` = reward − 1.64 sd. All in standard units of the rating scale (stars and
  thumbs each standardized). `own_mean`/`own_precision`: the version's own rater-corrected
  mean and what it is worth; `raw_mean`: the plain mean on the common scale. `ips_mean`: mean
  weighted by 1/propensity of the exposures the ratings cite.
* `pairwise` (TRL preference: prompt, chosen, rejected, margin): sibling forks, a version
  against its parent, and versions rated by the same people. Kept only when
  P(chosen better) ≥ {parameters.confidence} under the posterior. `margin` = E[θ_chosen −
  θ_rejected].
* `unpaired` (TRL KTO: prompt, completion, label): `label` true when P(θ > reference) ≥
  {parameters.confidence}, false when ≤ {1 - parameters.confidence:.2f}; the reference is the
  median reward of the category.
* `ratings`: one row per rating; `rater` is a pseudonym (below), `rater_leniency` the fitted b_u,
  `debiased` the rating minus μ and b_u, `propensity` the exposure's probability if cited.
* `*_conversational`: the same rows with prompt/completion/chosen/rejected as
  `[{{"role", "content"}}]` messages.
{OPENAI_NOTE if parameters.openai_jsonl else ""}

## Privacy

Only people who opted in to sharing feedback for training are in this dataset. User ids are
replaced by HMAC-SHA256 under a key drawn for this export and never stored: pseudonyms are
stable within this export and cannot be linked to another export. A version is included only
when at least {parameters.k_anonymity} distinct people rated it. Free-text comments and tags
are {COMMENTS_INCLUDED if parameters.include_comments else "not included"}.

## Model

μ0 = {prior["prior_mean"]:.3f}, σ0² = {prior["prior_var"]:.3f}, δ̄ = {prior["drift_mean"]:.3f},
τ² = {prior["drift_var"]:.3f}; rating noise σ² = {model["noise_var"]:.3f};
{model["ratings"]:,} ratings by {model["raters"]:,} people on {model["versions"]:,} versions,
{model["exported_versions"]:,} exported.
"""
