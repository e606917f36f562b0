"""How long a config's rows are, in characters and in estimated tokens, and the ``max_length``
that keeps nearly all of them.

Tokens are estimated without a tokenizer: ``ceil(UTF-8 bytes / BYTES_PER_TOKEN)``. Byte-level
BPE tokenizers (GPT-2's, Llama's) spend about 3 bytes per token on code and JSON; 2.5 errs on
the long side, so a ``max_length`` named from the estimate rarely cuts a row the estimate says
fits. Counting bytes rather than characters keeps the estimate honest for Chinese and Japanese
text, where a character is 3 bytes and often a token or more.

A row's sequence is what a trainer tokenizes at once: the prompt and the completion, or for a
pair the prompt and the longer of its two sides (TRL's reward trainer drops a pair when either
side is over ``max_length``; its DPO and KTO trainers cut it).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BYTES_PER_TOKEN = 2.5
KEEP_SHARE = 0.95  # the named max_length keeps at least this share of a config's rows
MAX_LENGTH_STEP = 128  # max_length is a multiple of this many tokens


def estimated_tokens(utf8_bytes: np.ndarray) -> np.ndarray:
    return np.ceil(np.asarray(utf8_bytes, dtype=np.float64) / BYTES_PER_TOKEN).astype(np.int64)


def row_lengths(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a standard-shape text table: the characters of its completion (the longer
    side of a pair) and the UTF-8 bytes of its sequence."""
    sides = [name for name in ("completion", "chosen", "rejected") if name in table.column_names]
    chars = np.zeros(table.num_rows, np.int64)
    side_bytes = np.zeros(table.num_rows, np.int64)
    for name in sides:
        column = table.column(name)
        chars = np.maximum(chars, pc.utf8_length(column).to_numpy(zero_copy_only=False))
        side_bytes = np.maximum(side_bytes, pc.binary_length(column).to_numpy(zero_copy_only=False))
    prompt_bytes = pc.binary_length(table.column("prompt")).to_numpy(zero_copy_only=False)
    return chars, prompt_bytes + side_bytes


def _nearest_rank(values: np.ndarray, share: float) -> int:
    """The smallest value that at least ``share`` of ``values`` are at or below."""
    ordered = np.sort(values)
    return int(ordered[max(math.ceil(share * ordered.size) - 1, 0)])


def length_summary(completion_chars: np.ndarray, sequence_bytes: np.ndarray) -> dict:
    """p50/p95/max of the completions' characters and of the sequences' estimated tokens, the
    ``max_length`` (a multiple of ``MAX_LENGTH_STEP``) that keeps at least ``KEEP_SHARE`` of
    the rows, and how many it keeps. A config without rows has no figures (None)."""
    rows = int(completion_chars.size)
    if rows == 0:
        return {"rows": 0, "completion_chars": None, "tokens": None, "max_length": None, "kept": 0}
    tokens = estimated_tokens(sequence_bytes)

    def spread(values: np.ndarray) -> dict:
        return {
            "p50": _nearest_rank(values, 0.5),
            "p95": _nearest_rank(values, 0.95),
            "max": int(values.max()),
        }

    need = _nearest_rank(tokens, KEEP_SHARE)
    max_length = max(math.ceil(need / MAX_LENGTH_STEP), 1) * MAX_LENGTH_STEP
    return {
        "rows": rows,
        "completion_chars": spread(completion_chars),
        "tokens": spread(tokens),
        "max_length": max_length,
        "kept": int((tokens <= max_length).sum()),
    }
