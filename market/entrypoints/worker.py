"""``celery -A market.entrypoints.worker:celery worker`` (and ``beat``): the Celery app of an
app the factory builds from the environment's settings, so every task runs in that app's
context, on its one engine."""

from celery.signals import setup_logging

from market.app import create_app
from market.platform.logs import configure_logging
from market.platform.metrics import install_task_metrics
from market.platform.state import app_state

# Tasks run for minutes (a ranking run, an export) under their own time limits: no statement
# limit of a web request's.
_state = app_state(create_app({"request_statement_timeout_ms": 0}))
celery = _state.celery
install_task_metrics(_state.settings.worker_metrics_address)


@setup_logging.connect
def _log_like_the_web(**_signal):
    """Connected, this replaces Celery's own logging setup: the worker's and beat's lines go
    to stdout in SPRIG_LOG_FORMAT, like gunicorn's."""
    configure_logging(_state.settings.log_format, _state.settings.log_level)


# Now as well: what the worker says before it sets up logging (a warning) keeps the format.
_log_like_the_web()
