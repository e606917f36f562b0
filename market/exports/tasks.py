"""Celery tasks of reward exports."""

from __future__ import annotations

from market.exports.services import execute_run
from market.platform.celery_app import celery, task_engine
from market.platform.config import load_settings


@celery.task(name="sprig.export_rewards")
def export_rewards_task(run_id: int) -> dict:
    """Build and publish export run ``run_id`` (idempotent: a finished run is left alone)."""
    settings = load_settings()
    run = execute_run(
        task_engine(), run_id, settings.export_dir, settle_seconds=settings.export_settle_seconds
    )
    return {"run": run.id, "status": run.status, "error": run.error}
