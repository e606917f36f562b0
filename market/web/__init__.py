"""Server-rendered web pages: browse, the sub-agent page, the fork tree, diffs, the creator
dashboard and sign-in (see ``market.web.blueprint``)."""

from __future__ import annotations

from flask import Flask


def register_web(app: Flask) -> None:
    from market.web import dashboard, pages, preview, signin  # noqa: F401 - routes register
    from market.web.blueprint import bp

    settings = app.extensions["sprig.settings"]
    app.config.update(
        SESSION_COOKIE_NAME="sprig_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.session_cookie_secure,
        PERMANENT_SESSION_LIFETIME=signin.SESSION_LIFETIME,
    )
    app.jinja_env.globals["csrf_token"] = signin.csrf_token
    app.register_blueprint(bp)
