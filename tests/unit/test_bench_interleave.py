"""The interleaved benches' statistics: slice ratios against the baselines around them, their
median and spread, and when a comparison is too noisy to judge (no servers: fake slices)."""

from __future__ import annotations

import argparse
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.interleave import (
    Interleaved,
    SlicedClients,
    SliceResult,
    add_arguments,
    bracketed_ratios,
    interleave,
    judge,
    paired_ratios,
    quartiles,
    rounds_for,
    schedule,
    slice_seconds,
)
from bench.loadgen import KeepAlive, Request, Result, paced


def test_quartiles_interpolate_between_ranks_and_one_value_is_all_three():
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 3.0, 4.0)
    assert quartiles([4.0, 1.0, 3.0, 2.0]) == (1.75, 2.5, 3.25)
    assert quartiles([0.7]) == (0.7, 0.7, 0.7)
    with pytest.raises(ValueError):
        quartiles([])


def test_a_measured_slice_is_compared_with_the_mean_of_the_baselines_around_it():
    sequence = [("B", 1000.0), ("A", 600.0), ("B", 1400.0), ("A", 300.0), ("B", 600.0)]
    ratios, steps = bracketed_ratios(sequence, "B")["A"]
    assert ratios == pytest.approx([0.5, 0.3])
    assert steps == pytest.approx([400 / 1200, 800 / 1000])


def test_a_slice_at_an_end_uses_the_one_baseline_beside_it():
    ratios = bracketed_ratios([("A", 50.0), ("B", 100.0), ("C", 20.0)], "B")
    assert ratios == {"A": ([0.5], [0.0]), "C": ([0.2], [0.0])}
    with pytest.raises(ValueError):
        bracketed_ratios([("A", 1.0)], "B")


def test_the_median_ignores_a_few_slices_spoiled_by_a_passing_load():
    steady = [0.50, 0.52, 0.49, 0.51, 0.50, 0.48, 0.52, 0.50]
    spoiled = [*steady[:6], 0.15, 1.4]  # a hog started and stopped inside two slices
    judgement = judge(spoiled, [0.02] * 8)
    assert judgement.median == pytest.approx(0.50)
    assert not judgement.noisy
    assert judgement.verdict == "steady"
    assert judgement.figures()["ratio"] == 0.5


def test_a_wide_spread_of_slice_ratios_is_too_noisy_to_judge():
    judgement = judge([0.3, 0.5, 0.7, 0.9], [0.0] * 4, threshold=0.2)
    assert judgement.q1 == pytest.approx(0.45)
    assert judgement.q3 == pytest.approx(0.75)
    assert judgement.spread == pytest.approx(0.3 / 0.6)
    assert judgement.noisy
    assert judgement.verdict == "too noisy to judge"


def test_baselines_that_keep_moving_across_slices_are_too_noisy_to_judge():
    ratios = [0.50, 0.51, 0.50, 0.49]
    assert not judge(ratios, [0.05, 0.1, 0.1, 0.05], threshold=0.2).noisy
    assert judge(ratios, [0.3, 0.4, 0.1, 0.5], threshold=0.2).noisy


def test_paired_ratios_skip_rounds_without_a_denominator():
    assert paired_ratios([2.0, 3.0, 4.0], [1.0, 0.0, 2.0]) == [2.0, 2.0]


def test_the_schedule_brackets_every_slice_and_rotates_the_order():
    assert schedule("B", ["x", "y", "z"], 2) == [
        "B", "x", "B", "y", "B", "z", "B",
        "y", "B", "z", "B", "x", "B",
    ]  # fmt: skip
    assert rounds_for(3.0, 0.5) == 6
    assert rounds_for(1.0, 1.0) == 3  # never fewer than a median and a spread need


def test_interleave_judges_each_workload_against_the_baselines_around_its_slices():
    # The machine runs at half speed for five slices: measured one after the other, x or y
    # would look twice as slow; here only the slices beside the change are off, and the
    # median passes them by.
    calls = []

    def run_slice(name: str, seconds: float) -> Result:
        slow = 8 <= len(calls) <= 12  # after the 4 warm-up slices
        speed = {"B": 1000.0, "x": 500.0, "y": 250.0}[name] * (0.5 if slow else 1.0)
        calls.append(name)
        requests = int(speed * seconds)
        latency = 1000.0 / speed
        return Result(name, requests, 0, seconds, [latency] * requests, [latency / 2] * requests)

    runs = interleave(run_slice, "B", ["x", "y"], rounds=6, slice_seconds=1.0, threshold=0.2)
    assert len(calls) == 4 + 25
    assert calls[:4] == ["B", "x", "B", "y"]  # warm-up, not counted
    assert runs["B"].throughput is None
    assert len(runs["x"].slices) == 6
    assert runs["x"].throughput.median == pytest.approx(0.5)
    assert runs["y"].throughput.median == pytest.approx(0.25)
    assert runs["y"].latency.median == pytest.approx(4.0)
    figures = runs["x"].figures()
    assert figures["ratio"] == 0.5
    assert figures["slices"] == 6
    assert figures["server_p99_ms"] is not None
    assert isinstance(figures["noisy"], bool)


def test_a_slice_credits_the_share_of_a_request_running_at_its_end():
    first = SliceResult("x", 3, 0, 0.5, [100.0] * 3, completed=2.5)
    second = SliceResult("x", 5, 1, 0.5, [50.0] * 5, completed=5.0, error_kinds={"HTTP 500": 1})
    assert first.rps == 5.0
    run = Interleaved("x", [first, second])
    assert run.rps == 7.5
    assert run.figures()["error_kinds"] == {"HTTP 500": 1}


@contextmanager
def serving(answer, idle_timeout: float | None = None):
    """A tiny HTTP/1.1 keep-alive server in a thread; ``answer(path)`` gives each GET's status,
    Server-Timing and extra headers; it closes a connection idle for ``idle_timeout``
    seconds. Yields its port."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = idle_timeout

        def do_GET(self):
            status, server_ms, headers = answer(self.path)
            self.send_response(status)
            self.send_header("Server-Timing", f"app;dur={server_ms}")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def local_server():
    """200 with a Server-Timing header, 404 under /missing, a cache hit under /cached; it
    records the paths asked for."""
    seen: list[str] = []

    def answer(path):
        seen.append(path)
        cached = {"X-Sprig-Cache": "hit"} if path.startswith("/cached") else {}
        return (404 if path.startswith("/missing") else 200), 1.5, cached

    with serving(answer) as port:
        yield port, seen


def test_sliced_clients_drive_one_workload_per_slice_and_read_server_time(local_server):
    port, seen = local_server
    workloads = {"ok": ["/a", "/b"], "missing": ["/missing"]}
    with SlicedClients("127.0.0.1", port, workloads, clients=2) as pool:
        ok = pool.run_slice("ok", 0.2)
        missing = pool.run_slice("missing", 0.2)
    assert ok.completed > 0 and ok.rps > 0
    assert ok.errors == 0
    assert set(ok.server_ms) == {1.5}
    assert missing.error_kinds == {"HTTP 404": missing.errors}
    assert missing.errors == len(missing.latencies_ms) > 0
    assert set(seen) == {"/a", "/b", "/missing"}


def test_answers_from_the_read_cache_are_counted_and_reported_as_a_share(local_server):
    port, _seen = local_server
    workloads = {"health": ["/health"], "pages": ["/cached/a", "/fresh/b"]}
    with SlicedClients("127.0.0.1", port, workloads, clients=2) as pool:
        runs = interleave(
            pool.run_slice, "health", ["pages"], rounds=2, slice_seconds=0.2, threshold=0.2
        )
    pages = runs["pages"]
    assert 0 < pages.cache_hits < len(pages.latencies_ms)
    share = pages.figures()["cache_hit_share"]
    assert share == round(pages.cache_hits / len(pages.latencies_ms), 3)
    assert 0.2 < share < 0.8  # two paths drawn at random, one of them cached
    assert "cache_hit_share" not in runs["health"].figures()


def test_in_order_clients_send_each_request_of_their_share_before_repeating(local_server):
    port, seen = local_server
    paths = [f"/event-batch/{i}" for i in range(6)]
    with SlicedClients("127.0.0.1", port, {"batches": paths}, clients=2, in_order=True) as pool:
        result = pool.run_slice("batches", 0.2)
    assert set(seen) == set(paths)
    # Each client's share (every second batch) went out in order before any came again.
    for share in (paths[0::2], paths[1::2]):
        sent = [path for path in seen if path in share]
        assert sent[: len(share)] == share
    assert result.error_kinds["ran out of requests: sent again"] > 0


def test_slice_length_and_noise_threshold_flags_refuse_what_is_not_positive():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    add_arguments(parser)
    args = parser.parse_args(["--quick"])
    assert slice_seconds(args) == 0.5
    assert args.noise_threshold == 0.2
    assert slice_seconds(parser.parse_args(["--slice-seconds", "2"])) == 2.0
    for flag in ("--slice-seconds", "--noise-threshold"):
        with pytest.raises(SystemExit):
            parser.parse_args([flag, "0"])


@pytest.fixture
def slow_server():
    """A server that takes 40 ms a request, one request at a time per connection."""

    def answer(_path):
        time.sleep(0.04)
        return 200, 40.0, {}

    with serving(answer) as port:
        yield port


def test_paced_arrivals_that_outrun_the_server_count_their_wait_from_the_schedule(slow_server):
    # One connection, arrivals at 100 a second for half a second, 40 ms each: the connection can
    # answer 25 a second, so most requests go out late and the backlog grows through the run.
    # Timed from when each was sent, every latency would be about 40 ms; from its scheduled
    # time, the last ones have waited over a second.
    result = paced(
        "slow", "127.0.0.1", slow_server, ["/x"], rate=100, duration=0.5, clients=1, connections=1
    )
    assert result.requests > 25  # every arrival is sent, late or not
    assert result.late > result.requests // 2
    assert set(result.server_ms) == {40.0}
    assert result.p99 > 300
    assert result.errors == 0


def test_paced_arrivals_the_server_keeps_up_with_are_not_late(slow_server):
    # Eight connections in two processes, each with an arrival every two seconds on average:
    # an arrival finds its connection busy only when it follows the last within 40 ms (2%).
    result = paced(
        "slow", "127.0.0.1", slow_server, ["/x"], rate=4, duration=2.0, clients=2, connections=4
    )
    assert 0 < result.requests < 40  # about eight
    assert result.late < result.requests / 2
    assert result.p50 < 200


def test_a_get_on_a_connection_the_server_closed_while_idle_is_sent_again_once():
    with serving(lambda _path: (200, 1.0, {}), idle_timeout=0.2) as port:
        connection = KeepAlive("127.0.0.1", port, 5.0, {})
        assert connection.send(Request("/a")).status == 200
        time.sleep(0.5)  # the server closes the idle connection meanwhile
        again = connection.send(Request("/b"))
        assert again is not None and again.status == 200
        assert connection.errors == {}
        time.sleep(0.5)
        # A POST is never sent twice: the closed connection is an error.
        assert connection.send(Request("/c", method="POST", body="x")) is None
        assert sum(connection.errors.values()) == 1
        connection.close()
