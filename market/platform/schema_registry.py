"""Where every package's tables are imported, so metadata (and Alembic) sees them all."""

from __future__ import annotations

import importlib

MODEL_MODULES = (
    "market.identity.models",
    "market.catalog.models",
    "market.usage.models",
    "market.ranking.models",
    "market.recommend.models",
    "market.exports.models",
)

SEARCH_TABLE_PREFIX = "subagent_fts"
SEARCH_COLUMN = "search_vector"
SEARCH_INDEX = "ix_subagent_search_vector"


def import_all_models() -> None:
    for module in MODEL_MODULES:
        importlib.import_module(module)


def is_search_artifact(name: str | None, type_: str) -> bool:
    if name is None:
        return False
    if type_ == "table" and name.startswith(SEARCH_TABLE_PREFIX):
        return True
    return (type_ == "column" and name == SEARCH_COLUMN) or (
        type_ == "index" and name == SEARCH_INDEX
    )
