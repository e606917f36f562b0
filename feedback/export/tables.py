"""The rows of every kind as Arrow tables, built column-wise from the export's arrays and one
batch of loaded text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from feedback import rewards
from feedback.export.inputs import TextSource
from feedback.export.schema import MESSAGES, RATINGS_WRITE_SCHEMA, SCHEMAS
from feedback.export.texts import TextCache
from feedback.rewards import RELATIONS
from feedback.scrub import Scrubber

if TYPE_CHECKING:
    from feedback.export.model import RewardExport

TEXT_COLUMNS = ("prompt", "completion", "chosen", "rejected")


# --------------------------------------------------------------------------- columns
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


def nullable(values: np.ndarray) -> pa.Array:
    values = np.asarray(values, dtype=np.float64)
    return pa.array(values, mask=~np.isfinite(values))


def messages(role: str, text: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each string as a one-message conversation [{"role": role, "content": text}], built
    column-wise (no Python dict per row)."""
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    n = len(text)
    turn = pa.StructArray.from_arrays([repeated(role, n), text], names=["role", "content"])
    offsets = pa.array(np.arange(n + 1, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, turn, type=MESSAGES, mask=text.is_null())


def repeated(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(n, np.int8)), pa.array([value], pa.string())
    ).cast(pa.string())


def conversational(table: pa.Table) -> pa.Table:
    """The same rows with each text column as messages: the prompt from the user, the rest
    from the assistant."""
    for column in TEXT_COLUMNS:
        index = table.schema.get_field_index(column)
        if index >= 0:
            role = "user" if column == "prompt" else "assistant"
            table = table.set_column(index, column, messages(role, table.column(index)))
    return table


# --------------------------------------------------------------------------- tables
class Tables:
    """Builds one kind's rows for a batch of versions, pairs or ratings of one group."""

    def __init__(self, export: RewardExport) -> None:
        self.export = export

    def _common(self, nodes: np.ndarray, category: str) -> list[pa.Array]:
        x = self.export
        return [
            pa.array(x.catalog.version_id[nodes]),
            pa.array(x.catalog.subagent_id[nodes]),
            pa.array(x.root_id[nodes]),
            repeated(category, nodes.size),
        ]

    def scalar(self, nodes, prompts, completions, numbers, category) -> pa.Table:
        x = self.export
        e = x.estimate
        parent = x.forest.parent[nodes]
        parent_id = np.where(parent >= 0, x.catalog.version_id[np.maximum(parent, 0)], 0)
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
            nullable(e.own_mean[nodes]),
            pa.array(e.own_precision[nodes]),
            nullable(e.raw_mean[nodes]),
            pa.array(e.stars_count[nodes].astype(np.int64)),
            nullable(stars_mean),
            pa.array(e.thumbs_up[nodes].astype(np.int64)),
            pa.array(e.thumbs_down[nodes].astype(np.int64)),
            pa.array(e.exposed[nodes].astype(np.int64)),
            nullable(e.propensity_mean[nodes]),
            nullable(e.propensity_min[nodes]),
            nullable(e.ips_mean[nodes]),
        ]
        return pa.Table.from_arrays(columns, schema=SCHEMAS["scalar"])

    def unpaired(self, nodes, prompts, completions, label_index, category) -> pa.Table:
        u, e = self.export.unpaired, self.export.estimate
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

    def pairwise(
        self, part: rewards.Pairs, cache: TextCache, category: str
    ) -> tuple[pa.Table, list[dict]]:
        """The pairs' rows, and their OpenAI preference lines if those are exported. A pair
        whose text cannot be loaded is left out."""
        x = self.export
        vid = x.catalog.version_id
        nodes = np.unique(np.concatenate([part.chosen, part.rejected]))
        loaded = cache.get(nodes)
        have = np.fromiter(loaded, np.int64, len(loaded))
        present = np.isin(vid[part.chosen], have) & np.isin(vid[part.rejected], have)
        part = part.take(np.flatnonzero(present))
        nodes = nodes[np.isin(vid[nodes], have)]
        completions = pa.array([loaded[int(v)].completion for v in vid[nodes]], pa.string())
        chosen = completions.take(pa.array(np.searchsorted(nodes, part.chosen)))
        rejected = completions.take(pa.array(np.searchsorted(nodes, part.rejected)))
        prompt_column = self._pair_prompts(part, cache)
        lines = []
        if x.parameters.openai_jsonl:
            lines = [
                rewards.openai_preference_line(prompt.as_py(), c.as_py(), r.as_py())
                for prompt, c, r in zip(prompt_column, chosen, rejected, strict=True)
            ]
        e = x.estimate
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
            pa.array(x.root_id[part.chosen]),
            pa.array(x.root_id[part.rejected]),
            repeated(category, len(part)),
            pa.array(part.co_raters.astype(np.int64)),
            pa.array(e.mean[part.chosen]),
            pa.array(e.mean[part.rejected]),
        ]
        return pa.Table.from_arrays(columns, schema=SCHEMAS["pairwise"]), lines

    def _pair_prompts(self, part: rewards.Pairs, cache: TextCache) -> pa.Array:
        """Each pair's prompt: the own prompt of the version ``rewards.prompt_versions`` names
        (the descendant, the nearest common ancestor or the chosen side), or the chosen side's
        if that version's text cannot be loaded; one per distinct version, taken per pair."""
        vid = self.export.catalog.version_id
        context = rewards.prompt_versions(self.export.forest, part.chosen, part.rejected)
        loaded = cache.get(np.unique(context))
        have = np.fromiter(loaded, np.int64, len(loaded))
        context = np.where(np.isin(vid[context], have), context, part.chosen)
        nodes, index = np.unique(context, return_inverse=True)
        cache.get(nodes)
        texts = [cache.prompt(int(v)) for v in vid[nodes]]
        return pa.array(texts, pa.string()).take(pa.array(index.astype(np.int64)))

    def ratings_batches(
        self, code: int, rows: np.ndarray, source: TextSource | None, scrubber: Scrubber | None
    ) -> Iterator[pa.Table]:
        """The ratings rows of one group, ``ratings_batch`` rows per table."""
        x = self.export
        rater_names = x.rater_names()
        category, _split = x.group_name(code)
        for start in range(0, rows.size, x.parameters.ratings_batch):
            batch = rows[start : start + x.parameters.ratings_batch]
            yield self.ratings(batch, rater_names, category, source, scrubber)

    def ratings(
        self,
        rows: np.ndarray,
        rater_names: np.ndarray,
        category: str,
        texts: TextSource | None,
        scrubber: Scrubber | None,
    ) -> pa.Table:
        x = self.export
        f, e = x.feedback, x.estimate
        item = x.item[rows]
        user = x.user_idx[rows]
        z = e.rating_z[rows]
        leniency = e.user_offset[user]
        thumb = f.is_thumb[rows]
        comments = pa.nulls(rows.size, pa.string())
        tags = pa.nulls(rows.size, pa.list_(pa.string()))
        if scrubber is not None:
            comments, tags = self._comments(f.feedback_id[rows].tolist(), texts, scrubber)
        return pa.Table.from_arrays(
            [
                fixed_width_strings(rater_names[user]),
                pa.array(x.catalog.version_id[item]),
                pa.array(x.catalog.subagent_id[item]),
                pa.array(x.root_id[item]),
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
                nullable(f.propensity[rows]),
                pa.array(f.day[rows].astype(np.int32)).cast(pa.date32()),
                comments,
                tags,
            ],
            schema=RATINGS_WRITE_SCHEMA,
        )

    @staticmethod
    def _comments(
        feedback_ids: list[int], texts: TextSource, scrubber: Scrubber
    ) -> tuple[pa.Array, pa.Array]:
        """The ratings' comments and tags, scrubbed (null where a rating has none)."""
        found = texts.comments(feedback_ids)
        texts_out, tags_out = [], []
        for fid in feedback_ids:
            comment = found.get(fid)
            if comment is None:
                texts_out.append(None)
                tags_out.append(None)
                continue
            own = comment.own_values
            texts_out.append(scrubber.scrub(comment.text, own) if comment.text else None)
            tags_out.append([scrubber.scrub(t, own) for t in comment.tags])
        return pa.array(texts_out, pa.string()), pa.array(tags_out, pa.list_(pa.string()))
