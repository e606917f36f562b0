"""The dataset card tells the truth about its own run, whatever the run holds.

A fresh export of the simulator's world and an incremental export in which nothing changed are
each loaded config by config exactly as their card says (the ``load_dataset`` lines of its
Loading section, against the configs of its YAML), and every claim is checked against what
loads: the splits and their rows, the example path, the Hub metadata, and that the named
``max_length`` keeps at least 95% of a config's rows by the card's own token estimate. Two runs
with the same number get different folders, and ``datasets`` (caching by folder name) returns
each one's own rows.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only; read when datasets loads

import math
import re
import secrets

import datasets
import numpy as np
import pytest
import yaml

from bench.export import SyntheticTexts, inputs_from_world, simulated_world
from feedback.dataset_files import publish_run, run_name, start_run
from feedback.export import (
    ExportParameters,
    FeedbackColumns,
    RewardExport,
    card_configs,
    write_card,
)
from feedback.export.card import size_category
from feedback.export.lengths import BYTES_PER_TOKEN

LOAD_LINE = re.compile(r'^load_dataset\(run_dir, name="([^"]+)"(, streaming=True)?\)', re.M)
EXAMPLE = re.compile(r'data_files=f"\{run_dir\}/([^"]+)"')
HUB_SIZES = {"n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M"}


@pytest.fixture(scope="module")
def world_inputs():
    return inputs_from_world(simulated_world(3, sessions=12_000, forks=120))


def export_run(root, catalog, feedback, *, run=1, fingerprint="0123abcd", since_run=None):
    parameters = ExportParameters(test_share=0.3)
    export = RewardExport(catalog, feedback, parameters, pseudonym_key=secrets.token_bytes(32))
    name = run_name(run, fingerprint)
    directory = start_run(root, name)
    result = export.write(directory, SyntheticTexts(catalog))
    info = {
        "run": run,
        "name": name,
        "since_run": since_run,
        "watermark": "2026-01-01T00:00:00+00:00",
        "code_version": "test",
    }
    write_card(directory, result, parameters, info)
    return publish_run(root, name, {"run": run, "counts": result.counts}), result


@pytest.fixture(scope="module")
def fresh(tmp_path_factory, world_inputs):
    catalog, feedback, _quality = world_inputs
    return export_run(tmp_path_factory.mktemp("fresh"), catalog, feedback)


@pytest.fixture(scope="module")
def empty_incremental(tmp_path_factory, world_inputs):
    catalog, feedback, _quality = world_inputs
    nothing_new = FeedbackColumns(**{**vars(feedback), "is_new": np.zeros(len(feedback), bool)})
    root = tmp_path_factory.mktemp("empty")
    return export_run(root, catalog, nothing_new, run=2, since_run=1)


def read_card(run_dir) -> tuple[dict, str]:
    text = (run_dir / "README.md").read_text(encoding="utf-8")
    _before, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def card_table(body: str) -> dict[str, list[str]]:
    """The card's per-config table: config name → its cells."""
    rows = {}
    for line in body.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0] in card_configs(ExportParameters()):
            rows[cells[0]] = cells
    return rows


def card_splits(cell: str) -> dict[str, int]:
    """'train 30, test 5' → {"train": 30, "test": 5}."""
    return {
        split: int(rows.replace(",", ""))
        for split, rows in (part.split() for part in cell.split(", "))
    }


def load_as_the_card_says(run_dir, cache) -> dict[str, object]:
    _front, body = read_card(run_dir)
    loaded = {}
    for name, streaming in LOAD_LINE.findall(body):
        loaded[name] = datasets.load_dataset(
            str(run_dir), name=name, cache_dir=str(cache), streaming=bool(streaming)
        )
    return loaded


@pytest.mark.parametrize("which", ["fresh", "empty_incremental"])
def test_every_config_loads_as_the_card_says_with_the_splits_and_rows_it_claims(
    which, request, tmp_path
):
    run_dir, result = request.getfixturevalue(which)
    front, body = read_card(run_dir)
    names = [config["config_name"] for config in front["configs"]]
    assert names == card_configs(ExportParameters())
    loaded = load_as_the_card_says(run_dir, tmp_path / "hf")
    assert list(loaded) == names  # one load line per config of the YAML, in its order
    table = card_table(body)
    for config in front["configs"]:
        name = config["config_name"]
        claimed = card_splits(table[name][1])
        assert [entry["split"] for entry in config["data_files"]] == list(claimed)
        dataset = loaded[name]
        assert list(dataset) == list(claimed)
        rows = {split: sum(1 for _row in dataset[split]) for split in dataset}
        assert rows == claimed
        assert sum(rows.values()) == result.counts[name]["total"]
        for split in dataset:  # every column, with the type of the config's schema
            assert "category" in dataset[split].features
    if which == "empty_incremental":
        assert all(counts["total"] == 0 for counts in result.counts.values())
        assert "no rows" in body and "streaming=True" in body


def test_a_fresh_run_has_both_splits_where_it_has_rows_in_both(fresh):
    run_dir, _result = fresh
    front, _body = read_card(run_dir)
    splits = {c["config_name"]: [e["split"] for e in c["data_files"]] for c in front["configs"]}
    assert splits["scalar"] == ["train", "test"]
    assert splits["ratings"] == ["train", "test"]


@pytest.mark.parametrize("which", ["fresh", "empty_incremental"])
def test_the_example_path_is_a_file_of_this_run_and_loads(which, request, tmp_path):
    run_dir, _result = request.getfixturevalue(which)
    _front, body = read_card(run_dir)
    (path,) = EXAMPLE.findall(body)
    assert (run_dir / path).is_file()
    if which == "fresh":
        plain = datasets.load_dataset(
            "parquet", data_files=f"{run_dir}/{path}", cache_dir=str(tmp_path / "hf")
        )
        assert len(plain["train"]) > 0


@pytest.mark.parametrize("which", ["fresh", "empty_incremental"])
def test_the_card_carries_the_hub_metadata(which, request):
    run_dir, result = request.getfixturevalue(which)
    front, _body = read_card(run_dir)
    assert front["license"] == "other" and front["license_name"]
    assert (run_dir / front["license_link"]).is_file()
    assert "en" in front["language"] and "code" in front["language"]
    assert all(re.fullmatch(r"[a-z]{2}|code", code) for code in front["language"])
    assert front["task_categories"] == ["text-generation", "reinforcement-learning"]
    largest = max(counts["total"] for counts in result.counts.values())
    assert front["size_categories"] == [size_category(largest)]
    assert front["size_categories"][0] in HUB_SIZES
    assert {"trl", "dpo", "kto", "reward-modeling"} <= set(front["tags"])
    assert run_dir.name in front["pretty_name"]


def estimated_tokens(row: dict) -> int:
    sides = [row[k] for k in ("completion", "chosen", "rejected") if k in row]
    longest = max(len(side.encode()) for side in sides)
    return math.ceil((len(row["prompt"].encode()) + longest) / BYTES_PER_TOKEN)


def test_max_length_keeps_at_least_95_percent_of_rows_by_the_cards_own_measure(fresh, tmp_path):
    run_dir, _result = fresh
    _front, body = read_card(run_dir)
    table = card_table(body)
    named = re.compile(r"([\d,]+) \(keeps ([\d,]+) of ([\d,]+)\)")
    checked = []
    for name, cells in table.items():
        if name.endswith("_conversational") or name == "ratings":
            continue
        max_length, kept, total = (int(x.replace(",", "")) for x in named.match(cells[4]).groups())
        dataset = datasets.load_dataset(str(run_dir), name=name, cache_dir=str(tmp_path))
        tokens = [estimated_tokens(row) for split in dataset for row in dataset[split]]
        assert total == len(tokens) > 0
        assert kept == sum(t <= max_length for t in tokens) >= 0.95 * total
        # The smallest multiple of 128 that does: one step less keeps under 95%.
        assert max_length % 128 == 0
        assert max_length == 128 or sum(t <= max_length - 128 for t in tokens) < 0.95 * total
        checked.append(name)
    assert {"pairwise", "pairwise_compact", "unpaired", "unpaired_compact"} <= set(checked)


def test_two_runs_with_the_same_number_load_their_own_rows(tmp_path, world_inputs):
    """Run 1 of one database, then run 1 of another (here: other feedback), each in its own
    export folder, read through one ``datasets`` cache."""
    catalog, feedback, _quality = world_inputs
    half = len(feedback) // 2
    first_half = FeedbackColumns(
        **{k: v[:half] for k, v in vars(feedback).items() if v is not None}
    )
    first, first_result = export_run(tmp_path / "a", catalog, first_half, fingerprint="aaaa1111")
    second, second_result = export_run(tmp_path / "b", catalog, feedback, fingerprint="bbbb2222")
    assert first.name != second.name
    cache = tmp_path / "hf"
    for run_dir, result in ((first, first_result), (second, second_result)):
        ratings = datasets.load_dataset(str(run_dir), name="ratings", cache_dir=str(cache))
        assert sum(len(ratings[s]) for s in ratings) == result.counts["ratings"]["total"]
    assert first_result.counts["ratings"]["total"] != second_result.counts["ratings"]["total"]
