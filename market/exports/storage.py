"""Where reward-export runs are kept: a local folder (the default) or S3-compatible storage.

A run is always built on local disk (``feedback.dataset_files``: a hidden partial directory,
renamed into place when complete). Kept in a local folder, that folder is the run. Kept in
object storage (``SPRIG_EXPORT_STORAGE=s3://bucket/prefix``), it is built in a private
temporary directory, uploaded file by file with ``manifest.json`` last, and the temporary copy
is deleted: nothing stays on the machine that built it, so web and worker need no shared
volume, and a training cluster reads the bucket itself. The run's row is marked succeeded only
after the upload, and a reader of the bucket takes a run to be complete only once its manifest
is there, so a half-uploaded run is never handed out.

The object store is reached through fsspec (``s3fs`` for ``s3://``), the same layer ``datasets``
loads from; :meth:`RunStorage.storage_options` is what both are given. Nothing here depends on
which S3 server answers (MinIO in compose, AWS, or any other).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import fsspec
import orjson

log = logging.getLogger(__name__)
MANIFEST = "manifest.json"


def is_remote(location: str) -> bool:
    """A URL of an object store (``s3://…``) rather than a local path."""
    return "://" in location and not location.startswith("file://")


@dataclass(frozen=True)
class RunStorage:
    """A destination for runs: a local folder, or an object-store URL with how to reach it."""

    root: str
    endpoint_url: str = ""
    key_id: str = ""
    secret: str = field(default="", repr=False)

    @classmethod
    def from_settings(cls, settings) -> RunStorage:
        if not settings.export_storage:
            return cls(settings.export_dir)
        if not is_remote(settings.export_storage):
            raise ValueError(
                "SPRIG_EXPORT_STORAGE is an object-store URL such as s3://bucket/prefix "
                f"(empty: the local SPRIG_EXPORT_DIR), not {settings.export_storage!r}"
            )
        return cls(
            settings.export_storage.rstrip("/"),
            endpoint_url=settings.export_storage_endpoint,
            key_id=settings.export_storage_key_id,
            secret=settings.export_storage_secret,
        )

    @property
    def remote(self) -> bool:
        return is_remote(self.root)

    def storage_options(self) -> dict:
        """fsspec's options for this store: what ``datasets.load_dataset(...,
        storage_options=…)`` takes too. Empty credentials leave them to the client's own
        lookup (environment, instance role)."""
        options: dict = {}
        if self.key_id or self.secret:
            options.update(key=self.key_id, secret=self.secret)
        if self.endpoint_url:
            options["endpoint_url"] = self.endpoint_url
        return options

    def _filesystem(self):
        filesystem, _path = fsspec.core.url_to_fs(self.root, **self.storage_options())
        return filesystem

    @contextmanager
    def building(self) -> Iterator[Path]:
        """The local folder a run is built in: the export folder itself, or (object storage) a
        private temporary directory deleted afterwards, whatever happened."""
        if not self.remote:
            yield Path(self.root)
            return
        staging = Path(tempfile.mkdtemp(prefix="sprig-export-"))
        try:
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def location(self, name: str) -> str:
        """Where run ``name`` is kept: its folder, or its URL in the object store."""
        return f"{self.root}/{name}" if self.remote else str(Path(self.root) / name)

    def kept_manifest(self, name: str) -> dict | None:
        """The manifest of run ``name`` if the run is kept whole (its manifest is written
        last, locally and in the object store), else None."""
        try:
            with self.open(self.location(name), MANIFEST) as file:
                return orjson.loads(file.read())
        except FileNotFoundError:
            return None

    def keep(self, built: Path) -> str:
        """Keep the complete run ``built`` (a folder from :meth:`building`); its location."""
        if not self.remote:
            return str(built)
        filesystem = self._filesystem()
        location = self.location(built.name)
        if filesystem.exists(location):
            filesystem.rm(location, recursive=True)  # a crashed upload of this same run
        files = sorted(p for p in built.rglob("*") if p.is_file() and p.name != MANIFEST)
        for path in [*files, built / MANIFEST]:
            filesystem.put_file(str(path), f"{location}/{path.relative_to(built).as_posix()}")
        return location

    def discard(self, name: str) -> None:
        """Remove whatever an unfinished upload of run ``name`` left in the object store. Never
        raises: a run that failed is marked failed even while the store is away (what is left
        has no manifest, so no reader takes it for a run)."""
        if not self.remote:
            return
        location = self.location(name)
        try:
            filesystem = self._filesystem()
            if filesystem.exists(location):
                filesystem.rm(location, recursive=True)
        except Exception as error:
            log.warning("could not remove the unfinished upload %s: %s", location, error)

    def open(self, location: str, path: str) -> IO[bytes]:
        """Read one file of the run at ``location`` (a folder or an object-store URL);
        FileNotFoundError when it is not there."""
        if not is_remote(location):
            return (Path(location) / path).open("rb")
        return fsspec.open(f"{location}/{path}", "rb", **self.storage_options()).open()
