"""The container health-check command: a URL answering 2xx, a file changed recently."""

from __future__ import annotations

import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from market.entrypoints.healthcheck import main


class _Probe(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/readyz" else 503)
        self.end_headers()

    def log_message(self, *_args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Probe)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_url_is_healthy_only_on_2xx(server, capsys):
    assert main(["url", f"{server}/readyz"]) == 0
    assert main(["url", f"{server}/down"]) == 1
    assert "answered 503" in capsys.readouterr().err


def test_url_unreachable_is_unhealthy(capsys):
    assert main(["url", "http://127.0.0.1:9/readyz"]) == 1
    assert "unreachable" in capsys.readouterr().err


def test_a_recently_changed_file_is_fresh_and_an_old_one_stale(tmp_path, capsys):
    schedule = tmp_path / "celerybeat-schedule"
    assert main(["fresh", str(schedule), "600"]) == 1  # beat never wrote it
    stored = tmp_path / "celerybeat-schedule.db"  # the suffix some dbm stores add
    stored.write_bytes(b"x")
    assert main(["fresh", str(schedule), "600"]) == 0
    an_hour_ago = time.time() - 3600
    os.utime(stored, (an_hour_ago, an_hour_ago))
    assert main(["fresh", str(schedule), "600"]) == 1
    assert "last changed" in capsys.readouterr().err


def test_a_usage_error_exits_2():
    assert main(["fresh", "/tmp/x", "soon"]) == 2
    assert main([]) == 2
