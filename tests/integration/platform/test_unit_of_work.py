"""The unit of work is the one thing that commits: after-commit hooks see only committed
changes; Celery tasks run in their app's context, on the app's engine; the app's state is one
object the factory builds whole."""

from __future__ import annotations

import dataclasses

import pytest
from sqlalchemy import text
from sqlmodel import select

from market.identity.models import User
from market.platform.db import CATALOG_CHANGED, SUBAGENTS_PUBLISHED, UnitOfWork, note_change
from market.platform.state import AppState, app_state
from market.ranking.tasks import rank_task
from tests.factories import make_user, publish


def test_hooks_run_after_the_commit_with_the_changes_noted(engine):
    heard = []

    def hook(session, changes):
        # Committed already: another connection sees the row.
        with UnitOfWork(engine) as other:
            handles = other.session.exec(select(User.handle)).all()
        heard.append((dict(changes), handles))

    with UnitOfWork(engine, (hook,)) as unit:
        unit.session.add(User(handle="hooked", display_name="Hooked"))
        note_change(unit.session, CATALOG_CHANGED)
        note_change(unit.session, SUBAGENTS_PUBLISHED, 3)
        note_change(unit.session, SUBAGENTS_PUBLISHED, 4)
        unit.commit()
        unit.commit()  # nothing new noted: nothing announced again
    assert heard == [({CATALOG_CHANGED: set(), SUBAGENTS_PUBLISHED: {3, 4}}, ["hooked"])]


def test_a_failing_hook_neither_undoes_the_commit_nor_stops_the_hooks_after_it(engine, caplog):
    heard = []

    def failing(session, changes):
        session.execute(text("SELECT * FROM no_such_table"))  # the session's statement fails

    def hear(session, changes):
        heard.append(dict(changes))

    with UnitOfWork(engine, (failing, hear)) as unit:
        unit.session.add(User(handle="stays", display_name="Stays"))
        note_change(unit.session, SUBAGENTS_PUBLISHED, 7)
        with caplog.at_level("ERROR", logger="market.platform.db"):
            unit.commit()  # no error: the work committed
        # The session still answers, for the response built after the commit.
        assert unit.session.exec(select(User.handle)).all() == ["stays"]
    assert heard == [{SUBAGENTS_PUBLISHED: {7}}]
    (record,) = caplog.records
    assert "failing failed after a commit (subagents_published: 1)" in record.getMessage()
    with UnitOfWork(engine) as other:
        assert other.session.exec(select(User.handle)).all() == ["stays"]


def test_nothing_is_announced_for_work_that_did_not_commit(engine):
    heard = []

    def hear(_session, changes):
        heard.append(changes)

    with pytest.raises(RuntimeError), UnitOfWork(engine, (hear,)) as unit:
        unit.session.add(User(handle="lost", display_name="Lost"))
        note_change(unit.session, CATALOG_CHANGED)
        raise RuntimeError("the work failed")
    with UnitOfWork(engine, (hear,)) as unit:
        note_change(unit.session, CATALOG_CHANGED)
        unit.rollback()
        unit.session.add(User(handle="kept", display_name="Kept"))
        unit.commit()  # the rolled-back note is gone with its transaction
        assert unit.session.exec(select(User.handle)).all() == ["kept"]
    assert heard == []


def test_a_task_runs_in_its_apps_context_on_the_apps_engine(app, engine, monkeypatch):
    # The environment names no database: only the app's settings lead to this one.
    monkeypatch.delenv("SPRIG_DATABASE_URL", raising=False)
    author = make_user(engine)
    publish(app.test_client(), author)
    assert rank_task.apply(kwargs={"force": True}).get()["subagents"] == 1


def test_the_state_is_built_whole_by_the_factory(app):
    state = app_state(app)
    assert isinstance(state, AppState)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.suggestions = None
    assert [key for key in app.extensions if key.startswith("sprig")] == ["sprig"]
    client = app.test_client()
    client.get("/api/v1/subagents?sort=score")
    client.get("/api/v1/openapi.json")
    assert app_state(app) is state
