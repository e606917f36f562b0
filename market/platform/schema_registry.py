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


def import_all_models() -> None:
    for module in MODEL_MODULES:
        importlib.import_module(module)
