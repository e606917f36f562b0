"""The layer contract, read from the source tree's imports (no import is executed).

- The domain cores (evolution/, feedback/) stay pure: arrays and rows in and out, no web
  framework, task queue, Redis, database or shell module; feedback may use evolution, never
  the reverse.
- ``market.platform`` (config, sessions, errors, the API plumbing) knows no domain.
- A domain may use another domain's non-HTTP modules (``SHARED_MODULES``: its tables, services,
  queries, ...), never its ``api``, ``views``, ``schemas`` or ``tasks``: HTTP shapes belong to
  the domain that serves them.
- A domain's non-HTTP modules take primitives or command dataclasses and return rows or
  dataclasses: they never import a ``schemas`` or ``serialize`` module, so an API shape change
  is not a service change (``api``, ``views`` and the MCP server map the results).
- Entry points (CLI, MCP, gunicorn) call services, never an ``api`` or ``views`` module nor
  the web shell.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE_PACKAGES = ("evolution", "feedback")
CORE_FORBIDDEN = {
    "evolution": (
        "feedback",
        "market",
        "flask",
        "apiflask",
        "sqlalchemy",
        "sqlmodel",
        "celery",
        "redis",
        "psycopg",
    ),
    "feedback": (
        "market",
        "flask",
        "apiflask",
        "sqlalchemy",
        "sqlmodel",
        "celery",
        "redis",
        "psycopg",
    ),
}
DOMAINS = ("identity", "catalog", "usage", "ranking", "recommend", "suggestions", "exports")
SHELL = ("web", "entrypoints", "demo")
# What a domain may use of another: its non-HTTP modules.
SHARED_MODULES = (
    "models",
    "services",
    "queries",
    "access",
    "tokens",
    "counters",
    "installs",
    "bundles",
    "search",
    "ingest",
    "ratings",
)

# Imports the contract forbids that today's code still makes, each with why it remains.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}


def imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) for every import in the file; name is None for ``import module``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def imported_modules(path: Path) -> set[str]:
    """Every module the file imports. ``from package import name`` of this project imports the
    module ``package.name`` unless ``package`` is itself a module (then ``name`` is in it)."""
    found = set()
    for module, name in imports(path):
        ours = module.split(".")[0] in ("evolution", "feedback", "market")
        is_module = (ROOT / Path(*module.split("."))).with_suffix(".py").exists()
        found.add(f"{module}.{name}" if ours and name and not is_module else module)
    return found


def layer_of(module: str) -> tuple[str, ...]:
    """("core", package) | ("platform",) | ("domain", name, role) | ("shell", name) | ()."""
    parts = module.split(".")
    if parts[0] in CORE_PACKAGES:
        return ("core", parts[0])
    if parts[0] != "market" or len(parts) < 2:
        return ()
    if parts[1] == "platform":
        return ("platform",)
    if parts[1] in DOMAINS:
        return ("domain", parts[1], parts[2] if len(parts) > 2 else "")
    if parts[1] in SHELL:
        return ("shell", parts[1])
    return ()


def violations(path: Path) -> list[str]:
    """What the file imports against the contract, as "importer -> imported: rule"."""
    importer = module_name(path)
    mine = layer_of(importer)
    bad = []
    for target in sorted(imported_modules(path)):
        top = target.split(".")[0]
        theirs = layer_of(target)
        rule = None
        if mine and mine[0] == "core":
            if top in CORE_FORBIDDEN[mine[1]]:
                rule = f"{mine[1]}/ is pure"
        elif mine == ("platform",):
            if theirs and theirs[0] in ("domain", "shell"):
                rule = "the platform knows no domain"
        elif mine and mine[0] == "domain":
            foreign = theirs and theirs[0] == "domain" and theirs[1] != mine[1]
            if foreign and theirs[2] not in SHARED_MODULES:
                rule = f"a domain uses only another's non-HTTP modules, not its {theirs[2]!r}"
            elif (
                mine[2] in SHARED_MODULES
                and theirs
                and theirs[0] == "domain"
                and theirs[2] in ("schemas", "serialize")
            ):
                rule = "services take and return rows and dataclasses, not HTTP shapes"
        elif mine == ("shell", "entrypoints"):
            http = theirs and theirs[0] == "domain" and theirs[2] in ("api", "views")
            if http or theirs == ("shell", "web"):
                rule = "entry points call services, never api, views or web"
        if rule is not None and (importer, target) not in KNOWN_EXCEPTIONS:
            bad.append(f"{importer} -> {target}: {rule}")
    return bad


SOURCE_FILES = sorted(
    path
    for package in ("evolution", "feedback", "market")
    for path in (ROOT / package).rglob("*.py")
    if "templates" not in path.parts
)


@pytest.mark.parametrize("path", SOURCE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_keeps_the_layer_contract(path):
    assert violations(path) == []


def test_known_exceptions_are_still_needed():
    """An exception the code no longer needs is removed from the list, so it cannot hide a
    new import of the same kind."""
    made = {
        (module_name(path), target) for path in SOURCE_FILES for target in imported_modules(path)
    }
    assert [pair for pair in KNOWN_EXCEPTIONS if pair not in made] == []


def test_no_flat_module_is_left_in_market():
    flat = sorted(
        path.name
        for path in (ROOT / "market").glob("*.py")
        if path.name not in ("__init__.py", "app.py")
    )
    assert flat == []


@pytest.mark.parametrize(
    ("importer", "source", "rule"),
    [
        ("evolution/sample.py", "from feedback.rewards import x\n", "evolution/ is pure"),
        ("feedback/sample.py", "from sqlmodel import Session\n", "feedback/ is pure"),
        ("market/platform/sample.py", "from market.catalog import services\n", "knows no domain"),
        (
            "market/usage/sample.py",
            "from market.catalog.schemas import Page\n",
            "not its 'schemas'",
        ),
        ("market/usage/sample.py", "import market.catalog.api\n", "not its 'api'"),
        ("market/usage/sample.py", "from market.catalog.tasks import rank\n", "not its 'tasks'"),
        (
            "market/catalog/services.py",
            "from market.catalog.schemas import SubAgentOut\n",
            "not HTTP shapes",
        ),
        (
            "market/catalog/queries.py",
            "from market.catalog.serialize import card_out\n",
            "not HTTP shapes",
        ),
        ("market/entrypoints/sample.py", "from market.web import signin\n", "never api"),
        ("market/entrypoints/sample.py", "from market.catalog import views\n", "never api"),
    ],
)
def test_the_check_sees_a_violation(tmp_path, monkeypatch, importer, source, rule):
    sample = tmp_path / importer
    sample.parent.mkdir(parents=True)
    sample.write_text(source)
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    found = violations(sample)
    assert len(found) == 1 and rule in found[0]


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("evolution/sample.py", "import numpy\nfrom evolution.tree import Forest\n"),
        ("feedback/sample.py", "from evolution.ranking import rank\n"),
        ("market/platform/sample.py", "from market.platform.db import session_scope\n"),
        ("market/usage/sample.py", "from market.catalog.models import SubAgent\n"),
        ("market/suggestions/sample.py", "from market.catalog.bundles.manifest import SCOPES\n"),
        ("market/usage/sample.py", "from market.usage.schemas import FeedbackIn\n"),
        ("market/entrypoints/sample.py", "from market.catalog import services\n"),
    ],
)
def test_the_check_allows_what_the_contract_allows(tmp_path, monkeypatch, importer, source):
    sample = tmp_path / importer
    sample.parent.mkdir(parents=True)
    sample.write_text(source)
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert violations(sample) == []
