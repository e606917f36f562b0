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
* ``pairwise_compact``, ``unpaired_compact``: the same rows with compact completions
  (``feedback.export.compact``: what differs, for trainers with a short context).
* ``ratings``: the correlated feedback itself, one row per consenting rating of an exported
  version, the rater as a pseudonym: HMAC-SHA256 of the user id under a key drawn for this run
  and never stored, so pseudonyms link a person's ratings within one export and not across two.
"""

from feedback.export.card import card_configs, dataset_card, write_card
from feedback.export.inputs import (
    CatalogArrays,
    Comment,
    ExportParameters,
    ExportResult,
    FeedbackColumns,
    Progress,
    TextSource,
)
from feedback.export.model import RewardExport, pseudonyms
from feedback.export.schema import KINDS, RATINGS_SCHEMA, TEXT_KINDS

__all__ = [
    "KINDS",
    "RATINGS_SCHEMA",
    "TEXT_KINDS",
    "CatalogArrays",
    "Comment",
    "ExportParameters",
    "ExportResult",
    "FeedbackColumns",
    "Progress",
    "RewardExport",
    "TextSource",
    "card_configs",
    "dataset_card",
    "pseudonyms",
    "write_card",
]
