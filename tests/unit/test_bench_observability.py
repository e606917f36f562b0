"""The overhead bench's own logic: how a mode reaches the server, the ABBA order, the figures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.observability import (
    ACCESS_LOG,
    MODES,
    _assignments,
    _order,
    server_environment,
    summarize,
)


def test_a_mode_sets_and_unsets_variables_only_while_its_server_starts(monkeypatch):
    monkeypatch.setenv("SPRIG_ACCESS_LOG", "/var/log/before.log")
    monkeypatch.delenv("SPRIG_METRICS", raising=False)
    with server_environment({"SPRIG_ACCESS_LOG": "", "SPRIG_METRICS": "1"}, Path("/x")):
        assert "SPRIG_ACCESS_LOG" not in os.environ
        assert os.environ["SPRIG_METRICS"] == "1"
    assert os.environ["SPRIG_ACCESS_LOG"] == "/var/log/before.log"
    assert "SPRIG_METRICS" not in os.environ


def test_the_access_log_placeholder_becomes_the_runs_file(monkeypatch):
    monkeypatch.delenv("SPRIG_ACCESS_LOG", raising=False)
    with server_environment({"SPRIG_ACCESS_LOG": ACCESS_LOG}, Path("/tmp/run-1.log")):
        assert os.environ["SPRIG_ACCESS_LOG"] == "/tmp/run-1.log"


def test_modes_alternate_in_abba_order():
    assert [mode for r in range(4) for mode in _order(r)] == [
        "off", "on", "on", "off", "off", "on", "on", "off",
    ]  # fmt: skip


def test_overrides_are_key_value_pairs():
    assert _assignments(["SPRIG_METRICS=1", "SPRIG_LOG_FORMAT="]) == {
        "SPRIG_METRICS": "1",
        "SPRIG_LOG_FORMAT": "",
    }
    with pytest.raises(SystemExit):
        _assignments(["SPRIG_METRICS"])


def _catalog_total(requests: int, seconds: float, rates: list[float]) -> dict:
    return {"requests": requests, "errors": 0, "seconds": seconds, "ms": [1.0, 2.0, 3.0],
            "round_rates": rates}  # fmt: skip


def _ingest_run(events: int, seconds: float) -> dict:
    return {"events": events, "seconds": seconds, "events_per_s": events / seconds,
            "p50_ms": 10.0, "p99_ms": 50.0, "client_errors": {}}  # fmt: skip


def test_change_is_on_throughput_over_off_and_noise_the_spread_of_off_rounds():
    catalog = {
        "endpoints": ["browse"],
        "totals": {
            "off": {"browse": _catalog_total(2000, 2.0, [900.0, 1100.0])},
            "on": {"browse": _catalog_total(1800, 2.0, [900.0, 900.0])},
        },
    }
    ingest = {
        "runs": {
            "off": [_ingest_run(1000, 1.0), _ingest_run(1000, 1.0)],
            "on": [_ingest_run(1000, 2.0), _ingest_run(1000, 2.0)],
        }
    }
    rows = summarize(catalog, ingest)
    assert rows["catalog browse"]["off"]["rate"] == 1000.0
    assert rows["catalog browse"]["change"] == pytest.approx(-0.10)
    assert rows["catalog browse"]["noise"] == pytest.approx(0.20)
    assert rows["ingest events"]["change"] == pytest.approx(-0.50)
    assert rows["ingest events"]["noise"] == 0
    assert set(MODES) <= set(rows["ingest events"])
