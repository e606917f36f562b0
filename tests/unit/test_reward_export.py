"""feedback.export and feedback.dataset_files on the simulator's world: the run directory loads
with Hugging Face ``datasets`` both ways, every config matches the TRL formats field for field,
the manifest's hashes and counts are the files', and no lineage root is in both splits."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only; read when datasets loads

import hashlib
import json
import secrets
import stat

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from bench.export import SyntheticTexts, inputs_from_world, simulated_world
from feedback.dataset_files import publish_run, run_name, start_run
from feedback.export import (
    ExportParameters,
    FeedbackColumns,
    RewardExport,
    card_configs,
    dataset_card,
    pseudonyms,
)

TEXT_CONFIGS = ["scalar", "pairwise", "unpaired"]


@pytest.fixture(scope="module")
def world_inputs():
    world = simulated_world(1, sessions=20_000, forks=200)
    return inputs_from_world(world)


def export_run(root, world_inputs, run=1, feedback=None, **parameters):
    catalog, all_feedback, _quality = world_inputs
    parameters = ExportParameters(**{"openai_jsonl": True, **parameters})
    export = RewardExport(
        catalog, feedback or all_feedback, parameters, pseudonym_key=secrets.token_bytes(32)
    )
    name = run_name(run, "0123abcd")
    directory = start_run(root, name)
    result = export.write(directory, SyntheticTexts(catalog))
    info = {"run": run, "name": name, "since_run": None, "watermark": "2026-01-01T00:00:00+00:00"}
    (directory / "README.md").write_text(dataset_card(result, parameters, info), encoding="utf-8")
    manifest = {
        "run": run,
        "counts": result.counts,
        "files": [vars(s) for s in result.shards],
        "parameters": parameters.as_dict(),
    }
    return publish_run(root, name, manifest), result, export


@pytest.fixture(scope="module")
def exported(tmp_path_factory, world_inputs):
    root = tmp_path_factory.mktemp("exports")
    return export_run(root, world_inputs, max_rows_per_shard=700)


def load_config(run_dir, name, cache):
    return datasets.load_dataset(str(run_dir), name=name, cache_dir=str(cache))


def test_every_config_loads_by_the_card_and_as_plain_parquet(exported, tmp_path):
    run_dir, result, _export = exported
    for name in card_configs(ExportParameters()):
        by_card = load_config(run_dir, name, tmp_path / "hf")
        assert set(by_card) <= {"train", "test"} and "train" in by_card
        assert sum(len(by_card[s]) for s in by_card) == result.counts[name]["total"] > 0
        files = sorted(str(p) for p in run_dir.glob(f"{name}/*/*.parquet"))
        plain = datasets.load_dataset(
            "parquet", data_files=files, split="train", cache_dir=str(tmp_path / "hf")
        )
        assert len(plain) == result.counts[name]["total"]


def test_the_card_yaml_names_one_config_per_kind_with_split_patterns(exported):
    run_dir, _result, _export = exported
    text = (run_dir / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---")[1])
    configs = {c["config_name"]: c for c in front["configs"]}
    assert set(configs) == set(card_configs(ExportParameters()))
    assert configs["pairwise"]["data_files"] == [
        {"split": "train", "path": "pairwise/*/train-*.parquet"},
        {"split": "test", "path": "pairwise/*/test-*.parquet"},
    ]


def _is_messages(value, role):
    return (
        isinstance(value, list)
        and len(value) == 1
        and set(value[0]) == {"role", "content"}
        and value[0]["role"] == role
        and isinstance(value[0]["content"], str)
        and value[0]["content"]
    )


def test_pairwise_rows_are_trl_preference_rows(exported, tmp_path):
    run_dir, _result, _export = exported
    standard = load_config(run_dir, "pairwise", tmp_path / "hf")["train"]
    conversational = load_config(run_dir, "pairwise_conversational", tmp_path / "hf")["train"]
    assert len(standard) == len(conversational) > 0
    assert {"prompt", "chosen", "rejected", "margin"} <= set(standard.column_names)
    for row, turn in zip(standard, conversational, strict=True):
        assert isinstance(row["prompt"], str) and row["prompt"]
        assert isinstance(row["chosen"], str) and isinstance(row["rejected"], str)
        assert row["chosen"] != row["rejected"]
        assert isinstance(row["margin"], float) and row["margin"] > 0
        assert row["p_chosen_better"] >= 0.95
        assert row["relation"] in {"parent_child", "sibling", "co_rated"}
        assert _is_messages(turn["prompt"], "user")
        assert _is_messages(turn["chosen"], "assistant")
        assert _is_messages(turn["rejected"], "assistant")
        assert turn["prompt"][0]["content"] == row["prompt"]
        assert turn["chosen"][0]["content"] == row["chosen"]
        assert turn["margin"] == row["margin"]


def test_unpaired_rows_are_trl_kto_rows(exported, tmp_path):
    run_dir, _result, _export = exported
    standard = load_config(run_dir, "unpaired", tmp_path / "hf")["train"]
    conversational = load_config(run_dir, "unpaired_conversational", tmp_path / "hf")["train"]
    labels = standard["label"]
    assert all(isinstance(label, bool) for label in labels)
    assert 0 < sum(labels) < len(labels)  # both desirable and undesirable examples
    for row, turn in zip(standard, conversational, strict=True):
        assert isinstance(row["prompt"], str) and isinstance(row["completion"], str)
        assert row["label"] == (row["p_above_reference"] >= 0.95)
        assert _is_messages(turn["prompt"], "user")
        assert _is_messages(turn["completion"], "assistant")


def test_scalar_rows_carry_the_reward_its_uncertainty_and_the_evidence(exported, tmp_path):
    run_dir, _result, export = exported
    rows = load_config(run_dir, "scalar", tmp_path / "hf")["train"]
    catalog = export.catalog
    for row in rows.select(range(50)):
        node = int(np.flatnonzero(catalog.version_id == row["version_id"])[0])
        assert row["reward"] == pytest.approx(export.estimate.mean[node])
        assert row["reward_sd"] == pytest.approx(export.estimate.sd[node]) and row["reward_sd"] > 0
        assert row["raters"] >= 5 and row["ratings"] == row["raters"]
        assert row["stars_count"] + row["thumbs_up"] + row["thumbs_down"] == row["ratings"]
        assert json.loads(row["completion"])["manifest"]["name"] == f"App {row['version_id']}"


def test_no_lineage_root_is_in_both_splits(exported):
    run_dir, _result, _export = exported
    for name in ["scalar", "unpaired", "ratings"]:
        roots = {}
        for split in ("train", "test"):
            tables = [pq.read_table(p) for p in run_dir.glob(f"{name}/*/{split}-*.parquet")]
            roots[split] = {r for t in tables for r in t.column("root_id").to_pylist()}
        assert roots["train"] and roots["test"]
        assert not roots["train"] & roots["test"]
    pairs = {
        split: {
            r
            for p in run_dir.glob(f"pairwise/*/{split}-*.parquet")
            for column in ("chosen_root_id", "rejected_root_id")
            for r in pq.read_table(p).column(column).to_pylist()
        }
        for split in ("train", "test")
    }
    assert not pairs["train"] & pairs["test"]


def test_manifest_hashes_counts_and_read_only_files(exported):
    run_dir, result, _export = exported
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert len(manifest["files"]) == len(result.shards)
    shards_of = {}
    for entry in manifest["files"]:
        path = run_dir / entry["path"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]
        assert path.stat().st_size == entry["bytes"]
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
        if entry["path"].endswith(".parquet"):
            assert pq.ParquetFile(path).metadata.num_rows == entry["rows"]
            shards_of.setdefault(str(path.parent / entry["split"]), []).append(path.name)
    # Shards roll over at 700 rows here, and each group's shards are numbered -of-N.
    assert any(len(names) > 1 for names in shards_of.values())
    for names in shards_of.values():
        assert sorted(names) == [
            f"{n.split('-')[0]}-{i:05d}-of-{len(names):05d}.parquet"
            for i, n in enumerate(sorted(names))
        ]


def test_openai_jsonl_lines_follow_the_preference_format(exported):
    run_dir, result, _export = exported
    lines = [
        json.loads(line)
        for path in run_dir.glob("openai/*/*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert len(lines) == result.counts["pairwise"]["total"] > 0
    for line in lines:
        assert set(line) == {"input", "preferred_output", "non_preferred_output"}
        assert [m["role"] for m in line["input"]["messages"]] == ["user"]
        assert [m["role"] for m in line["preferred_output"]] == ["assistant"]
        assert [m["role"] for m in line["non_preferred_output"]] == ["assistant"]


def test_a_run_directory_is_never_written_twice(exported):
    run_dir, _result, _export = exported
    with pytest.raises(FileExistsError):
        start_run(run_dir.parent, run_dir.name)


def test_k_anonymity_leaves_out_versions_with_few_raters(tmp_path, world_inputs):
    catalog, feedback, _quality = world_inputs
    counts = np.bincount(feedback.version_id, minlength=catalog.version_id.max() + 1)
    k = int(np.percentile(counts[catalog.version_id], 30))
    _run_dir, _result, export = export_run(tmp_path, world_inputs, k_anonymity=k)
    exported = set(catalog.version_id[np.flatnonzero(export.eligible)].tolist())
    assert exported == {int(v) for v in catalog.version_id if counts[v] >= k}
    for path in _run_dir.glob("ratings/*/*.parquet"):
        assert set(pq.read_table(path).column("version_id").to_pylist()) <= exported


def test_incremental_rows_are_those_new_feedback_touched(tmp_path, world_inputs):
    catalog, feedback, _quality = world_inputs
    is_new = np.zeros(len(feedback), bool)
    touched_versions = catalog.version_id[[3, 10]]
    is_new[np.isin(feedback.version_id, touched_versions)] = True
    later = FeedbackColumns(**{**vars(feedback), "is_new": is_new})
    run_dir, result, _export = export_run(tmp_path, world_inputs, feedback=later)
    assert result.counts["ratings"]["total"] == int(is_new.sum())
    scalar = {
        v
        for p in run_dir.glob("scalar/*/*.parquet")
        for v in pq.read_table(p).column("version_id").to_pylist()
    }
    assert scalar == set(touched_versions.tolist())
    for path in run_dir.glob("pairwise/*/*.parquet"):
        table = pq.read_table(path)
        for c, r in zip(
            table.column("chosen_version_id").to_pylist(),
            table.column("rejected_version_id").to_pylist(),
            strict=True,
        ):
            assert c in scalar or r in scalar


def test_pseudonyms_are_hmac_sha256_under_the_run_key():
    import hmac

    key = b"k" * 32
    names = [name.decode() for name in pseudonyms(np.array([1, 22, 333]), key)]
    assert names[1] == hmac.new(key, b"22", hashlib.sha256).hexdigest()[:32]
    assert len(set(names)) == 3
    assert pseudonyms(np.array([22]), b"j" * 32)[0].decode() != names[1]


def test_an_export_with_nothing_to_export_documents_every_config(tmp_path):
    from feedback.export import CatalogArrays

    none = np.zeros(0, np.int64)
    catalog = CatalogArrays(none, none, none, np.zeros(0, np.int32), ())
    feedback = FeedbackColumns(
        none,
        none,
        none,
        np.zeros(0, bool),
        np.zeros(0, np.int8),
        np.zeros(0),
        np.zeros(0, np.int32),
    )
    run_dir, result, _export = export_run(tmp_path, (catalog, feedback, None))
    assert all(counts["total"] == 0 for counts in result.counts.values())
    front = yaml.safe_load((run_dir / "README.md").read_text(encoding="utf-8").split("---")[1])
    # Every config is listed by its one empty shard (its loading: test_reward_export_card.py).
    assert [c["config_name"] for c in front["configs"]] == card_configs(ExportParameters())
    for name in card_configs(ExportParameters()):
        empty = pq.read_table(run_dir / name / "train-00000-of-00001.parquet")
        assert empty.num_rows == 0 and "category" in empty.column_names


def test_each_ratings_row_names_its_rater_by_the_runs_pseudonym(tmp_path, world_inputs):
    """The rater column is the HMAC of the rating's own user: the (pseudonym, version) pairs in
    the files are exactly the exported ratings' (HMAC(user), version) pairs."""
    import hmac

    catalog, feedback, _quality = world_inputs
    key = b"r" * 32
    export = RewardExport(catalog, feedback, ExportParameters(ratings_batch=333), pseudonym_key=key)
    export.write(tmp_path, SyntheticTexts(catalog))
    written, rows_read = set(), 0
    for path in tmp_path.glob("ratings/*/*.parquet"):
        table = pq.read_table(path, columns=["rater", "version_id"])
        written |= set(
            zip(table["rater"].to_pylist(), table["version_id"].to_pylist(), strict=True)
        )
        rows_read += table.num_rows
    rows = export.rating_rows
    expected = {
        (hmac.new(key, b"%d" % user, hashlib.sha256).hexdigest()[:32], version)
        for user, version in zip(
            feedback.user_id[rows].tolist(), feedback.version_id[rows].tolist(), strict=True
        )
    }
    # Each rating once (both threads write ratings groups), under its own rater's pseudonym.
    assert rows_read == len(written) == rows.size > 1000
    assert written == expected


class _Broken(SyntheticTexts):
    """A text source that fails on the first read of one kind, as a lost database would."""

    def __init__(self, catalog, failing: str) -> None:
        super().__init__(catalog)
        self.failing = failing

    def versions(self, version_ids):
        if self.failing == "versions":
            raise ConnectionError("text store went away")
        return super().versions(version_ids)

    def comments(self, feedback_ids):
        if self.failing == "comments":
            raise ConnectionError("comment store went away")
        return {}


@pytest.mark.parametrize("failing", ["versions", "comments"])
def test_a_failure_on_either_thread_is_raised_and_stops_both(tmp_path, world_inputs, failing):
    """The text rows fail on the main thread, the ratings' comments on the ratings thread (and
    on the main thread once it helps with ratings): either way write() raises that error and
    returns only once no export thread is left running."""
    import threading

    catalog, feedback, _quality = world_inputs
    export = RewardExport(
        catalog,
        feedback,
        ExportParameters(include_comments=True, ratings_batch=500),
        pseudonym_key=secrets.token_bytes(32),
    )
    with pytest.raises(ConnectionError, match="went away"):
        export.write(tmp_path, _Broken(catalog, failing))
    assert not [t for t in threading.enumerate() if t.name.startswith("export-")]


def test_the_handle_list_for_scrubbing_comments_is_read_once(tmp_path, world_inputs):
    """comment_scrubber reads every handle from the database: once per export, however many
    groups and threads write ratings."""

    class Counting(SyntheticTexts):
        scrubbers = 0

        def comment_scrubber(self):
            Counting.scrubbers += 1
            return super().comment_scrubber()

    catalog, feedback, _quality = world_inputs
    export = RewardExport(
        catalog,
        feedback,
        ExportParameters(include_comments=True, ratings_batch=500),
        pseudonym_key=secrets.token_bytes(32),
    )
    result = export.write(tmp_path, Counting(catalog))
    assert len(result.counts["ratings"]["by_group"]) >= 4  # several groups, two threads
    assert Counting.scrubbers == 1
