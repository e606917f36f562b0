"""bench.ingest_harness: the event benchmarks send what the endpoint accepts, in the amounts
they report (the figures of bench/ingest.py, bench/rollup.py and bench/ingest_profile.py rest
on it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bench.ingest_harness import EventMaker, build_batches
from feedback.ingest import parse_batch


def test_every_generated_event_is_accepted_by_the_ingest_parser():
    maker = EventMaker(3, users=[1, 2, 3], targets=[(10, 100), (11, 110)], span=86_400)
    bodies, per_subagent = build_batches(maker, 2_500, duplicate_share=0.05, batch=1000)
    events = [event for body, _, _ in bodies for event in json.loads(body)["events"]]
    accepted, rejected = parse_batch(events, datetime.now(UTC))
    assert rejected == [] and len(accepted) == len(events)
    assert {e["subagent_id"] for e in events} == {10, 11}
    assert sum(per_subagent.values()) == 2_500


def test_batches_hold_the_new_events_asked_for_plus_about_five_percent_resends():
    maker = EventMaker(4, users=[1], targets=[(10, 100)], span=3_600)
    bodies, _ = build_batches(maker, 10_000, duplicate_share=0.05, batch=1000)
    fresh = sum(b[1] for b in bodies)
    resent = sum(b[2] for b in bodies)
    ids = [e["event_id"] for body, _, _ in bodies for e in json.loads(body)["events"]]
    assert fresh == len(set(ids)) == 10_000
    assert len(ids) == fresh + resent and 0.03 < resent / fresh < 0.07
    assert all(len(json.loads(body)["events"]) <= 1000 for body, _, _ in bodies)
