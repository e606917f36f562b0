"""Which months of raw events must have a partition, and which may be dropped."""

from __future__ import annotations

from datetime import date, timedelta

from feedback.ingest import MAX_EVENT_AGE
from market.ranking.services import USAGE_WINDOW_DAYS
from market.usage.partitions import (
    MIN_RETENTION_DAYS,
    ROLLUP_READ_BACK,
    expired_months,
    is_partition,
    months_to_keep_ready,
    next_month,
    partition_name,
)


def test_the_months_made_ahead_cover_late_events_and_cross_the_year():
    assert months_to_keep_ready(date(2026, 12, 3)) == [
        date(2026, 11, 1),  # an event a week late still names November
        date(2026, 12, 1),
        date(2027, 1, 1),
        date(2027, 2, 1),
        date(2027, 3, 1),
    ]
    assert months_to_keep_ready(date(2027, 1, 20), months_ahead=1) == [
        date(2027, 1, 1),
        date(2027, 2, 1),
    ]
    assert next_month(date(2028, 1, 1)) == date(2028, 2, 1)
    assert partition_name(date(2027, 2, 1)) == "usage_event_y2027m02"


def partitions(*months: date) -> dict:
    return {m: (partition_name(m), next_month(m)) for m in months}


def test_a_month_goes_once_past_the_retention_and_no_mark_reads_it():
    months = partitions(date(2025, 1, 1), date(2025, 2, 1), date(2025, 3, 1))
    # February ended a day short of the retention: only January is old enough.
    today = date(2025, 3, 1) + timedelta(days=MIN_RETENTION_DAYS - 1)
    assert expired_months(months, today, MIN_RETENTION_DAYS, None) == [date(2025, 1, 1)]
    # A pending mark on 1 March reads cohorts back to 30 January: January stays too.
    assert expired_months(months, today, MIN_RETENTION_DAYS, date(2025, 3, 1)) == []
    # One reading back no further than January's end lets it go.
    first_free = date(2025, 2, 1) + ROLLUP_READ_BACK
    assert expired_months(months, today, MIN_RETENTION_DAYS, first_free) == [date(2025, 1, 1)]


def test_the_shortest_retention_outlasts_every_reader_of_raw_events():
    # The ranking's window, and a late event's cohorts (a week late, then 30 days back).
    assert MIN_RETENTION_DAYS > USAGE_WINDOW_DAYS
    assert timedelta(days=MIN_RETENTION_DAYS) > MAX_EVENT_AGE + ROLLUP_READ_BACK


def test_the_schema_check_knows_the_partitions_and_nothing_else():
    """``alembic check`` leaves out what the beat tasks make (months and the default), never
    the partitioned table itself nor a look-alike."""
    assert is_partition("usage_event_y2026m12") and is_partition("usage_event_default")
    for name in ("usage_event", "usage_event_y2026m1", "large_usage_event_y2026m12", "feedback"):
        assert not is_partition(name)
