"""The domain cores (evolution/, feedback/) stay pure: no web framework, task queue, Redis,
database session or shell module. Their tables (``models.py``) may use SQLModel's table
declarations, which open no connection; nothing else may reach for the database. feedback may
build on evolution, never the reverse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE_FILES = sorted(
    path for package in ("evolution", "feedback") for path in (ROOT / package).rglob("*.py")
)
FORBIDDEN_MODULES = ("flask", "apiflask", "celery", "redis", "market", "psycopg")
FORBIDDEN_NAMES = {("sqlmodel", "Session"), ("sqlalchemy.orm", "Session"), ("sqlalchemy", "Engine")}


def imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) for every import in the file; name is None for ``import module``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", CORE_FILES, ids=_name)
def test_core_module_is_pure(path):
    bad = [
        f"{module}{'.' + name if name else ''}"
        for module, name in imports(path)
        if module.split(".")[0] in FORBIDDEN_MODULES or (module, name) in FORBIDDEN_NAMES
    ]
    assert bad == [], f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize("path", sorted((ROOT / "evolution").rglob("*.py")), ids=_name)
def test_evolution_never_imports_feedback(path):
    bad = [module for module, _imported in imports(path) if module.split(".")[0] == "feedback"]
    assert bad == [], f"{path.relative_to(ROOT)} imports {bad}"


def test_the_subpackages_are_checked_too():
    assert ROOT / "feedback" / "export" / "writer.py" in CORE_FILES


def test_the_check_sees_a_forbidden_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from sqlmodel import Session\nimport flask\nfrom market.models import X\n")
    assert imports(sample) == [("sqlmodel", "Session"), ("flask", None), ("market.models", "X")]
