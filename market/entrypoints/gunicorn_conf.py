"""gunicorn settings: threads per worker so slow clients do not block a worker."""

import logging
import os

from market.platform.config import load_settings
from market.platform.logs import logging_config

bind = os.environ.get("SPRIG_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("SPRIG_WORKERS", "2"))
worker_class = "gthread"
threads = int(os.environ.get("SPRIG_THREADS", "8"))
timeout = 30
graceful_timeout = 10
errorlog = "-"
# Every line on stdout in SPRIG_LOG_FORMAT; the app writes the access line (market.access).
_settings = load_settings()
logconfig_dict = logging_config(_settings.log_format, _settings.log_level)
logging.captureWarnings(True)  # Python's warnings become log lines in that format too
# gunicorn answers a request line over this with its own HTML page; the app refuses URLs over
# 4 KiB itself (market.app.MAX_URL_BYTES) with a problem document, so this sits above that.
limit_request_line = 8190
# gunicorn's control socket defaults to one path per user; several servers on a host (tests,
# benchmarks) would overwrite each other's. Sprig does not use it.
control_socket_disable = True


def post_worker_init(worker) -> None:
    """Each worker builds its suggestion index as it starts, off the request path."""
    from market.suggestions.services import warm_up

    app = getattr(worker, "wsgi", None)
    if getattr(app, "extensions", None) is not None:  # the Flask app, not some other WSGI
        warm_up(app)
