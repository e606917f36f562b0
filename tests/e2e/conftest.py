"""A live Sprig with the demo community, served once per test session, and headless Chromium.

The demo takes a minute and more to load, so one server (werkzeug in a thread, on a free
loopback port) serves a copy of the run's loaded demo (tests/conftest.py), and one browser
serves every browser test; each test gets its own browser context (cookies, storage).
Debian's ``chromium`` is driven by Playwright (never a downloaded browser). Screenshots go to
``var/screenshots`` (or ``SPRIG_SCREENSHOT_DIR``).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from market.platform.migrate import upgrade
from market.platform.state import app_state
from tests.conftest import configured_app, copy_of_demo

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return os.environ.get("SPRIG_TEST_CHROMIUM") or shutil.which("chromium")


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    path = chromium_path()
    if path is None:
        if os.environ.get("CI"):
            raise RuntimeError("CI runs the browser tests: install Debian's chromium")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    return path


def app_on_new_database(directory: Path, **settings):
    """An app of a browser test's own on a new SQLite database in ``directory`` (schema by the
    migrations), every limit off and no read cache unless ``settings`` say otherwise."""
    url = f"sqlite:///{directory / 'sprig.db'}"
    upgrade(url)
    return _browser_app(url, **settings)


def _browser_app(url: str, **settings):
    """A :func:`configured_app` that is not in testing mode: a browser meets the error pages a
    person would, not exceptions raised into the test."""
    return configured_app(url, testing=False, **settings)


@contextmanager
def serving(app, name: str) -> Iterator[str]:
    """``app`` served by werkzeug in a thread on a free loopback port: its base URL. The
    server stops and the app's engine is disposed after."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        app_state(app).engine.dispose()


@pytest.fixture(scope="session")
def live_app(tmp_path_factory, chromium_executable):
    url, _template = copy_of_demo(
        "sqlite", tmp_path_factory.mktemp("e2e") / "sprig.db", tmp_path_factory
    )
    app = _browser_app(url, secret_key="e2e-secret", demo_signin=True)
    with serving(app, "sprig-e2e") as url:
        app.config["LIVE_URL"] = url
        yield app


@pytest.fixture(scope="session")
def base_url(live_app) -> str:
    return live_app.config["LIVE_URL"]


@pytest.fixture(scope="session")
def browser(chromium_executable):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_executable, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, base_url):
    """A phone-sized page (most people arrive through a shared link on their phone) that
    fails the test on any script error or refused script (CSP) on our pages."""
    context = browser.new_context(
        base_url=base_url, viewport={"width": 390, "height": 844}, device_scale_factor=1
    )
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on(
        "dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss())
    )
    page.problems = problems
    yield page
    context.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    directory = Path(os.environ.get("SPRIG_SCREENSHOT_DIR", ROOT / "var" / "screenshots"))
    directory.mkdir(parents=True, exist_ok=True)
    return directory
