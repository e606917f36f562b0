"""TRL's RewardTrainer, DPOTrainer and KTOTrainer, unchanged, on a fresh demo export.

The trainers' own question: how many rows does each keep whole, at the ``max_length`` the run's
dataset card names for the config, against TRL's default ``max_length`` of 1,024 tokens (the
baseline, in the same run)? The reward trainer drops a pair when either side is longer; the
DPO and KTO trainers cut the sequence, so "kept whole" counts the rows they do not cut. Each
trainer then trains a few steps on each config, to show the rows go through unchanged.

No download: the model is a tiny Llama with random weights, and the tokenizer a byte-level BPE
trained with ``tokenizers`` on the export's own prompts and completions (so its tokens per byte
differ from a real model's; the card's estimate is meant to err long for real ones too).

This needs torch, transformers, trl, datasets and tokenizers (the ``train`` extra), which the
server's environment does not carry; it runs in a separate environment (``make
bench-trainers``). The export itself is made by the project's ``sprig`` command (``--sprig``)
on a temporary SQLite database with the demo community, as an operator would make it.

    python bench/trainers.py [--quick] [--sprig .venv/bin/sprig] [--run-dir DIR]

Prints the table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# After the offline switch above: these read it when imported.
import datasets
import torch
import transformers
import trl
import yaml
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

TRL_DEFAULT_MAX_LENGTH = 1024
VOCAB = 8192
PAIR_CONFIGS = ("pairwise", "pairwise_compact")
UNPAIRED_CONFIGS = ("unpaired", "unpaired_compact")
TRAINERS = {"reward": PAIR_CONFIGS, "dpo": PAIR_CONFIGS, "kto": UNPAIRED_CONFIGS}
MAX_LENGTH_CELL = re.compile(r"([\d,]+) \(keeps")


# --------------------------------------------------------------------------- the export
def build_export(sprig: Path, workdir: Path, export_options: list[str]) -> Path:
    """A fresh demo community in a temporary SQLite database, exported once."""
    env = {
        **os.environ,
        "SPRIG_DATABASE_URL": f"sqlite:///{workdir / 'demo.db'}",
        "SPRIG_EXPORT_SETTLE_SECONDS": "0",
    }
    out = workdir / "exports"
    for command in (
        ["db", "upgrade"],
        ["demo", "--no-tokens"],
        ["export-rewards", "--out", str(out), "--no-progress", *export_options],
    ):
        subprocess.run([str(sprig), *command], env=env, check=True, capture_output=True)
    (run_dir,) = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return run_dir


def card_max_lengths(run_dir: Path) -> dict[str, int]:
    """The ``max_length`` the card names for each config that has one."""
    text = (run_dir / "README.md").read_text(encoding="utf-8")
    configs = [c["config_name"] for c in yaml.safe_load(text.split("---\n")[1])["configs"]]
    named = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0] in configs:
            found = MAX_LENGTH_CELL.match(cells[4])
            if found:
                named[cells[0]] = int(found.group(1).replace(",", ""))
    return named


def load(run_dir: Path, name: str, cache: Path) -> datasets.Dataset | None:
    """Every split of a config as one dataset, loaded by name as the card says; None for a
    config without rows in this run (the card names no max_length for it)."""
    if name not in card_max_lengths(run_dir):
        return None
    loaded = datasets.load_dataset(str(run_dir), name=name, cache_dir=str(cache))
    return datasets.concatenate_datasets([loaded[split] for split in loaded])


# --------------------------------------------------------------------------- model and tokenizer
def train_tokenizer(texts: list[str]) -> transformers.PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=VOCAB,
            special_tokens=["<pad>", "<s>", "</s>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    special = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, **special)


def tiny_llama(tokenizer, max_length: int, *, reward: bool):
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_length,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        num_labels=1,
    )
    torch.manual_seed(0)
    if reward:
        return transformers.LlamaForSequenceClassification(config)
    return transformers.LlamaForCausalLM(config)


# --------------------------------------------------------------------------- the trainers
def _arguments(kind, output: Path, max_length: int, steps: int):
    common = {
        "output_dir": str(output),
        "max_length": max_length,
        "max_steps": steps,
        "per_device_train_batch_size": 2 if kind is trl.KTOConfig else 1,
        "learning_rate": 1e-4,
        "logging_steps": 1,
        "report_to": [],
        "save_strategy": "no",
        "use_cpu": True,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
    }
    return kind(**common)


def whole(trainer_name: str, trainer, max_length: int) -> int:
    """Rows the trainer keeps whole: the reward trainer has already dropped the longer ones;
    DPO and KTO keep every row and cut the ones longer than ``max_length``."""
    data = trainer.train_dataset
    if trainer_name == "reward":
        return len(data)
    prompts = [len(ids) for ids in data["prompt_ids"]]
    if trainer_name == "dpo":
        pairs = zip(data["chosen_ids"], data["rejected_ids"], strict=True)
        sides = [max(len(chosen), len(rejected)) for chosen, rejected in pairs]
    else:
        sides = [len(ids) for ids in data["completion_ids"]]
    return sum(p + s <= max_length for p, s in zip(prompts, sides, strict=True))


def make_trainer(trainer_name: str, rows, tokenizer, max_length: int, steps: int, output: Path):
    model = tiny_llama(tokenizer, max_length, reward=trainer_name == "reward")
    if trainer_name == "reward":
        args = _arguments(trl.RewardConfig, output, max_length, steps)
        return trl.RewardTrainer(
            model=model, args=args, train_dataset=rows, processing_class=tokenizer
        )
    # The reference model: the same random weights, frozen (TRL would load it by name).
    reference = tiny_llama(tokenizer, max_length, reward=False)
    trainer, config = {
        "dpo": (trl.DPOTrainer, trl.DPOConfig),
        "kto": (trl.KTOTrainer, trl.KTOConfig),
    }[trainer_name]
    return trainer(
        model=model,
        ref_model=reference,
        args=_arguments(config, output, max_length, steps),
        train_dataset=rows,
        processing_class=tokenizer,
    )


def measure(trainer_name, config, rows, tokenizer, max_length, steps, workdir) -> dict:
    """Rows kept whole at the card's max_length and at TRL's default; a few training steps at
    the card's."""
    baseline = make_trainer(
        trainer_name, rows, tokenizer, TRL_DEFAULT_MAX_LENGTH, steps, workdir / "base"
    )
    kept_default = whole(trainer_name, baseline, TRL_DEFAULT_MAX_LENGTH)
    del baseline
    trainer = make_trainer(trainer_name, rows, tokenizer, max_length, steps, workdir / "run")
    trainer.remove_callback(transformers.PrinterCallback)  # the table says what matters
    kept = whole(trainer_name, trainer, max_length)
    started = time.perf_counter()
    losses = []
    if len(trainer.train_dataset):
        trainer.train()
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return {
        "trainer": trainer_name,
        "config": config,
        "rows": len(rows),
        "max_length": max_length,
        "kept": kept,
        "kept_at_default": kept_default,
        "steps": len(losses),
        "loss_first": round(losses[0], 4) if losses else None,
        "loss_last": round(losses[-1], 4) if losses else None,
        "train_seconds": round(time.perf_counter() - started, 1),
    }


# --------------------------------------------------------------------------- main
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one training step per trainer")
    parser.add_argument(
        "--sprig",
        type=Path,
        default=Path(__file__).resolve().parent.parent / ".venv" / "bin" / "sprig",
        help="the project's sprig command, which builds the demo export",
    )
    parser.add_argument("--run-dir", type=Path, help="an existing export run instead")
    parser.add_argument(
        "--confidence",
        help="the export's --confidence (default: the export's own, 0.95)",
    )
    options = parser.parse_args()
    steps = 1 if options.quick else 3
    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    with tempfile.TemporaryDirectory(prefix="sprig-trainers-") as temporary:
        workdir = Path(temporary)
        started = time.perf_counter()
        export_options = ["--confidence", options.confidence] if options.confidence else []
        run_dir = options.run_dir or build_export(options.sprig, workdir, export_options)
        export_seconds = time.perf_counter() - started
        max_lengths = card_max_lengths(run_dir)
        cache = workdir / "hf"
        loaded = {name: load(run_dir, name, cache) for name in PAIR_CONFIGS + UNPAIRED_CONFIGS}
        data = {name: rows for name, rows in loaded.items() if rows is not None}
        texts = []
        for rows in data.values():
            for column in ("prompt", "completion", "chosen", "rejected"):
                if column in rows.column_names:
                    texts += rows[column]
        tokenizer = train_tokenizer(texts)
        encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
        bytes_per_token = sum(len(t.encode()) for t in texts) / sum(map(len, encoded))
        results = []
        for trainer_name, configs in TRAINERS.items():
            for config in configs:
                if config not in data:
                    print(f"{trainer_name}: {config} has no rows in this run", file=sys.stderr)
                    continue
                results.append(
                    measure(
                        trainer_name,
                        config,
                        data[config],
                        tokenizer,
                        max_lengths[config],
                        steps,
                        workdir / f"{trainer_name}-{config}",
                    )
                )
    print(
        f"export {run_dir.name} ({export_seconds:.0f} s); tokenizer: {len(tokenizer)} tokens, "
        f"{bytes_per_token:.2f} bytes per token on the export's text (the card assumes 2.5)"
    )
    print(
        f"{'trainer':<7} {'config':<17} {'rows':>5} {'max_length':>10} {'kept whole':>10} "
        f"{'at 1024 (TRL default)':>21} {'steps':>5} {'loss first → last':>18}"
    )
    for r in results:
        loss = "—" if r["loss_first"] is None else f"{r['loss_first']:.3f} → {r['loss_last']:.3f}"
        print(
            f"{r['trainer']:<7} {r['config']:<17} {r['rows']:>5} {r['max_length']:>10,} "
            f"{r['kept']:>10} {r['kept_at_default']:>21} {r['steps']:>5} {loss:>18}"
        )
    fits = bool(results) and all(r["kept"] >= 0.95 * r["rows"] for r in results)
    trained = all(r["steps"] > 0 for r in results if r["kept"])
    print(
        json.dumps(
            {
                "bench": "trainers",
                "quick": options.quick,
                "trl": trl.__version__,
                "transformers": transformers.__version__,
                "torch": torch.__version__,
                "bytes_per_token": round(bytes_per_token, 3),
                "results": results,
                "card_max_length_keeps_95_percent": fits,
                "every_trainer_trained": trained,
            }
        )
    )
    return 0 if fits and trained else 1


if __name__ == "__main__":
    sys.exit(main())
