"""A real gunicorn serving the app, for tests that need what only separate processes show:
concurrent workers racing the same write, gunicorn's own request-line limit.

It listens on 127.0.0.1 only, with the production config (``market.entrypoints.gunicorn_conf``)
and the app factory gunicorn serves in production; the test's settings come in as ``SPRIG_*``
variables, exactly as an operator would give them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests

# The live child processes of a pid (gunicorn's workers), read from /proc: the benches' walk.
from bench.servers import live_children as children

REPO = Path(__file__).resolve().parents[1]
API = "/api/v1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Gunicorn:
    process: subprocess.Popen
    base: str  # http://127.0.0.1:<port>
    log_path: Path

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


def start(
    settings: dict[str, str], log_path: Path, *, workers: int = 1, startup_seconds: float = 60
) -> Gunicorn:
    """Start gunicorn with these ``SPRIG_*`` settings and ``workers`` workers; return once every
    worker is up and the API answers (a failed start, or none within ``startup_seconds``,
    raises with the log's tail)."""
    port = free_port()
    env = {
        **os.environ,
        "SPRIG_WORKERS": str(workers),
        "SPRIG_LOG_LEVEL": "WARNING",
        # The master's index snapshot beside the log, not in the repository's var/.
        "SPRIG_INDEX_SNAPSHOT_DIR": str(log_path.parent / "index"),
        **settings,
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("gunicorn")),
                "-c",
                "python:market.entrypoints.gunicorn_conf",
                "--bind",
                f"127.0.0.1:{port}",
                "--no-control-socket",
                "market.app:create_app()",
            ],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = Gunicorn(process, f"http://127.0.0.1:{port}", log_path)
    deadline = time.monotonic() + startup_seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, server.log_tail()
        with contextlib.suppress(requests.RequestException):
            answered = requests.get(f"{server.base}{API}/health", timeout=2).status_code == 200
            if answered and len(children(process.pid)) == workers:
                return server
        time.sleep(0.1)
    stop(server)
    raise AssertionError("gunicorn did not come up:\n" + server.log_tail())


def stop(server: Gunicorn) -> None:
    """SIGTERM, then SIGKILL after 15 s; workers orphaned by a master that died first too."""
    workers = children(server.process.pid)
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(10)
    for pid in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
