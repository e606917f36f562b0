"""Found by bench/soak.py: a gunicorn master killed outright left its workers running for
30 s and more on a loaded host, holding the port (clients hung, a new master could not bind).
Now the kernel kills a worker when its master dies (gunicorn_conf.post_fork), so the port is
free at once, whatever the worker is doing."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import requests

from market.platform.migrate import upgrade
from tests import gunicorn_server as gunicorn
from tests.gunicorn_server import API, children


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def test_workers_die_with_a_killed_master_and_free_the_port(tmp_path):
    url = f"sqlite:///{tmp_path / 'sprig.db'}"
    upgrade(url)
    settings = {"SPRIG_DATABASE_URL": url, "SPRIG_THREADS": "2", "SPRIG_SECRET_KEY": "orphans"}
    served = gunicorn.start(settings, tmp_path / "gunicorn.log", workers=1)
    workers = children(served.process.pid)
    try:
        assert requests.get(f"{served.base}{API}/health", timeout=10).status_code == 200
        # Frozen, as a worker starved of CPU or stuck in a request is: gunicorn's own check
        # (the worker noticing its new parent) never runs; only the kernel's signal reaches it.
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)
        os.kill(served.process.pid, signal.SIGKILL)
        served.process.wait(10)
        # Without the kernel's signal a stopped orphan never goes, however long we wait: the
        # bound only covers a loaded host's scheduling, so it can be generous.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(_gone(pid) for pid in workers):
            time.sleep(0.05)
        assert all(_gone(pid) for pid in workers), gunicorn.Gunicorn.log_tail(served)
        port = int(served.base.rsplit(":", 1)[1])
        # What a restarted master does first. The kernel releases the dead workers' sockets
        # a moment after they go; a stopped orphan would hold the port for ever.
        while True:
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
            time.sleep(0.1)
    finally:
        gunicorn.stop(served)
