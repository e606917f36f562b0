"""gunicorn settings: threads per worker so slow clients do not block a worker."""

import logging
import os
import signal
import sys
import tempfile
from pathlib import Path

from market.platform.config import load_settings
from market.platform.logs import logging_config, skip_unwritten_record_fields

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
skip_unwritten_record_fields()  # before the fork: every worker inherits it
# gunicorn answers a request line over this with its own HTML page; the app refuses URLs over
# 4 KiB itself (market.app.MAX_URL_BYTES) with a problem document, so this sits above that.
limit_request_line = 8190
# gunicorn's control socket defaults to one path per user; several servers on a host (tests,
# benchmarks) would overwrite each other's. Sprig does not use it.
control_socket_disable = True


# prctl(2): the signal the kernel sends this process when the process that forked it dies.
_PR_SET_PDEATHSIG = 1


def post_fork(server, worker) -> None:
    """A worker dies with its master. A master killed outright (SIGKILL, the OOM killer)
    leaves its workers orphaned: gunicorn's worker notices, but then finishes its requests
    and tears its interpreter down first, holding the listening socket all along, so new
    connections queue where nothing accepts them (clients hang) and a restarted master
    cannot bind the port (bench/soak.py measured 30 s and more on a loaded host). Killed by
    the kernel at once instead, the socket closes: clients are refused and retry, and the
    next master binds. Linux only; elsewhere gunicorn's own check remains."""
    if not sys.platform.startswith("linux"):
        return
    _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The master may have died between the fork and the prctl: then nothing would signal.
    if os.getppid() != server.pid:
        os._exit(0)


def when_ready(server) -> None:
    """The suggestion index is built here (or read from its snapshot), once, before the first
    worker is forked; each worker starts with it
    (``market.suggestions.services.build_before_fork``). A database not ready yet only costs
    that: each worker then builds its own, as it would without this."""
    from market.platform.db import make_engine
    from market.suggestions.services import build_before_fork

    engine = make_engine(_settings.database_url)
    try:
        build_before_fork(
            engine,
            _settings.index_snapshot_dir,
            _settings.index_snapshot_max_age_hours * 3600,
            run_writer=lambda write: _in_forked_child(server, write),
        )
    except Exception as error:  # whatever failed, each worker still builds its own
        server.log.warning("suggestion index not built before forking: %s", error)
    finally:
        engine.dispose()  # no connection of the master's may reach a worker
    _release_free_heap()


def _release_free_heap() -> None:
    """Hand back to the kernel the heap the index's build or catch-up freed, before the
    workers are forked. glibc keeps freed memory in the process (and raises its threshold for
    mapping large blocks apart once such a block is freed, so later large temporaries land in
    the heap too); pages kept so are inherited by every worker and counted in the host's
    memory for nothing. ``bench/index_snapshot.py --quick``, alternated twice: master and
    workers' PSS after a build 854-871 → 808-815 MiB, after a catch-up of 1,000 edits
    649-659 → 628-637. At a million sub-agents, where the index's arrays are most of it, 1-2%
    (one run against one the day before: 4,248 → 4,198 MiB after a build). Linux (glibc) only."""
    if not sys.platform.startswith("linux"):
        return
    libc = _libc()
    if hasattr(libc, "malloc_trim"):  # musl has none
        libc.malloc_trim(0)


def _libc():
    """The C library, for the calls Python does not wrap (Linux)."""
    import ctypes
    import ctypes.util

    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


# The signals gunicorn's master handles by waking its main loop.
_MASTER_SIGNALS = (
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGTTIN,
    signal.SIGTTOU,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGWINCH,
    signal.SIGCHLD,
)


def _in_forked_child(server, write) -> None:
    """Run ``write`` (the index snapshot's, 5-9 s at a million sub-agents) in a child of the
    master, which goes on to fork its workers meanwhile: the child reads the index's arrays
    copy-on-write, as the workers do, and copies nothing it only reads. It closes its copies of
    the listening sockets first, so a master stopped while it writes leaves no socket that
    queues connections nobody accepts, nor a port the next master cannot bind; gunicorn's
    signal handlers are the master's, not its own. The master's loop reaps it."""
    if os.fork():
        return
    try:
        for signum in _MASTER_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        for listener in server.LISTENERS:
            listener.close()
        write()
    except BaseException:
        logging.getLogger(__name__).exception("suggestion index snapshot writer failed")
    finally:
        os._exit(0)  # never back into gunicorn's code


def post_worker_init(worker) -> None:
    """Each worker takes over the master's suggestion index (or builds its own) as it
    starts, off the request path."""
    from market.suggestions.services import warm_up

    app = getattr(worker, "wsgi", None)
    if getattr(app, "extensions", None) is not None:  # the Flask app, not some other WSGI
        warm_up(app)


def on_starting(server) -> None:
    """Metrics from every worker add up at /metrics (prometheus_client's multiprocess mode):
    each process writes its samples to files in ``PROMETHEUS_MULTIPROC_DIR``, which must be set
    before a worker imports prometheus_client, so here, in the master, before any fork (an
    operator's directory, or a private one for this server). A previous server's files there
    (named ``<kind>_<pid>.db``) would add its workers' counts to this one's: those of processes
    no longer running go."""
    metrics_dir = Path(
        os.environ.get("PROMETHEUS_MULTIPROC_DIR") or tempfile.mkdtemp(prefix="sprig-metrics-")
    )
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    metrics_dir.mkdir(parents=True, exist_ok=True)
    for leftover in metrics_dir.glob("*.db"):
        pid = leftover.stem.rpartition("_")[2]
        if not (pid.isdigit() and _running(int(pid))):
            leftover.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def child_exit(server, worker) -> None:
    """A dead worker's live gauges (connections in use) leave the sums; its counters stay."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
