"""The dataset card (README.md) of a run directory and its license (LICENSE.md): the YAML front
matter that tells ``datasets`` each config's files and the Hub what the dataset is, then what
each config holds in this run (splits, rows, lengths), how to load it, what each kind means,
the privacy guarantees and the fitted model. Everything it states about the run is read from
the run's own shards and figures, so it is true of every run: a full one, an incremental one
with a few rows, and one with none."""

from __future__ import annotations

from pathlib import Path

from feedback.dataset_files import ShardInfo, card_front_matter, config_splits
from feedback.export.compact import BUDGET, CONTEXT_LINES
from feedback.export.inputs import ExportParameters, ExportResult
from feedback.export.lengths import BYTES_PER_TOKEN, KEEP_SHARE
from feedback.export.schema import text_configs

DEFAULT_CONFIG = "pairwise"
CARD_FILE = "README.md"
LICENSE_FILE = "LICENSE.md"
LICENSE = f"""# Sprig community reward data: terms of use

The completions in this dataset are sub-agents (mini-apps) that Sprig's coding agent wrote for
members of the Sprig community and that they published on Sprig; the prompts quote their
requests, and the ratings are those of members who opted in to sharing their feedback for
training. Sprig records no open license for a sub-agent: its publisher agreed to Sprig's terms
of publication, and each rater to the use of their feedback for training Sprig's coding agent.

So this dataset carries no open license (`license: other`, `license_name: sprig-community`):

* use it to train and evaluate the coding agent of the organization that runs Sprig;
* do not publish or redistribute it outside that organization;
* do not try to re-identify raters (the `rater` pseudonyms are keyed per export and cannot be
  linked across exports).

This file ({LICENSE_FILE}) sits next to the dataset card and is listed in `manifest.json`.
"""
TASK_CATEGORIES = ["text-generation", "reinforcement-learning"]
TAGS = ["trl", "reward-modeling", "preference", "dpo", "kto", "sprig"]
# The Hub's size buckets, by the number of rows of the largest config.
SIZE_BUCKETS = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
)


TABLE_HEADER = (
    "| config | splits (rows) | completion characters p50 / p95 / max "
    "| tokens (estimated) p50 / p95 / max | max_length | shape |\n"
    "| --- | --- | --- | --- | --- | --- |"
)


def card_configs(parameters: ExportParameters) -> list[str]:
    return [name for name, _kind, _shape in text_configs(parameters.conversational)] + ["ratings"]


def size_category(rows: int) -> str:
    for bound, name in SIZE_BUCKETS:
        if rows < bound:
            return name
    return "n>1B"


def card_metadata(result: ExportResult, configs: list[str], run_info: dict) -> dict:
    """The Hub's metadata: license, languages (the listings' and the prompts' English, and
    ``code`` for the bundles), task categories, size, tags and a name."""
    largest = max((result.counts.get(name, {}).get("total", 0) for name in configs), default=0)
    return {
        "pretty_name": f"Sprig reward dataset, {run_info.get('name') or run_info.get('run')}",
        "license": "other",
        "license_name": "sprig-community",
        "license_link": LICENSE_FILE,
        "language": [*sorted({"en", *result.languages}), "code"],
        "task_categories": TASK_CATEGORIES,
        "size_categories": [size_category(largest)],
        "tags": TAGS,
    }


def _example_shard(shards: list[ShardInfo]) -> ShardInfo:
    """A shard of this run to show reading one scenario: a pairwise one with rows if any, else
    any with rows, else the pairwise config's empty shard."""
    parquet = [s for s in shards if s.path.endswith(".parquet")]
    for wanted in (
        lambda s: s.config == DEFAULT_CONFIG and s.rows > 0,
        lambda s: s.rows > 0,
        lambda s: s.config == DEFAULT_CONFIG,
    ):
        found = sorted((s for s in parquet if wanted(s)), key=lambda s: s.path)
        if found:
            return found[0]
    raise ValueError("a run has at least one shard per config")


def _figures(spread: dict | None) -> str:
    return "—" if spread is None else f"{spread['p50']:,} / {spread['p95']:,} / {spread['max']:,}"


def _config_rows(result: ExportResult, configs: list[str]) -> str:
    lines = []
    for name in configs:
        splits = config_splits(result.shards, name)
        split_text = ", ".join(f"{split} {rows:,}" for split, rows in splits.items())
        base = name.removesuffix("_conversational")
        lengths = result.lengths.get(base)
        if lengths is None:  # ratings: no text to train on
            lines.append(f"| {name} | {split_text} | — | — | — | — |")
            continue
        max_length = lengths["max_length"]
        kept = (
            "—"
            if max_length is None
            else f"{max_length:,} (keeps {lengths['kept']:,} of {lengths['rows']:,})"
        )
        lines.append(
            f"| {name} | {split_text} | {_figures(lengths['completion_chars'])} | "
            f"{_figures(lengths['tokens'])} | {kept} | "
            f"{'messages' if name != base else 'text'} |"
        )
    return "\n".join(lines)


def _load_lines(result: ExportResult, configs: list[str]) -> str:
    lines = []
    for name in configs:
        if sum(config_splits(result.shards, name).values()):
            lines.append(f'load_dataset(run_dir, name="{name}")')
        else:
            lines.append(f'load_dataset(run_dir, name="{name}", streaming=True)  # no rows')
    return "\n".join(lines)


OPENAI_NOTE = (
    "* `openai/<category>/<split>.jsonl`: the pairs as OpenAI preference fine-tuning lines "
    "(`input.messages`, `preferred_output`, `non_preferred_output`)."
)
COMMENTS_INCLUDED = (
    "included, scrubbed of emails, card numbers, IBANs, phone numbers, long id numbers, URLs, "
    "IP addresses, handles and the writer's own profile values; names of other people written "
    "in plain words cannot be caught"
)


def dataset_card(result: ExportResult, parameters: ExportParameters, run_info: dict) -> str:
    """The card of one run. ``run_info``: ``run`` (its number), ``name`` (its folder's name),
    ``since_run``, ``watermark`` and ``code_version``."""
    configs = card_configs(parameters)
    shards = [s for s in result.shards if s.config != "openai"]
    front = card_front_matter(
        shards, configs, DEFAULT_CONFIG, card_metadata(result, configs, run_info)
    )
    example = _example_shard(shards)
    empty = [name for name in configs if not sum(config_splits(shards, name).values())]
    train_only = [
        name
        for name in configs
        if name not in empty and set(config_splits(shards, name)) == {"train"}
    ]
    model = result.model
    prior = model["prior"]
    since = run_info.get("since_run")
    scope = (
        f"Incremental: only rows whose feedback changed after run {since}'s watermark; a row "
        "supersedes the row with the same version (or pair) in earlier runs."
        if since
        else "Full snapshot of every exportable version."
    )
    split_notes = []
    if train_only:
        split_notes.append(
            "In this run " + ", ".join(f"`{n}`" for n in train_only) + " have a `train` split "
            "only (no lineage root of the test share has rows there)."
        )
    if empty:
        split_notes.append(
            "In this run " + ", ".join(f"`{n}`" for n in empty) + " have no rows: each is "
            "one empty `train` shard with the config's columns. `datasets` will not build a "
            'split of zero rows (`Instruction "train" corresponds to no data`), so these load '
            "with `streaming=True` (zero rows, with their features)."
        )
    return f"""{front}
# Sprig reward dataset, run {run_info.get("run")} (`{run_info.get("name")}`)

Correlated feedback on Sprig's sub-agents (AI-written lifestyle mini-apps), turned into reward
data for retraining the coding agent, per scenario (category). {scope}
Watermark: feedback last written at or before {run_info.get("watermark")}.
Code version: {run_info.get("code_version")}.

{TABLE_HEADER}
{_config_rows(result, configs)}

Splits are by **lineage root**: every version derived from one original sub-agent is in the
same split; a config lists only the splits that have rows in this run. {" ".join(split_notes)}

## Loading

Every config loads by name from this folder (`run_dir`):

```python
from datasets import load_dataset
{_load_lines(result, configs)}
```

Shards sit under `<config>/<category>/`, so one scenario reads as plain Parquet, for example
`load_dataset("parquet", data_files=f"{{run_dir}}/{example.path}")`.

## Lengths and `max_length`

Completions are whole bundles (the canonical JSON of the manifest and every file), so they are
long. Tokens are estimated without a tokenizer as UTF-8 bytes / {BYTES_PER_TOKEN} (byte-level BPE
tokenizers such as GPT-2's and Llama's spend about 3 bytes per token on code and JSON, so the
estimate errs long). A row's tokens are its prompt's and its completion's, for a pair the
prompt's and the longer side's: what a trainer checks against `max_length`. `max_length` is
the smallest multiple of 128 tokens that keeps at least {KEEP_SHARE:.0%} of the config's rows by
this estimate. Pass it to the trainer (`RewardConfig`, `DPOConfig`, `KTOConfig`): TRL's
reward trainer drops a pair longer than its `max_length` (1,024 by default), and its DPO and
KTO trainers cut the sequence. `*_conversational` configs hold the same text as messages, plus
the chat template's few tokens per turn.

The `*_compact` configs carry the same rows with **compact completions** for short contexts:
for a pair, each side shows only its lines that the other side does not have, with
{CONTEXT_LINES} lines of context, the runs of lines both have replaced by a marker with their
count, and files alike on both sides named but not shown; for a single version (`unpaired_compact`),
the same view against its parent (the version it revises or was forked from), or for a root
the head of each file. Each view starts with the app's manifest `name` and `description` and
every other manifest key that differs from the other side; that line and the file lines share
{BUDGET:,} characters per completion, with a marker counting what was left out, so that nearly
every compact row fits TRL's default `max_length`. Prompts, labels and margins are the full
configs'.

## Kinds

* `scalar` (prompt, completion): one row per version. `reward` is the posterior mean of the
  version's quality after taking each rater's leniency out (Koren baseline μ + b_u + b_v),
  reading end-of-scale ratings as bounds (five stars: "at least 4.5") and pooling along the
  fork tree (exact Gaussian posterior), Sprig's ranking model; `reward_sd` its posterior sd;
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
* `*_compact`: the same rows with compact completions (above).
* `*_conversational`: the same rows with prompt/completion/chosen/rejected as
  `[{{"role", "content"}}]` messages.
{OPENAI_NOTE if parameters.openai_jsonl else ""}

## License

`other` (`sprig-community`): the community's sub-agents and ratings, for training and
evaluating the coding agent of the organization that runs Sprig, not for redistribution; the
terms are in `{LICENSE_FILE}`.

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


def write_card(
    directory: Path, result: ExportResult, parameters: ExportParameters, run_info: dict
) -> list[str]:
    """The card (README.md) and the license it links (LICENSE.md) into a run's directory; their
    paths, relative to it."""
    (directory / CARD_FILE).write_text(dataset_card(result, parameters, run_info), encoding="utf-8")
    (directory / LICENSE_FILE).write_text(LICENSE, encoding="utf-8")
    return [CARD_FILE, LICENSE_FILE]
