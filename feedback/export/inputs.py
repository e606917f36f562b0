"""What an export takes and returns: its parameters, the catalog and feedback as arrays, the
source of text (prompts, bundles, comments) and the result."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol

import numpy as np

from feedback import rewards
from feedback.dataset_files import ShardInfo
from feedback.rewards import VersionText
from feedback.scrub import Scrubber


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
    # Per standard-shape text config, its rows' lengths (``feedback.export.lengths``).
    lengths: dict = field(default_factory=dict)
    languages: list[str] = field(default_factory=list)  # of the listings, as language_of names
