"""bench.soak's judgements, on made-up outcomes: what counts as lost, duplicated, hung, in a
fault's window, and growing memory. The soak itself is a benchmark (minutes), not a test."""

from __future__ import annotations

import collections

from bench.soak import FAULTS, Fault, MemorySampler, Outcome, fault_schedule, route_table, tally


def test_tally_finds_missing_and_duplicated_acknowledged_writes():
    stored = collections.Counter({"a": 1, "b": 2})
    assert tally(["a", "b", "c", "a"], stored) == {
        "acknowledged": 4,
        "acknowledged_twice": 1,
        "missing": 1,  # c
        "duplicated": 1,  # b
    }


def test_requests_due_in_a_fault_window_are_counted_apart_and_hangs_and_bare_5xx_show():
    fault = Fault("redis", started=100.0, recovered=102.0)
    outcomes = [
        Outcome("detail", 50.0, 10.0, 200),
        Outcome("detail", 60.0, 30.0, 200),
        Outcome("detail", 95.0, 6000.0, 0),  # due before the fault, cut off by it
        Outcome("detail", 101.0, 900.0, 503, retry_after=True),
        Outcome("detail", 111.0, 30_000.0, -1),  # hung, inside the 10 s after recovery
        Outcome("detail", 130.0, 5.0, 500),  # after the window: a bare 5xx in steady state
    ]
    row = route_table(outcomes, [fault])["detail"]
    assert row["faults"]["requests"] == 3
    assert row["faults"]["no_answer"] == 1
    assert row["faults"]["hung"] == 1
    assert row["faults"]["5xx"] == 1 and row["faults"]["5xx_without_retry_after"] == 0
    assert row["faults"]["error_rate"] == 1.0
    assert row["steady"]["requests"] == 3
    assert row["steady"]["5xx"] == 1
    assert row["steady"]["p50_ms"] == 10.0  # only answered, non-5xx requests have a latency


def test_each_fault_comes_once_when_quick_and_cycles_in_a_long_run():
    quick = fault_schedule(180, quick=True)
    assert [name for _at, name in quick] == list(FAULTS)
    assert all(0 < at < 180 for at, _name in quick)
    long = fault_schedule(1800, quick=False)
    assert len(long) > 2 * len(FAULTS)
    assert collections.Counter(name for _at, name in long).keys() == set(FAULTS)
    assert [at for at, _name in long] == sorted(at for at, _name in long)


def test_memory_is_flagged_only_when_it_keeps_growing_after_the_warm_up():
    sampler = MemorySampler(stack=None, services=None)
    sampler.samples["warming"] = [(t, 100.0 if t < 30 else 400.0, 1) for t in range(0, 600, 5)]
    sampler.samples["leaking"] = [(t, 100.0 + t, 1) for t in range(0, 600, 5)]
    sampler.samples["small noise"] = [(t, 10.0 + (t % 20), 1) for t in range(0, 600, 5)]
    # Restarted at 150 s: it starts small again and refills, which is not growth.
    sampler.samples["restarted"] = [
        (t, 400.0 if t < 300 else (100.0 if t < 330 else 400.0), 1) for t in range(0, 600, 5)
    ]
    report = sampler.report(warmed_up=30.0, restarts={"restarted": [300.0]})
    assert report["warming"]["flat"]
    assert not report["leaking"]["flat"]
    assert report["small noise"]["flat"]
    assert report["restarted"]["flat"] and report["restarted"]["incarnations_judged"] == 2


def test_memory_of_a_role_that_starts_more_processes_is_judged_per_process():
    sampler = MemorySampler(stack=None, services=None)
    # A pool refilling: from 4 to 12 backends of 12 MB each, none of them growing.
    sampler.samples["backends"] = [(t, 12.0 * (4 + t // 75), 4 + t // 75) for t in range(0, 600, 5)]
    # The same count, but every backend grows.
    sampler.samples["backends leaking"] = [
        (t, (12.0 + t / 5) * (4 + t // 75), 4 + t // 75) for t in range(0, 600, 5)
    ]
    report = sampler.report(warmed_up=30.0)
    refilling = report["backends"]
    assert refilling["flat"]
    assert refilling["last_mb"] > 1.25 * refilling["first_mb"] + 30  # the sum alone would flag it
    assert refilling["processes_last"] > refilling["processes_first"]
    assert refilling["per_process_first_mb"] == refilling["per_process_last_mb"] == 12.0
    assert not report["backends leaking"]["flat"]
