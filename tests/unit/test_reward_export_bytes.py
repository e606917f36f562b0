"""A reward export is pinned byte for byte: the same inputs and key always write the same files.

One export of a small simulated world under a fixed pseudonym key, with every option that
changes what is written turned on (conversational configs, OpenAI lines, scrubbed comments,
small shards and batches, an incremental run), is hashed over every file's path and bytes, the
dataset card, the counts and the model summary. A change to the export code that alters any
written byte fails here; a deliberate change to the dataset updates the pinned digest in the
same commit. The digest depends on the Parquet writer too: pyarrow is pinned in pyproject.toml,
and upgrading it may re-pin this after checking the rows read back the same.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from bench.export import SyntheticTexts, inputs_from_world, simulated_world
from feedback.export import (
    Comment,
    ExportParameters,
    FeedbackColumns,
    RewardExport,
    dataset_card,
)

KEY = b"pinned export key, for this test only"
FULL_SHA256 = "01fa19576ef997f3ae753119da23c3e515faab5a58785450062fe89041fee34a"
INCREMENTAL_SHA256 = "8fc1f1f9cfd77770000563db4ab5afa71bdf031941b49a2a260fb1191d91f864"


class CommentedTexts(SyntheticTexts):
    """Synthetic texts plus a comment on every third rating, one quoting an email address."""

    def comments(self, feedback_ids):
        return {
            fid: Comment(
                text=f"rating {fid}: write me at person{fid}@example.com" if fid % 2 else None,
                tags=["tidy", f"tag{fid % 5}"],
                own_values=(f"person{fid}",),
            )
            for fid in feedback_ids
            if fid % 3 == 0
        }


@pytest.fixture(scope="module")
def world_inputs():
    return inputs_from_world(simulated_world(2, sessions=8_000, forks=80))


def export_digest(directory, catalog, feedback, since_run=None) -> str:
    parameters = ExportParameters(
        include_comments=True,
        openai_jsonl=True,
        max_rows_per_shard=400,
        ratings_batch=250,
        text_batch=64,
    )
    export = RewardExport(catalog, feedback, parameters, pseudonym_key=KEY)
    result = export.write(directory, CommentedTexts(catalog))
    info = {"run": 3, "since_run": since_run, "watermark": "2026-01-01T00:00:00+00:00"}
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(directory)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(dataset_card(result, parameters, info | {"code_version": "x"}).encode())
    summary = {
        "shards": [vars(s) for s in result.shards],
        "counts": result.counts,
        "model": result.model,
    }
    digest.update(json.dumps(summary, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def test_a_full_export_writes_the_pinned_bytes(tmp_path, world_inputs):
    catalog, feedback, _quality = world_inputs
    assert export_digest(tmp_path, catalog, feedback) == FULL_SHA256


def test_an_incremental_export_writes_the_pinned_bytes(tmp_path, world_inputs):
    catalog, feedback, _quality = world_inputs
    is_new = np.zeros(len(feedback), bool)
    is_new[np.isin(feedback.version_id, catalog.version_id[::7])] = True
    later = FeedbackColumns(**{**vars(feedback), "is_new": is_new})
    assert export_digest(tmp_path, catalog, later, since_run=2) == INCREMENTAL_SHA256
