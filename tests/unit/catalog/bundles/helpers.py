"""Shared by the bundle tests: a small valid bundle, zips built by hand, a refusal check."""

from __future__ import annotations

import io
import json
import random
import warnings
import zipfile

import pytest

from market.catalog.bundles import Bundle, bundle_from_json
from market.catalog.bundles.limits import BundleError

BASE_MANIFEST = {"name": "Water buddy", "entry": "index.html"}
BASE_FILES = {"index.html": "<!doctype html>\n<script src='js/app.js'></script>\n"}


def body(files: dict | None = None, **manifest) -> dict:
    return {"manifest": {**BASE_MANIFEST, **manifest}, "files": dict(files or BASE_FILES)}


def make(files: dict | None = None, **manifest) -> Bundle:
    return bundle_from_json(body(files, **manifest))


def rejects(fn, *args, code: str, status: int = 422, **kwargs) -> BundleError:
    with pytest.raises(BundleError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert (err.code, err.status) == (code, status), err.errors
    assert err.detail and err.errors
    assert all({"location", "message", "code"} <= e.keys() for e in err.errors)
    return err


def zip_bytes(
    entries: list[tuple[str | zipfile.ZipInfo, bytes | str]],
    compression: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # duplicate names are deliberate
        with zipfile.ZipFile(buf, "w", compression) as zf:
            for name, data in entries:
                zf.writestr(name, data)
    return buf.getvalue()


def manifest_entry(**manifest) -> tuple[str, str]:
    return ("manifest.json", json.dumps({**BASE_MANIFEST, **manifest}))


def valid_zip(*extra: tuple[str | zipfile.ZipInfo, bytes | str], **manifest) -> bytes:
    return zip_bytes([manifest_entry(**manifest), *BASE_FILES.items(), *extra])


def wordy_text(n_bytes: int, seed: int = 0) -> str:
    """Text that deflates only ~5-8x, like real code."""
    rnd = random.Random(seed)
    vocab = ["const", "water", "glass", "total", "return", "items", "sleep", "=", ";", "(", ")"]
    out, size = [], 0
    while size < n_bytes:
        line = " ".join(rnd.choice(vocab) for _ in range(10)) + f" {rnd.randrange(10**9)}\n"
        out.append(line)
        size += len(line)
    return "".join(out)
