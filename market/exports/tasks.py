"""Celery tasks of reward exports."""

from __future__ import annotations

from celery import shared_task

from market.exports.services import execute_run
from market.exports.storage import RunStorage
from market.platform.state import app_state


@shared_task(name="sprig.export_rewards")
def export_rewards_task(run_id: int) -> dict:
    """Build and publish export run ``run_id`` (idempotent: a finished run is left alone)."""
    state = app_state()
    run = execute_run(
        state.engine,
        run_id,
        RunStorage.from_settings(state.settings),
        settle_seconds=state.settings.export_settle_seconds,
    )
    return {"run": run.id, "status": run.status, "error": run.error}
