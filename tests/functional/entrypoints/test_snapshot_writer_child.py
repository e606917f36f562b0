"""The suggestion index snapshot is written by a child of the gunicorn master
(``gunicorn_conf._in_forked_child``), which may still be writing when its master stops. It must
then hold no copy of the master's listening socket, or the next master could not bind the port
and connections would queue where nothing accepts them; and the master's signal handlers,
which it inherits, must not run in it."""

from __future__ import annotations

import os
import signal
import socket
import time
from types import SimpleNamespace

from market.entrypoints import gunicorn_conf


def ended(pid: int, seconds: float = 10.0) -> int | None:
    """The child's wait status once it has ended, or None (it is then killed) if it has not
    within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def test_a_writer_still_writing_holds_neither_the_port_nor_the_masters_signal_handlers():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    writing, release = os.pipe(), os.pipe()
    handled, writers = [], []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: handled.append(signum))

    def write() -> None:  # a snapshot being written, until the test lets it finish
        os.write(writing[1], f"{os.getpid():>16}".encode())
        os.read(release[0], 1)

    try:
        gunicorn_conf._in_forked_child(SimpleNamespace(LISTENERS=[listener]), write)
        writer = int(os.read(writing[0], 16))
        writers.append(writer)
        assert writer != os.getpid()
        # The master stops; the next one binds the same port while the writer still writes.
        listener.close()
        with socket.create_server(("127.0.0.1", port)) as next_master:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                accepted, _address = next_master.accept()
                accepted.close()
            # A stop signal ends the writer as it would any process, not through the master's
            # handler (which would send it back into gunicorn's loop).
            os.kill(writer, signal.SIGTERM)
            status = ended(writer)
        assert (
            status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
        )
        assert handled == []

        # A writer that finishes leaves with status 0, without running the master's code after.
        gunicorn_conf._in_forked_child(SimpleNamespace(LISTENERS=[]), write)
        writer = int(os.read(writing[0], 16))
        writers.append(writer)
        os.write(release[1], b"x")
        status = ended(writer)
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        for pid in writers:  # one a failed assertion left behind
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        signal.signal(signal.SIGTERM, previous)
        listener.close()
        for descriptor in (*writing, *release):
            os.close(descriptor)
