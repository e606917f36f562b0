"""Backlogs an operator watches, read from the database at each metrics scrape (the same for
every process, so whichever answers reads them): usage marks the rollup has not consumed yet,
and when the ranking last recomputed scores."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from market.ranking.models import RankingRun
from market.usage.models import RollupDirty


class BacklogCollector:
    """A prometheus_client collector: its gauges are read when a scrape asks for them."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def collect(self):
        with self.engine.connect() as connection:
            pending = connection.execute(select(func.count()).select_from(RollupDirty)).scalar()
            last_ranked = connection.execute(select(func.max(RankingRun.started_at))).scalar()
        yield GaugeMetricFamily(
            "sprig_rollup_pending_marks",
            "Usage marks waiting for the rollup (the stats' lag; drained every minute).",
            value=pending,
        )
        ranked = GaugeMetricFamily(
            "sprig_ranking_last_run_timestamp_seconds",
            "When the last ranking run that recomputed scores started (Unix time; absent "
            "before the first).",
        )
        if last_ranked is not None:
            ranked.add_metric([], last_ranked.timestamp())
        yield ranked
