"""The files of one export run: Parquet shards, the dataset card and the manifest.

Layout (a Hugging Face dataset repository that ``load_dataset(run_dir, name=config)`` reads):

    run-00007-3f9a2c1e/
      README.md                         card; YAML ``configs``, one per kind and shape
      manifest.json                     counts, SHA-256 of every file, parameters, watermark
      pairwise/diet/train-00000-of-00002.parquet
      pairwise/diet/test-00000-of-00001.parquet
      ...
      openai/diet/train.jsonl           (when asked) OpenAI preference fine-tuning lines

Shards are written with ``pyarrow.parquet.ParquetWriter`` as the batches come, so memory holds
one batch, never a whole table; a shard is closed when it reaches ``max_rows`` rows or
``max_bytes`` of (uncompressed) data, and named ``-of-N`` once its group is complete. A run is
built in a hidden ``.<name>.partial`` directory and renamed into place only when every file
and the manifest are written, so a reader never sees half a run; its files are then made
read-only, and a run directory that exists is never written again.

A run's name is its number and a fingerprint, ``run-00007-3f9a2c1e`` (``run_name``): ``datasets``
caches a local dataset under its folder's name, so two runs numbered 7 (two databases, or a
database started again over an export folder) must not share a name, or the second one loads
the first one's cached rows.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

SPLITS = ("train", "test")
# The one shard of a config with no rows, at the top of its folder.
EMPTY_SHARD = "train-00000-of-00001.parquet"
_HASH_CHUNK = 1 << 20


@dataclass
class ShardInfo:
    path: str  # relative to the run directory, with "/" separators
    config: str
    category: str
    split: str
    rows: int
    bytes: int = 0
    sha256: str = ""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def safe_segment(name: str) -> str:
    """A category as a directory name: lower-case letters, digits, '-' and '_' only."""
    cleaned = "".join(c if c.isalnum() or c in "-_" else "_" for c in name.lower())
    return cleaned.strip("._") or "uncategorized"


class ShardedConfig:
    """One config (a kind in one shape): Parquet shards per (category, split) group.

    Small batches are gathered into row groups of about ``row_group_bytes`` (or
    ``row_group_rows``) before they are written: hundreds of tiny row groups would slow every
    reader. Memory per open group is one such row group."""

    def __init__(
        self,
        root: Path,
        config: str,
        schema: pa.Schema,
        *,
        max_rows: int,
        max_bytes: int,
        row_group_rows: int = 1_000_000,
        row_group_bytes: int = 32 * 1024 * 1024,
        store_schema: bool = True,
    ) -> None:
        self.root, self.config, self.schema = root, config, schema
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self.row_group_rows, self.row_group_bytes = row_group_rows, row_group_bytes
        self.store_schema = store_schema
        self.writer_options = {"compression": "zstd", "store_schema": store_schema}
        self.shards: list[ShardInfo] = []
        self._open: dict[tuple[str, str], _OpenShard] = {}
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._parts: dict[tuple[str, str], list[Path]] = {}

    def write(self, category: str, split: str, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        if table.schema != self.schema:
            table = table.select(self.schema.names).cast(self.schema)
        group = (safe_segment(category), split)
        pending = self._pending.setdefault(group, _Pending())
        pending.tables.append(table)
        pending.rows += table.num_rows
        pending.nbytes += table.nbytes
        if pending.rows >= self.row_group_rows or pending.nbytes >= self.row_group_bytes:
            self._flush(group)

    def _flush(self, group: tuple[str, str]) -> None:
        pending = self._pending.pop(group, None)
        if pending is None:
            return
        table = pa.concat_tables(pending.tables)
        pending.tables.clear()
        offset = 0
        while offset < table.num_rows:
            shard = self._open.get(group)
            if shard is None:
                shard = self._start(group)
            piece = table.slice(offset, self.max_rows - shard.rows)
            shard.writer.write_table(piece, row_group_size=max(piece.num_rows, 1))
            shard.rows += piece.num_rows
            shard.nbytes += piece.nbytes
            offset += piece.num_rows
            if shard.rows >= self.max_rows or shard.nbytes >= self.max_bytes:
                self._finish(group)

    def close_group(self, category: str, split: str) -> None:
        """Write what is pending, close the group's last shard and give its shards their final
        ``-of-N`` names."""
        group = (safe_segment(category), split)
        self._flush(group)
        if group in self._open:
            self._finish(group)
        parts = self._parts.pop(group, [])
        for index, temporary in enumerate(parts):
            final = temporary.with_name(f"{split}-{index:05d}-of-{len(parts):05d}.parquet")
            temporary.rename(final)
            # Hashed now, on the thread that wrote it, rather than in one pass at the end.
            self.shards.append(
                ShardInfo(
                    path=final.relative_to(self.root).as_posix(),
                    config=self.config,
                    category=group[0],
                    split=split,
                    rows=pq.ParquetFile(final).metadata.num_rows,
                    bytes=final.stat().st_size,
                    sha256=sha256_of(final),
                )
            )

    def close(self, placeholder: bool = True) -> list[ShardInfo]:
        for category, split in list(self._parts) + list(self._open) + list(self._pending):
            self.close_group(category, split)
        if not self.shards and placeholder:
            # A config with no rows still gets one empty shard with its schema, so every
            # config of the card loads (as zero rows) and the columns are documented. (Not
            # when several writers share a config: the caller adds it once, if none wrote.)
            path = self.root / self.config / EMPTY_SHARD
            path.parent.mkdir(parents=True, exist_ok=True)
            # No row group at all: ``datasets`` reads a row group of zero rows with a batch
            # size of zero and fails, while a file without row groups is read as no rows.
            pq.ParquetWriter(path, self.schema, **self.writer_options).close()
            relative = path.relative_to(self.root).as_posix()
            self.shards.append(ShardInfo(relative, self.config, "", "train", 0))
        return self.shards

    def _start(self, group: tuple[str, str]) -> _OpenShard:
        category, split = group
        parts = self._parts.setdefault(group, [])
        path = self.root / self.config / category / f".{split}-{len(parts):05d}.partial"
        path.parent.mkdir(parents=True, exist_ok=True)
        parts.append(path)
        shard = _OpenShard(pq.ParquetWriter(path, self.schema, **self.writer_options))
        self._open[group] = shard
        return shard

    def _finish(self, group: tuple[str, str]) -> None:
        self._open.pop(group).writer.close()


@dataclass
class _OpenShard:
    writer: pq.ParquetWriter
    rows: int = 0
    nbytes: int = 0


@dataclass
class _Pending:
    tables: list[pa.Table] = field(default_factory=list)
    rows: int = 0
    nbytes: int = 0


@dataclass
class JsonLines:
    """Append-only JSONL files per (category, split), for the OpenAI preference format."""

    root: Path
    directory: str
    files: dict[tuple[str, str], tuple[Path, object]] = field(default_factory=dict)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def write(self, category: str, split: str, lines: list[dict]) -> None:
        if not lines:
            return
        group = (safe_segment(category), split)
        if group not in self.files:
            path = self.root / self.directory / group[0] / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            self.files[group] = (path, path.open("wb"))
        handle = self.files[group][1]
        handle.write(b"".join(orjson.dumps(line) + b"\n" for line in lines))
        self.counts[group] = self.counts.get(group, 0) + len(lines)

    def close(self) -> list[ShardInfo]:
        out = []
        for group, (path, handle) in sorted(self.files.items()):
            handle.close()
            out.append(
                ShardInfo(
                    path=path.relative_to(self.root).as_posix(),
                    config=self.directory,
                    category=group[0],
                    split=group[1],
                    rows=self.counts[group],
                )
            )
        return out


def finish_files(root: Path, shards: list[ShardInfo]) -> None:
    """Sizes and SHA-256 of every file not yet hashed, read back from disk once closed."""
    for shard in shards:
        if shard.sha256:
            continue
        path = root / shard.path
        shard.bytes = path.stat().st_size
        shard.sha256 = sha256_of(path)


# --------------------------------------------------------------------------- the card
def _yaml_string(value: str) -> str:
    return orjson.dumps(value).decode()  # a JSON string is a valid YAML flow scalar


def config_splits(shards: list[ShardInfo], config: str) -> dict[str, int]:
    """The splits a config really has, with their rows: those with rows, or (a config with no
    rows at all) ``train`` holding its one empty shard."""
    mine = [s for s in shards if s.config == config]
    splits = {
        split: sum(s.rows for s in mine if s.split == split)
        for split in SPLITS
        if any(s.split == split and s.rows > 0 for s in mine)
    }
    return splits or {"train": 0}


def split_pattern(config: str, split: str, rows: int) -> str:
    """The ``data_files`` glob of a split: the category folders' shards, or the empty shard."""
    return f"{config}/*/{split}-*.parquet" if rows else f"{config}/{EMPTY_SHARD}"


def card_front_matter(
    shards: list[ShardInfo], configs: list[str], default: str, metadata: dict
) -> str:
    """The card's YAML: ``metadata`` (license, language, task categories, ...) as given, then
    ``configs`` with one ``data_files`` entry per split the config has (``config_splits``).
    Every config is listed, one without rows by its empty shard, so every name loads."""
    lines = ["---"]
    for key, value in metadata.items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines += [f"- {_yaml_string(item)}" for item in value]
        else:
            lines.append(f"{key}: {_yaml_string(value)}")
    lines.append("configs:")
    for config in configs:
        lines.append(f"- config_name: {config}")
        if config == default:
            lines.append("  default: true")
        lines.append("  data_files:")
        for split, rows in config_splits(shards, config).items():
            lines.append(f"  - split: {split}")
            lines.append(f"    path: {_yaml_string(split_pattern(config, split, rows))}")
    lines += ["---", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the run directory
def run_name(run: int, fingerprint: str) -> str:
    """``run-00007-3f9a2c1e``: the run's number, then a fingerprint that tells apart runs of
    the same number (the caller derives it from what identifies the run)."""
    if not fingerprint or not fingerprint.isalnum():
        raise ValueError(f"a run fingerprint is letters and digits, not {fingerprint!r}")
    return f"run-{run:05d}-{fingerprint}"


def partial_directory(export_root: Path, name: str) -> Path:
    return export_root / f".{name}.partial"


def start_run(export_root: Path, name: str) -> Path:
    """A fresh hidden directory for the run called ``name``; refuses a run that already
    exists."""
    final = export_root / name
    if final.exists():
        raise FileExistsError(f"export run {name} already exists at {final}")
    partial = partial_directory(export_root, name)
    if partial.exists():
        shutil.rmtree(partial)  # a crashed attempt of this same run
    partial.mkdir(parents=True)
    return partial


def publish_run(export_root: Path, name: str, manifest: dict) -> Path:
    """Write the manifest, make every file read-only, and move the run into place."""
    partial = partial_directory(export_root, name)
    (partial / "manifest.json").write_bytes(
        orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    )
    for directory, _dirs, files in os.walk(partial):
        for file in files:
            os.chmod(Path(directory) / file, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    final = export_root / name
    os.rename(partial, final)
    return final


def abandon_run(export_root: Path, name: str) -> None:
    partial = partial_directory(export_root, name)
    if partial.exists():
        shutil.rmtree(partial, ignore_errors=True)
