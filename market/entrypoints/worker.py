"""``celery -A market.entrypoints.worker:celery worker`` (and ``beat``): the Celery app of an
app the factory builds from the environment's settings, so every task runs in that app's
context, on its one engine."""

from market.app import create_app
from market.platform.metrics import install_task_metrics
from market.platform.state import app_state

state = app_state(create_app())
celery = state.celery
install_task_metrics(state.settings.worker_metrics_address)
