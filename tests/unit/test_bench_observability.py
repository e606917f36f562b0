"""The overhead bench's own logic: how a mode reaches the server, and its figures from slices."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import interleave
from bench.observability import (
    ACCESS_LOG,
    _assignments,
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


def test_overrides_are_key_value_pairs():
    assert _assignments(["SPRIG_METRICS=1", "SPRIG_LOG_FORMAT="]) == {
        "SPRIG_METRICS": "1",
        "SPRIG_LOG_FORMAT": "",
    }
    with pytest.raises(SystemExit):
        _assignments(["SPRIG_METRICS"])


def _alternated(off_rates: list[float], on_rates: list[float]) -> dict:
    """A workload's OFF and ON slices as ``interleave`` measures them (OFF around each ON)."""
    pairs = zip(on_rates, off_rates[1:], strict=True)
    rates = iter([off_rates[0], *(rate for pair in pairs for rate in pair)])
    return interleave.interleave(
        lambda name, seconds: interleave.SliceResult(
            name, 10, 0, seconds, [1.0, 2.0, 3.0], completed=next(rates) * seconds
        ),
        "off", ["on"], rounds=len(on_rates), slice_seconds=1.0, warmup_rounds=0,
    )  # fmt: skip


def test_change_is_the_median_on_slice_over_the_off_slices_around_it():
    # OFF steady at 1000/s, ON at 900 in most slices and 500 in one: the median says -10%.
    steady = _alternated([1000.0] * 6, [900.0, 900.0, 500.0, 900.0, 900.0])
    # A machine that slows down halfway moves OFF and ON alike: still -10%.
    drifting = _alternated(
        [1000.0, 1000.0, 1000.0, 500.0, 500.0, 500.0], [900.0, 900.0, 675.0, 450.0, 450.0]
    )
    rows = summarize({"catalog browse": steady, "ingest events": drifting})
    assert rows["catalog browse"]["change"] == pytest.approx(-0.10)
    assert rows["catalog browse"]["off"]["rps"] == pytest.approx(1000.0)
    assert rows["ingest events"]["change"] == pytest.approx(-0.10)
    assert rows["catalog browse"]["noisy"] is False


def test_a_run_whose_slices_disagree_is_too_noisy_to_judge():
    wild = _alternated([1000.0] * 6, [400.0, 1500.0, 900.0, 300.0, 1400.0])
    assert summarize({"catalog tree": wild})["catalog tree"]["noisy"] is True
