"""Secrets read from SPRIG_<NAME>_FILE (Docker and Kubernetes secrets), and the database password
put into the database URL."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from market.platform.config import SECRET_SETTINGS, Settings, load_settings


def test_each_secret_is_read_from_its_file_without_the_trailing_newline(tmp_path):
    environ = {}
    for name in SECRET_SETTINGS:
        (tmp_path / name).write_text(f"from-file-{name}\n")
        environ[f"SPRIG_{name.upper()}_FILE"] = str(tmp_path / name)
    environ["SPRIG_DATABASE_PASSWORD_FILE"] = str(tmp_path / "database_password")
    (tmp_path / "database_url").write_text("postgresql+psycopg://sprig@db:5432/sprig\n")
    settings = load_settings(environ)
    assert settings.secret_key == "from-file-secret_key"
    assert settings.redis_url == "from-file-redis_url"
    url = make_url(settings.database_url)
    assert (url.username, url.password, url.host) == ("sprig", "from-file-database_password", "db")


def test_the_database_password_goes_into_the_url_from_the_environment_too():
    settings = load_settings(
        {
            "SPRIG_DATABASE_URL": "postgresql+psycopg://sprig@db:5432/sprig",
            "SPRIG_DATABASE_PASSWORD": "p@ss:word/",
        }
    )
    assert make_url(settings.database_url).password == "p@ss:word/"


def test_a_value_and_its_file_together_are_refused(tmp_path):
    (tmp_path / "key").write_text("k")
    with pytest.raises(ValueError, match="SPRIG_SECRET_KEY or SPRIG_SECRET_KEY_FILE"):
        load_settings({"SPRIG_SECRET_KEY": "k", "SPRIG_SECRET_KEY_FILE": str(tmp_path / "key")})


def test_a_missing_secret_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="SPRIG_SECRET_KEY_FILE: cannot read"):
        load_settings({"SPRIG_SECRET_KEY_FILE": str(tmp_path / "absent")})


def test_only_secrets_have_file_variants(tmp_path):
    (tmp_path / "level").write_text("DEBUG")
    settings = load_settings({"SPRIG_LOG_LEVEL_FILE": str(tmp_path / "level")})
    assert settings.log_level == Settings().log_level
