"""Run Alembic migrations from code (``sprig db upgrade``, tests, the demo)."""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config


def migrations_dir() -> Path:
    """The ``migrations/`` folder: beside the package in a checkout, or where
    ``SPRIG_MIGRATIONS_DIR`` points (an installed wheel has no checkout)."""
    configured = os.environ.get("SPRIG_MIGRATIONS_DIR")
    candidates = [Path(configured)] if configured else []
    candidates += [Path(__file__).resolve().parents[2] / "migrations", Path.cwd() / "migrations"]
    for candidate in candidates:
        if (candidate / "env.py").exists():
            return candidate
    raise FileNotFoundError("migrations/ not found; set SPRIG_MIGRATIONS_DIR")


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("path_separator", "os")
    config.attributes["database_url"] = database_url
    config.attributes["configure_logging"] = False
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)
