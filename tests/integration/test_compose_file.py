"""Static checks of docker-compose.yml (no Docker engine needed).

* ``docker-compose config`` (Debian's v1.29, run only when on PATH) must accept
  the file and list exactly the six services;
* the YAML itself (PyYAML, skipped if unavailable) must wire web/worker/beat to
  the same image and the same ``x-sprig-env`` environment, give each a healthcheck that
  what depends on it waits for, and take every secret from a ``secrets:`` file, never
  from the file itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
SERVICES = {"postgres", "redis", "minio", "minio-bucket", "migrate", "web", "worker", "beat"}
ONE_SHOT = {"migrate", "minio-bucket"}
APP_SERVICES = ("migrate", "web", "worker", "beat")
EXPECTED_ENV = {
    "SPRIG_DATABASE_URL": "postgresql+psycopg://sprig@postgres:5432/sprig",
    "SPRIG_DATABASE_PASSWORD_FILE": "/run/secrets/postgres_password",
    "SPRIG_REDIS_URL": "redis://redis:6379/0",
    "SPRIG_SECRET_KEY_FILE": "/run/secrets/secret_key",
    "SPRIG_CELERY_EAGER": "0",
    "SPRIG_EXPORT_STORAGE": "s3://sprig-exports/runs",
    "SPRIG_EXPORT_STORAGE_ENDPOINT": "http://minio:9000",
    "SPRIG_EXPORT_STORAGE_KEY_ID_FILE": "/run/secrets/minio_user",
    "SPRIG_EXPORT_STORAGE_SECRET_FILE": "/run/secrets/minio_password",
}

DOCKER_COMPOSE = shutil.which("docker-compose")
needs_compose = pytest.mark.skipif(DOCKER_COMPOSE is None, reason="docker-compose not on PATH")


def _compose(*args: str) -> subprocess.CompletedProcess[str]:
    """Run docker-compose on our file, with no SPRIG_* variable from the caller's environment."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "DOCKER_", "SPRIG_"))
    }
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
def test_resolved_config_shares_image_and_env() -> None:
    yaml = pytest.importorskip("yaml")
    result = _compose("config")
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    for name in APP_SERVICES:
        assert services[name]["image"] == services["web"]["image"], name
        assert services[name]["environment"] == EXPECTED_ENV


def test_web_and_worker_keep_exports_in_minio(compose_yaml: dict) -> None:
    """The worker writes export runs and web serves their files, both through MinIO's bucket
    (made by the one-shot minio-bucket): no volume shared between them."""
    services = compose_yaml["services"]
    for name in ("web", "worker"):
        assert not any("exports" in volume for volume in services[name].get("volumes", [])), name
        needed = services[name]["depends_on"]["minio-bucket"]["condition"]
        assert needed == "service_completed_successfully", name
    assert services["minio"]["image"] == "minio/minio"
    assert "mc ready local" in _check_command(services["minio"])
    assert "sprig/sprig-exports" in " ".join(services["minio-bucket"]["entrypoint"])
    assert services["minio-bucket"]["depends_on"]["minio"]["condition"] == "service_healthy"


def test_services_exist(compose_yaml: dict) -> None:
    assert set(compose_yaml["services"]) == SERVICES


def test_app_services_share_image_and_env_anchor(compose_yaml: dict) -> None:
    anchor = compose_yaml["x-sprig-env"]
    assert anchor == EXPECTED_ENV
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


def _check_command(service: dict) -> str:
    test = service["healthcheck"]["test"]
    return test if isinstance(test, str) else " ".join(test)


def test_every_long_running_service_has_a_healthcheck(compose_yaml: dict) -> None:
    services = compose_yaml["services"]
    assert "/readyz" in _check_command(services["web"])
    worker = _check_command(services["worker"])
    assert "inspect ping" in worker
    # Its own node only: one live worker must not vouch for a stuck one.
    assert "-d celery@$$HOSTNAME" in worker
    assert "fresh /app/var/celerybeat-schedule" in _check_command(services["beat"])
    assert "--schedule=/app/var/celerybeat-schedule" in services["beat"]["command"]
    for name in ("postgres", "redis", "web", "worker", "beat"):
        check = services[name]["healthcheck"]
        assert check["retries"] >= 1 and check["interval"], name


def test_services_wait_for_what_they_need_to_be_healthy(compose_yaml: dict) -> None:
    services = compose_yaml["services"]
    for name, service in services.items():
        for needed, how in service.get("depends_on", {}).items():
            condition = how["condition"]
            if needed in ONE_SHOT:
                assert condition == "service_completed_successfully", name
            else:
                assert condition == "service_healthy", (name, needed)
                assert "healthcheck" in services[needed], needed
    assert services["beat"]["depends_on"]["worker"]["condition"] == "service_healthy"


def test_secrets_come_from_files_not_from_the_compose_file(compose_yaml: dict) -> None:
    declared = compose_yaml["secrets"]
    assert set(declared) == {"postgres_password", "secret_key", "minio_user", "minio_password"}
    assert all(set(entry) == {"file"} for entry in declared.values())
    services = compose_yaml["services"]
    postgres = services["postgres"]
    assert "POSTGRES_PASSWORD" not in postgres["environment"]
    assert postgres["environment"]["POSTGRES_PASSWORD_FILE"] == "/run/secrets/postgres_password"
    assert postgres["secrets"] == ["postgres_password"]
    minio = services["minio"]
    assert minio["environment"] == {
        "MINIO_ROOT_USER_FILE": "/run/secrets/minio_user",
        "MINIO_ROOT_PASSWORD_FILE": "/run/secrets/minio_password",
    }
    assert (
        minio["secrets"] == services["minio-bucket"]["secrets"] == ["minio_user", "minio_password"]
    )
    for name in APP_SERVICES:
        assert set(services[name]["secrets"]) == set(declared), name
        env = services[name]["environment"]
        assert "SPRIG_SECRET_KEY" not in env and "SPRIG_DATABASE_PASSWORD" not in env, name
        for variable, value in env.items():
            if variable.endswith("_FILE"):
                assert value.removeprefix("/run/secrets/") in declared, variable


def test_no_password_is_written_in_the_compose_file() -> None:
    text = COMPOSE_FILE.read_text()
    # A URL with credentials (user:password@host), or a password given as a value.
    assert not re.search(r"://[^/@\s:]+:[^/@\s]+@", text)
    assert not re.search(r"PASSWORD\s*:\s*(?!/run/secrets/)\S", text)


def test_secret_files_stay_out_of_the_image_and_the_repository() -> None:
    assert "secrets" in (ROOT / ".dockerignore").read_text().split()
    assert "secrets/" in (ROOT / ".gitignore").read_text().split()


def test_the_image_checks_its_own_health() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    healthcheck = re.search(r"^HEALTHCHECK .*?CMD (.*)$", dockerfile, re.M | re.S)
    assert healthcheck, "the Dockerfile declares a HEALTHCHECK"
    assert "market.entrypoints.healthcheck" in healthcheck.group(1)
    assert "/readyz" in healthcheck.group(1)
