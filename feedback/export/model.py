"""The numbers of one export, computed once over all the arrays: the fitted rewards, which
versions and ratings are exported, the pairs and labels, the raters' pseudonyms and the groups
(split × category) the rows are written in."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa

from evolution.tree import Forest
from feedback import rewards
from feedback.export.indexing import dense_index, group_runs
from feedback.export.inputs import (
    CatalogArrays,
    ExportParameters,
    ExportResult,
    FeedbackColumns,
    Progress,
    TextSource,
)
from feedback.export.tables import Tables
from feedback.export.writer import ExportWriter
from feedback.rewards import RELATIONS, RatingArrays
from feedback.scrub import Scrubber

PSEUDONYM_HEX = 32  # 128 bits of the HMAC: collisions are out of reach at any user count


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
        except BaseException as error:  # re-raised by prepared_value, on the caller's thread
            self._prepared["error"] = error

    def prepared_value(self, name: str):
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
            co_rated=self.prepared_value("co_rated"),
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
        return self.prepared_value("raters")

    # ------------------------------------------------------------------ groups
    def group_of(self, nodes: np.ndarray) -> np.ndarray:
        """Split and category as one small code: test × n_categories + category."""
        n_categories = max(len(self.catalog.categories), 1)
        return (self.test[nodes].astype(np.int32) * n_categories + self.category[nodes]).astype(
            np.int16 if 2 * n_categories < 2**15 else np.int32
        )

    def group_name(self, code: int) -> tuple[str, str]:
        n_categories = max(len(self.catalog.categories), 1)
        split = "test" if code >= n_categories else "train"
        return self.catalog.categories[code % n_categories], split

    def _ratings_groups(self) -> list[tuple[int, np.ndarray]]:
        """(group code, rating rows) of each group (split × category) with ratings to write,
        in code order."""
        rows_all = self.rating_rows
        groups = self.group_of(self.item[rows_all])
        order = np.argsort(groups, kind="stable")
        rows_all, groups = rows_all[order], groups[order]
        return [(code, rows_all[a:b]) for code, a, b in group_runs(groups)]

    def ratings_batches(self, source: TextSource | None) -> Iterator[tuple[str, str, pa.Table]]:
        """(category, split, table) of the ``ratings`` rows, group by group, in batches of
        ``ratings_batch`` rows."""
        scrubber = self.comment_scrubber(source)
        tables = Tables(self)
        for code, rows in self.prepared_value("ratings_groups"):
            for table in tables.ratings_batches(code, rows, source, scrubber):
                yield (*self.group_name(code), table)

    def comment_scrubber(self, source: TextSource | None) -> Scrubber | None:
        """One scrubber per export (it reads every handle from the database), if comments
        are exported at all."""
        return source.comment_scrubber() if self.parameters.include_comments else None

    # ------------------------------------------------------------------ writing
    def write(self, directory: Path, texts: TextSource) -> ExportResult:
        """Write every config's shards into ``directory`` (``ExportWriter``)."""
        return ExportWriter(self, directory, texts).write()

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
