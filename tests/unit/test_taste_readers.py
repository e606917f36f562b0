"""Where a person's taste is read, from the source tree (no import is executed).

A rater's taste vector (``rater_taste``, p_u) is personal data: learned from their own ratings,
it tells what they like. So is anything computed from it for one person: their taste for a
candidate (``taste_terms``) and what a slate believed of each candidate for them (an
exposure's ``pool_belief``). Today exactly these modules touch them:

- ``market.ranking.services`` writes ``rater_taste`` (a full ranking run);
- ``market.recommend.services`` reads it to draw the person's own slate, and logs the pool
  belief on the exposure;
- ``market.recommend.evaluation`` reads pool beliefs back for off-policy evaluation, whose
  output (``sprig ope``) is one figure per candidate policy, never per person.

Every other module of ``market`` (API, pages, previews, MCP, counts, stats, exports) names none
of them. A new reader fails here: add it to ``READERS`` together with a test that nobody but
the person (and the main agent acting for them) can get what it returns
(``tests/functional/recommend/test_taste_privacy.py``). And a slate is drawn with the taste,
so every module that draws one (``market.recommend.services.recommend``) must ask
``market.identity.access.may_recommend_for`` whose it may be.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What is personal → the modules allowed to name it (paths relative to the repository; the
# table's class is defined in market/ranking/models.py, which names its table and nothing else).
READERS = {
    "RaterTaste": {"market/ranking/services.py", "market/recommend/services.py"},
    "rater_taste": {"market/ranking/models.py"},  # the table's name, as SQL text would use it
    "taste_terms": {"market/recommend/services.py"},
    "pool_belief": {
        "market/recommend/models.py",
        "market/recommend/services.py",
        "market/recommend/evaluation.py",
    },
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings (prose, not code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def names_used(source: str) -> set[str]:
    """Every identifier the code uses (names, attributes, imported names, keyword arguments,
    class fields) and every word of its string literals other than docstrings."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.alias):
            used.add(node.name.rsplit(".", 1)[-1])
        elif isinstance(node, ast.keyword) and node.arg:
            used.add(node.arg)
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        ):
            used.update(word.strip("\"'`.,;:()[]{}") for word in node.value.split())
    return used


def readers() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {name: set() for name in READERS}
    for path in sorted((ROOT / "market").rglob("*.py")):
        used = names_used(path.read_text(encoding="utf-8"))
        for name in READERS:
            if name in used:
                found[name].add(path.relative_to(ROOT).as_posix())
    return found


def test_only_the_ranking_and_the_persons_own_slate_read_their_taste():
    assert readers() == READERS


SLATE_SERVICE = "market.recommend.services"


def draws_slates(source: str) -> bool:
    """Whether the code calls ``market.recommend.services.recommend``, however it imported it."""
    tree = ast.parse(source)
    modules, functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if f"{node.module}.{alias.name}" == SLATE_SERVICE:
                    modules.add(alias.asname or alias.name)
                elif node.module == SLATE_SERVICE and alias.name == "recommend":
                    functions.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.name == SLATE_SERVICE and a.asname)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if isinstance(called, ast.Name) and called.id in functions:
            return True
        if (
            isinstance(called, ast.Attribute)
            and called.attr == "recommend"
            and isinstance(called.value, ast.Name)
            and called.value.id in modules
        ):
            return True
    return False


def test_every_path_that_draws_a_slate_asks_whose_it_may_be():
    """A slate is drawn with the person's taste (``recommend``): each module that draws one
    asks ``access.may_recommend_for`` first. Today that is the API alone (no page or MCP tool
    recommends)."""
    drawers, askers = set(), set()
    for path in sorted((ROOT / "market").rglob("*.py")):
        if path.relative_to(ROOT).as_posix() == "market/recommend/services.py":
            continue
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        if draws_slates(source):
            drawers.add(name)
        if "may_recommend_for" in names_used(source):
            askers.add(name)
    assert drawers == {"market/recommend/api.py"}
    assert drawers <= askers


def test_the_scan_sees_every_way_code_names_the_taste():
    """Shown on code that leaks it each way a new module could."""
    leaks = [
        "from market.ranking.models import RaterTaste",
        "from market.ranking import models\nrows = session.scalars(select(models.RaterTaste))",
        'rows = session.execute(text("SELECT factors FROM rater_taste WHERE user_id = :u"))',
        "terms = recommendations.taste_terms(session, user_id, ids)",
        "belief = exposure.pool_belief",
        "return ExposureOut(pool_belief=row.pool_belief)",
    ]
    for code in leaks:
        assert set(READERS) & names_used(code), code
    drawing = [
        "from market.recommend import services as recommendations\nrecommendations.recommend(s)",
        "from market.recommend.services import recommend\nrecommend(s, user_id=1, k=3)",
        "import market.recommend.services as slates\nslates.recommend(s)",
    ]
    for code in drawing:
        assert draws_slates(code), code
    assert not draws_slates("from market.recommend.services import is_exposure_of\nrecommend()")
    prose = 'def f():\n    """Reads rater_taste and pool_belief: RaterTaste."""\n'
    assert not set(READERS) & names_used(prose)
