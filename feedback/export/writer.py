"""Streaming one export's rows into a run directory: the ratings on a second thread, the text
rows on the caller's, then the manifest's hashes.

The ratings (numeric; Arrow's C++ encoder, which releases the GIL, does most of the work) are
written on a second thread while the caller's thread builds the text rows. They need only the
model, so they start before the pair search. The text rows take less time than the ratings, so
the caller's thread then takes ratings groups too, until none is left. (A writer thread per
kind, so that encoding overlapped row building, was tried: on two cores both are already busy,
and the extra threads only added contention.)
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from evolution.language import LATIN, language_of
from feedback import rewards
from feedback.dataset_files import JsonLines, ShardedConfig, ShardInfo, finish_files
from feedback.export.compact import pair_views, version_view
from feedback.export.indexing import group_runs
from feedback.export.inputs import ExportResult, Progress, TextSource
from feedback.export.lengths import length_summary, row_lengths
from feedback.export.schema import RATINGS_WRITE_SCHEMA, text_configs, text_schema
from feedback.export.tables import Tables, conversational
from feedback.export.texts import LockedTexts, TextCache

if TYPE_CHECKING:
    from feedback.export.model import RewardExport


class Ticker:
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


class ExportWriter:
    """Writes every config's shards of one export into ``directory``. The ratings and the text
    rows share the text source under a lock."""

    def __init__(self, export: RewardExport, directory: Path, texts: TextSource) -> None:
        self.export, self.directory = export, directory
        p = export.parameters
        self.configs: dict[str, ShardedConfig] = {
            name: ShardedConfig(
                directory,
                name,
                text_schema(kind, shape),
                max_rows=p.max_rows_per_shard,
                max_bytes=p.max_bytes_per_shard,
            )
            for name, kind, shape in text_configs(p.conversational)
        }
        # One ratings writer per thread that writes ratings: a group (category, split) is
        # written by one thread only, so their files never collide.
        self.ratings_configs = [
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
        self.openai = JsonLines(directory, "openai") if p.openai_jsonl else None
        self.counts: dict[str, dict[str, int]] = {
            name: {} for name in [*self.configs, "ratings", "openai"]
        }
        self.source = LockedTexts(texts)
        self.tables = Tables(export)
        # Per standard-shape text config, (completion characters, sequence bytes) of each
        # batch's rows; the card reports their spread (``feedback.export.lengths``).
        self.lengths: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {
            name: [] for name, _kind, shape in text_configs(False) if not shape
        }
        self.languages: set[str] = set()

    def write(self) -> ExportResult:
        export = self.export
        started = time.perf_counter()
        tick = Ticker(export.progress, export.rating_rows.size)
        ratings_groups = deque(
            sorted(
                export.prepared_value("ratings_groups"),
                key=lambda group: group[1].size,
                reverse=True,
            )
        )
        scrubber = export.comment_scrubber(self.source)
        ratings_error: list[BaseException] = []
        ratings_thread = threading.Thread(
            target=self._write_ratings,
            args=(ratings_groups, self.ratings_configs[0], scrubber, tick),
            kwargs={"errors": ratings_error},
            name="export-ratings",
        )
        ratings_thread.start()
        try:
            self._write_text_kinds(tick)
            self._write_ratings(ratings_groups, self.ratings_configs[1], scrubber, tick)
        finally:
            ratings_thread.join()
        if ratings_error:
            raise ratings_error[0]
        shards = self._close()
        export.seconds["write"] = time.perf_counter() - started
        started = time.perf_counter()
        finish_files(self.directory, shards)
        export.seconds["hash"] = time.perf_counter() - started
        summary = {
            name: {"total": sum(by_group.values()), "by_group": dict(sorted(by_group.items()))}
            for name, by_group in self.counts.items()
            if name != "openai" or self.openai is not None
        }
        lengths = {
            name: length_summary(
                np.concatenate([chars for chars, _ in parts] or [np.zeros(0, np.int64)]),
                np.concatenate([size for _, size in parts] or [np.zeros(0, np.int64)]),
            )
            for name, parts in self.lengths.items()
        }
        return ExportResult(
            shards=shards,
            counts=summary,
            model=export.model_summary(),
            seconds=export.seconds,
            lengths=lengths,
            languages=sorted(self.languages),
        )

    def _close(self) -> list[ShardInfo]:
        shards = [shard for config in self.configs.values() for shard in config.close()]
        ratings_shards = [
            s for config in self.ratings_configs for s in config.close(placeholder=False)
        ]
        # Sorted, so the manifest does not depend on which thread wrote which group; the
        # empty placeholder (a config with no rows) once, not once per writer.
        shards += (
            sorted(ratings_shards, key=lambda shard: shard.path) or self.ratings_configs[0].close()
        )
        if self.openai is not None:
            shards += self.openai.close()
        return shards

    # ------------------------------------------------------------------ text rows
    def _scalar_items(self) -> tuple[np.ndarray, np.ndarray]:
        """The versions with a scalar row, by group, in version id order within a group."""
        export = self.export
        items = np.flatnonzero(export.eligible & export.touched)
        items = items[np.argsort(export.catalog.version_id[items])]
        groups = export.group_of(items)
        order = np.argsort(groups, kind="stable")
        return items[order], groups[order]

    def _pairs(self) -> tuple[rewards.Pairs, np.ndarray]:
        """The pairs to write (one side touched by new feedback), by group."""
        export = self.export
        keep = np.flatnonzero(
            export.touched[export.pairs.chosen] | export.touched[export.pairs.rejected]
        )
        pairs = export.pairs.take(keep)
        groups = export.group_of(pairs.chosen)
        order = np.argsort(groups, kind="stable")
        return pairs.take(order), groups[order]

    def _write_text_kinds(self, tick: Ticker) -> None:
        export = self.export
        scalar_items, scalar_groups = self._scalar_items()
        pairs, pair_groups = self._pairs()  # the pair search runs here, if not done yet
        tick.add_to_total(scalar_items.size + len(pairs))
        label_of = np.full(export.forest.n, -1, dtype=np.int64)
        label_of[export.unpaired.item] = np.arange(export.unpaired.item.size)
        scalar_runs = {code: (a, b) for code, a, b in group_runs(scalar_groups)}
        pair_runs = {code: (a, b) for code, a, b in group_runs(pair_groups)}
        cache = TextCache(self.source, export.catalog.version_id)
        batch_size = export.parameters.text_batch
        for code in sorted(set(scalar_runs) | set(pair_runs)):
            category, split = export.group_name(code)
            a, b = scalar_runs.get(code, (0, 0))
            for start in range(a, b, batch_size):
                batch = scalar_items[start : min(start + batch_size, b)]
                self._write_scalar_batch(batch, label_of, cache, category, split)
                tick(batch.size)
            a, b = pair_runs.get(code, (0, 0))
            for start in range(a, b, batch_size):
                part = pairs.take(np.arange(start, min(start + batch_size, b)))
                self._write_pair_batch(part, cache, category, split)
                tick(len(part))
            for config in self.configs.values():
                config.close_group(category, split)

    def _write_scalar_batch(self, batch, label_of, cache: TextCache, category, split) -> None:
        """One batch of versions' scalar rows, and the unpaired rows of those with a label
        (with their compact completions, against their parents)."""
        vid = self.export.catalog.version_id
        loaded = cache.get(batch)
        batch = batch[np.isin(vid[batch], np.fromiter(loaded, np.int64, len(loaded)))]
        ids = vid[batch].tolist()
        # The listing's language (title and summary); Latin script of no telling language
        # names none.
        self.languages |= {language_of(f"{loaded[v].title} {loaded[v].summary}") for v in ids}
        self.languages.discard(LATIN)
        prompts = pa.array([cache.prompt(v) for v in ids], pa.string())
        completions = pa.array([loaded[v].completion for v in ids], pa.string())
        numbers = np.fromiter((loaded[v].number for v in ids), np.int32, len(ids))
        table = self.tables.scalar(batch, prompts, completions, numbers, category)
        self._write_shapes("scalar", category, split, table)
        labelled = np.flatnonzero(label_of[batch] >= 0)
        if labelled.size:
            take = pa.array(labelled)
            table = self.tables.unpaired(
                batch[labelled],
                prompts.take(take),
                completions.take(take),
                label_of[batch[labelled]],
                category,
            )
            self._write_shapes("unpaired", category, split, table)
            compact = self._compact_unpaired(table, batch[labelled], cache)
            self._write_shapes("unpaired_compact", category, split, compact)

    def _compact_unpaired(self, table: pa.Table, nodes: np.ndarray, cache: TextCache) -> pa.Table:
        """The unpaired rows of ``nodes`` with each completion against its parent's (a root's
        trimmed)."""
        export = self.export
        vid = export.catalog.version_id
        parents = export.forest.parent[nodes]
        parent_text = cache.get(parents[parents >= 0])
        parent_ids = np.where(parents >= 0, vid[np.maximum(parents, 0)], -1)
        compact = [
            version_view(
                cache.bundle(v, completion),
                cache.bundle(p, parent_text[p].completion) if p in parent_text else None,
            )
            for v, p, completion in zip(
                vid[nodes].tolist(),
                parent_ids.tolist(),
                table.column("completion").to_pylist(),
                strict=True,
            )
        ]
        index = table.schema.get_field_index("completion")
        return table.set_column(index, "completion", pa.array(compact, pa.string()))

    def _write_pair_batch(self, part: rewards.Pairs, cache: TextCache, category, split) -> None:
        table, lines = self.tables.pairwise(part, cache, category)
        self._write_shapes("pairwise", category, split, table)
        # Each version's bundle is parsed once (TextCache.bundle), not once per pair it is in.
        sides = [
            pair_views(cache.bundle(chosen_id, chosen), cache.bundle(rejected_id, rejected))
            for chosen_id, rejected_id, chosen, rejected in zip(
                table.column("chosen_version_id").to_pylist(),
                table.column("rejected_version_id").to_pylist(),
                table.column("chosen").to_pylist(),
                table.column("rejected").to_pylist(),
                strict=True,
            )
        ]
        compact = table.set_column(
            table.schema.get_field_index("chosen"),
            "chosen",
            pa.array([chosen for chosen, _ in sides], pa.string()),
        ).set_column(
            table.schema.get_field_index("rejected"),
            "rejected",
            pa.array([rejected for _, rejected in sides], pa.string()),
        )
        self._write_shapes("pairwise_compact", category, split, compact)
        if self.openai is not None:
            self.openai.write(category, split, lines)
            key = f"{category}/{split}"
            self.counts["openai"][key] = self.counts["openai"].get(key, 0) + len(lines)

    def _write_shapes(self, config: str, category: str, split: str, table: pa.Table) -> None:
        """The standard table, and (if asked) the same rows with messages for text."""
        self.lengths[config].append(row_lengths(table))
        shapes = {config: table}
        if self.export.parameters.conversational:
            shapes[f"{config}_conversational"] = conversational(table)
        key = f"{category}/{split}"
        for config, rows in shapes.items():
            self.configs[config].write(category, split, rows)
            self.counts[config][key] = self.counts[config].get(key, 0) + rows.num_rows

    # ------------------------------------------------------------------ ratings
    def _write_ratings(self, groups: deque, config, scrubber, tick, errors=None) -> None:
        """Write ratings groups taken from ``groups`` until it is empty. On the ratings thread,
        ``errors`` takes what went wrong, for the main thread to raise."""
        counts = self.counts["ratings"]
        try:
            while True:
                try:
                    code, rows = groups.popleft()  # atomic: two threads take from one deque
                except IndexError:
                    return
                category, split = self.export.group_name(code)
                key = f"{category}/{split}"
                for table in self.tables.ratings_batches(code, rows, self.source, scrubber):
                    config.write(category, split, table)
                    counts[key] = counts.get(key, 0) + table.num_rows
                    tick(table.num_rows)
                config.close_group(category, split)
        except BaseException as error:
            if errors is None:
                raise
            errors.append(error)
            groups.clear()  # the other thread stops too
