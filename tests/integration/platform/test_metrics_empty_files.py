"""A scrape in multiprocess mode survives a process's metrics file that is still empty:
prometheus_client creates the file before it sizes it, and a worker killed in between leaves it
empty for good. The scrape reports every other process's samples instead of failing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from prometheus_client import CollectorRegistry, generate_latest, multiprocess

from market.platform.metrics import every_process_registry

WRITER = """
from prometheus_client import Counter
Counter("sprig_test_jobs", "Jobs done.").inc(3)
"""


def test_an_empty_process_file_leaves_the_others_scraped(tmp_path):
    # One real process's samples, written the library's own way.
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", WRITER], env=env, check=True, timeout=60)
    # Another process created its file and was killed before sizing it.
    (tmp_path / "histogram_99999.db").touch()

    plain = CollectorRegistry()
    multiprocess.MultiProcessCollector(plain, path=str(tmp_path))
    with pytest.raises(Exception, match="unpack"):
        generate_latest(plain)  # the library alone fails the whole scrape

    registry = every_process_registry(str(tmp_path))
    assert registry.get_sample_value("sprig_test_jobs_total") == 3.0
    assert b"sprig_test_jobs_total 3.0" in generate_latest(registry)
