"""The dataset card (README.md) of a run directory: the YAML front matter that tells
``datasets`` each config's files, then what each kind holds, the privacy guarantees and the
fitted model."""

from __future__ import annotations

from feedback.dataset_files import card_front_matter
from feedback.export.inputs import ExportParameters, ExportResult
from feedback.export.schema import KINDS, TEXT_KINDS


def card_configs(parameters: ExportParameters) -> list[str]:
    names = []
    for kind in KINDS:
        names.append(kind)
        if kind in TEXT_KINDS and parameters.conversational:
            names.append(f"{kind}_conversational")
    return names


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
    configs = card_configs(parameters)
    front = card_front_matter(
        [s for s in result.shards if s.config != "openai"], configs, "pairwise"
    )
    counts = result.counts
    rows = "\n".join(f"| {name} | {counts.get(name, {}).get('total', 0):,} |" for name in configs)
    model = result.model
    prior = model["prior"]
    since = run_info.get("since_run")
    scope = (
        f"Incremental: only rows whose feedback changed after run {since}'s watermark; a row "
        "supersedes the row with the same version (or pair) in earlier runs."
        if since
        else "Full snapshot of every exportable version."
    )
    return f"""{front}
# Sprig reward dataset, run {run_info.get("run")}

Correlated feedback on Sprig's sub-agents (AI-written lifestyle mini-apps), turned into reward
data for retraining the coding agent, per scenario (category). {scope}
Watermark: feedback last written at or before {run_info.get("watermark")}.
Code version: {run_info.get("code_version")}.

| config | rows |
| --- | --- |
{rows}

Each config has `train` and `test` splits, split by **lineage root**: every version derived
from one original sub-agent is in the same split. Shards sit under `<config>/<category>/`, so
`load_dataset("parquet", data_files="pairwise/diet/train-*.parquet")` reads one scenario;
`load_dataset(this_directory, name="pairwise")` reads every scenario.

## Kinds

* `scalar` (prompt, completion): one row per version. `reward` is the posterior mean of the
  version's quality after taking each rater's leniency out (Koren baseline μ + b_u + b_v) and
  pooling along the fork tree (exact Gaussian posterior); `reward_sd` its posterior sd;
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
* `*_conversational`: the same rows with prompt/completion/chosen/rejected as
  `[{{"role", "content"}}]` messages.
{OPENAI_NOTE if parameters.openai_jsonl else ""}

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
