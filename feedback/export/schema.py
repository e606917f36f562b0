"""The Arrow schemas of every config the export writes.

A text kind's standard config stores prompt and completion (or chosen and rejected) as strings;
its ``*_conversational`` config stores them as lists of {role, content} messages (``MESSAGES``).
``ratings`` has no text shape: its rows are the ratings themselves.
"""

from __future__ import annotations

import pyarrow as pa

MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
KINDS = ("scalar", "pairwise", "unpaired", "ratings")
TEXT_KINDS = ("scalar", "pairwise", "unpaired")
# Kinds also written with compact completions (``feedback.export.compact``), as the configs
# ``<kind>_compact``: the ones trainers with a short context read.
COMPACT_KINDS = ("pairwise", "unpaired")

COMMON_FIELDS = [
    ("version_id", pa.int64()),
    ("subagent_id", pa.int64()),
    ("root_id", pa.int64()),
    ("category", pa.string()),
]


SCALAR_FIELDS = [
    ("reward", pa.float64()),
    ("reward_sd", pa.float64()),
    ("reward_lower", pa.float64()),
    *COMMON_FIELDS,
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
    *COMMON_FIELDS,
]
RATINGS_SCHEMA = pa.schema(
    [
        ("rater", pa.string()),
        *COMMON_FIELDS,
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


def text_configs(conversational: bool) -> list[tuple[str, str, bool]]:
    """(config, kind, conversational shape) of every text config, in the card's order: each
    kind, its compact completions if it has them, and each of those as messages if asked."""
    out = []
    for kind in TEXT_KINDS:
        for base in [kind, f"{kind}_compact"] if kind in COMPACT_KINDS else [kind]:
            out.append((base, kind, False))
            if conversational:
                out.append((f"{base}_conversational", kind, True))
    return out
