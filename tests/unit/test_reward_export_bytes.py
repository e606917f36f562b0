"""A reward export is pinned byte for byte: the same inputs and key always write the same files.

One export of a small simulated world under a fixed pseudonym key, with every option that
changes what is written turned on (conversational configs, OpenAI lines, scrubbed comments,
small shards and batches, an incremental run), is hashed over every file's path and bytes, the
dataset card, the counts and the model summary. A change to the export code that alters any
written byte fails here; a deliberate change to the dataset updates the pinned digest in the
same commit. The digest depends on the Parquet writer too: pyarrow is pinned in pyproject.toml,
and upgrading it may re-pin this after checking the rows read back the same.

Floating-point numbers are hashed to 10 significant digits: the matrix products in the model
run on whichever OpenBLAS kernel the CPU gets (AVX2 or AVX-512), and those differ in the last
bits, so exact bytes would pin the machine rather than the code. Each Parquet file is hashed as
its schema and rows read back, other files as their text, every decimal number in either
rounded; the files' own SHA-256 and byte counts (in the run's manifest and the shard list)
stand in for bytes already hashed that way and are left out. No change to the code leaves all
those digits alike.
"""

from __future__ import annotations

import hashlib
import json
import math
import re

import numpy as np
import pyarrow.parquet as pq
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
FULL_SHA256 = "dd65c52978ca4251011d27284766104ed394d9de5cc654d91c16442568ed9897"
INCREMENTAL_SHA256 = "483a60d2e49c1b98597d8da1f8b20321d36627d8a5ccfecc515c389a74f7a1d4"


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


DECIMAL = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")
SHA256_HEX = re.compile(r"\b[0-9a-f]{64}\b")


def rounded(value):
    """``value`` with every float (in lists and dicts too) to 10 significant digits."""
    if isinstance(value, float):
        return value if not math.isfinite(value) else float(f"{value:.10g}")
    if isinstance(value, list | tuple):
        return [rounded(item) for item in value]
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    return value


def rounded_text(text: str) -> str:
    text = SHA256_HEX.sub("<sha256>", text)
    return DECIMAL.sub(lambda number: f"{float(number.group()):.10g}", text)


def file_digest(path) -> bytes:
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        content = json.dumps(
            [str(table.schema), rounded(table.to_pylist())], sort_keys=True, default=str
        )
    else:
        content = rounded_text(path.read_text())
    return hashlib.sha256(content.encode()).digest()


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
        digest.update(file_digest(path))
    card = dataset_card(result, parameters, info | {"code_version": "x"})
    digest.update(rounded_text(card).encode())
    summary = {
        "shards": [
            {k: v for k, v in vars(s).items() if k not in ("sha256", "bytes")}
            for s in result.shards
        ],
        "counts": result.counts,
        "model": result.model,
    }
    digest.update(json.dumps(rounded(summary), sort_keys=True, default=str).encode())
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
