"""Static checks of docker-compose.yml (no Docker engine needed).

* ``docker-compose config`` (Debian's v1.29, run only when on PATH) must accept
  the file and list exactly the six services;
* the YAML itself (PyYAML, skipped if unavailable) must wire web/worker/beat to
  the same image and the same ``x-sprig-env`` environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
SERVICES = {"postgres", "redis", "migrate", "web", "worker", "beat"}
APP_SERVICES = ("migrate", "web", "worker", "beat")
EXPECTED_ENV = {
    "SPRIG_DATABASE_URL": "postgresql+psycopg://sprig:sprig@postgres:5432/sprig",
    "SPRIG_REDIS_URL": "redis://redis:6379/0",
    "SPRIG_CELERY_EAGER": "0",
    "SPRIG_EXPORT_DIR": "/app/var/exports",
}

TEST_SECRET_KEY = "test-secret"

DOCKER_COMPOSE = shutil.which("docker-compose")
needs_compose = pytest.mark.skipif(DOCKER_COMPOSE is None, reason="docker-compose not on PATH")


def _compose(*args: str, key: str | None = TEST_SECRET_KEY) -> subprocess.CompletedProcess[str]:
    """Run docker-compose on our file with SPRIG_SECRET_KEY=key (unset if None)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "DOCKER_"))}
    env.pop("SPRIG_SECRET_KEY", None)
    if key is not None:
        env["SPRIG_SECRET_KEY"] = key
    return subprocess.run(
        [DOCKER_COMPOSE, "--project-directory", str(ROOT), "-f", str(COMPOSE_FILE), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def compose_yaml() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(COMPOSE_FILE.read_text())


@needs_compose
def test_docker_compose_config_accepts_file() -> None:
    result = _compose("config", "-q")
    assert result.returncode == 0, result.stderr
    services = _compose("config", "--services")
    assert services.returncode == 0, services.stderr
    assert set(services.stdout.split()) == SERVICES


@needs_compose
def test_docker_compose_requires_secret_key() -> None:
    result = _compose("config", "-q", key=None)
    assert result.returncode != 0
    assert "set SPRIG_SECRET_KEY" in result.stderr


@needs_compose
def test_resolved_config_shares_image_and_env() -> None:
    yaml = pytest.importorskip("yaml")
    result = _compose("config", key="s3cret")
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    for name in APP_SERVICES:
        assert services[name]["image"] == services["web"]["image"], name
        assert services[name]["environment"] == {**EXPECTED_ENV, "SPRIG_SECRET_KEY": "s3cret"}


def test_web_and_worker_share_the_exports_volume(compose_yaml: dict) -> None:
    """The worker writes export runs and web serves their files: one named volume."""
    services = compose_yaml["services"]
    for name in ("web", "worker"):
        assert "exports:/app/var/exports" in services[name]["volumes"], name
    assert "exports" in compose_yaml["volumes"]


def test_services_exist(compose_yaml: dict) -> None:
    assert set(compose_yaml["services"]) == SERVICES


def test_app_services_share_image_and_env_anchor(compose_yaml: dict) -> None:
    anchor = compose_yaml["x-sprig-env"]
    assert {k: anchor[k] for k in EXPECTED_ENV} == EXPECTED_ENV
    assert anchor["SPRIG_SECRET_KEY"].startswith("${SPRIG_SECRET_KEY:?")
    services = compose_yaml["services"]
    image = services["web"]["image"]
    assert image
    for name in APP_SERVICES:
        assert services[name]["image"] == image, name
        assert services[name]["environment"] == anchor, name


def test_startup_order_and_commands(compose_yaml: dict) -> None:
    services = compose_yaml["services"]
    assert services["migrate"]["command"] == ["sprig", "db", "upgrade"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("web", "worker", "beat"):
        deps = services[name]["depends_on"]
        assert deps["migrate"]["condition"] == "service_completed_successfully", name
        assert deps["redis"]["condition"] == "service_healthy", name
    assert "8000:8000" in services["web"]["ports"]
    assert "0.0.0.0:8000" in services["web"]["command"]
    assert "market.entrypoints.worker:celery" in services["worker"]["command"]
    assert "--concurrency=2" in services["worker"]["command"]
    assert "beat" in services["beat"]["command"]
    redis_cmd = services["redis"]["command"]
    assert redis_cmd[redis_cmd.index("--appendonly") + 1] == "yes"
    assert redis_cmd[redis_cmd.index("--appendfsync") + 1] == "everysec"
    assert services["postgres"]["image"] == "postgres:15"
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert services["redis"]["healthcheck"]
