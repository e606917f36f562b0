"""The overhead bench's own logic: how a mode reaches the server, and its figures from slices."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import interleave
from bench.observability import (
    ACCESS_LOG,
    _assignments,
    added_cost,
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


def _alternated(
    off_rates: list[float], on_rates: list[float], cpu_us: tuple[float, float] = (100.0, 100.0)
) -> dict:
    """A workload's OFF and ON slices as ``interleave`` measures them (OFF around each ON),
    each request costing the server ``cpu_us`` (OFF's, ON's) of CPU."""
    pairs = zip(on_rates, off_rates[1:], strict=True)
    rates = iter([off_rates[0], *(rate for pair in pairs for rate in pair)])

    def run_slice(name: str, seconds: float) -> interleave.SliceResult:
        completed = next(rates) * seconds
        cost = cpu_us[name == "on"] / 1e6
        return interleave.SliceResult(
            name, 10, 0, seconds, [1.0, 2.0, 3.0], completed=completed,
            cpu_seconds=completed * cost,
        )  # fmt: skip

    return interleave.interleave(
        run_slice, "off", ["on"], rounds=len(on_rates), slice_seconds=1.0, warmup_rounds=0
    )


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


def test_what_on_adds_is_its_cpu_in_process_over_what_a_served_request_costs():
    # In process a cached page costs 200 µs OFF and 230 µs ON; served by gunicorn, 800 µs.
    rows = summarize(
        {
            "catalog browse": _alternated([1000.0] * 4, [1000.0] * 3, cpu_us=(800.0, 800.0)),
            "app browse": _alternated([5000.0] * 4, [4350.0] * 3, cpu_us=(200.0, 230.0)),
            "ingest events": _alternated([9e4] * 4, [9e4] * 3, cpu_us=(15.0, 15.6)),
        }
    )
    assert rows["app browse"]["cpu_change"] == pytest.approx(200 / 230 - 1, abs=1e-4)
    added = added_cost(rows)
    assert added["catalog browse"]["added_us"] == pytest.approx(30.0, abs=0.1)
    assert added["catalog browse"]["served_us"] == pytest.approx(800.0)
    assert added["catalog browse"]["share"] == pytest.approx(30 / 800, abs=1e-4)
    # Ingest has no in-process twin: its server's own cost ratio.
    assert added["ingest events"]["share"] == pytest.approx(1 - 15 / 15.6, abs=1e-4)
