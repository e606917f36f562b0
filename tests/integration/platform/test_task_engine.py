"""Tasks run in the app's context on the app's one engine: no task call builds an engine."""

from __future__ import annotations

import sqlalchemy

from market.platform import db
from market.platform.state import app_state


def test_task_calls_reuse_the_apps_engine(app, monkeypatch):
    def no_new_engines(*_args, **_kwargs):
        raise AssertionError("a task built a database engine")

    monkeypatch.setattr(db, "create_engine", no_new_engines)
    monkeypatch.setattr(sqlalchemy, "create_engine", no_new_engines)
    celery = app_state(app).celery
    celery.loader.import_default_modules()
    for _ in range(3):
        assert celery.tasks["sprig.delete_dead_web_sessions"].delay().get() is not None
        assert "mode" in celery.tasks["sprig.rank"].delay().get()
