"""Alembic environment: the schema is SQLModel's metadata of every package's tables."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy import engine_from_config, pool
from sqlmodel import SQLModel

from market.platform.config import load_settings
from market.platform.schema_registry import import_all_models
from market.usage.partitions import is_partition

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logging", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

import_all_models()
target_metadata = SQLModel.metadata


def _database_url() -> str:
    return config.attributes.get("database_url") or load_settings().database_url


def run_migrations_offline() -> None:
    context.configure(
        url=_database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        section = config.get_section(config.config_ini_section, {})
        section["sqlalchemy.url"] = _database_url()
        connectable = engine_from_config(section, prefix="sqlalchemy.", poolclass=pool.NullPool)
        with connectable.connect() as connection:
            _run(connection)
    else:
        _run(connection)


def _not_an_event_partition(name, type_, _parent_names) -> bool:
    """The event table's monthly partitions come and go with the calendar (beat makes and
    drops them); the partitioned table itself is the schema that migrations own."""
    return not (type_ == "table" and is_partition(name))


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_name=_not_an_event_partition,
        # SQLite cannot ALTER most things; batch mode recreates tables where needed.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
