"""The page shell: the web blueprint, sign-in, previews and charts. The pages themselves live in
their domain's ``views`` module and register on ``market.web.blueprint.bp``."""

from __future__ import annotations

from flask import Flask

from market.platform.state import app_state


def register_web(app: Flask) -> None:
    """Register the web blueprint, once the domains' page views (their ``views`` modules) have
    added their routes to it."""
    from market.web import i18n, preview, signin  # noqa: F401 - routes register
    from market.web.blueprint import bp

    settings = app_state(app).settings
    app.config.update(
        SESSION_COOKIE_NAME="sprig_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.session_cookie_secure,
        PERMANENT_SESSION_LIFETIME=signin.SESSION_LIFETIME,
    )
    app.jinja_env.globals["csrf_token"] = signin.csrf_token
    i18n.install(app)
    app.register_blueprint(bp)
