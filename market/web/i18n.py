"""Page chrome in the viewer's language (English, simplified Chinese, Japanese) with
Flask-Babel.

The language of a page is, in order: a ``?lang=`` choice (remembered in a cookie), the
cookie, the signed-in person's locale, the browser's Accept-Language, else English. Only the
chrome is translated; what people wrote (titles, summaries, stories, comments) never is.

The catalogs are the ``.po`` sources under ``translations/``, compiled in memory once per
process when the app is built: no generated ``.mo`` file to build, ship or let go stale, and a
broken catalog stops the start instead of one page.
"""

from __future__ import annotations

import functools
import io
from pathlib import Path
from urllib.parse import urlencode

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations
from flask import Flask, g, request
from flask_babel import Babel, Domain, get_locale, lazy_gettext
from sqlmodel import select
from werkzeug.utils import cached_property

from market.identity.models import User
from market.platform.api_deps import db
from market.platform.errors import BadRequest
from market.platform.state import app_state
from market.web.blueprint import bp

# Each language the chrome speaks, named in itself for the switcher.
LANGUAGES = {"en": "English", "zh": "中文", "ja": "日本語"}
DEFAULT_LANGUAGE = "en"
# The page's <html lang>: the catalogs are simplified Chinese, which fonts and screen
# readers are told, so a page never renders in traditional or Japanese glyph forms.
HTML_LANG = {"en": "en", "zh": "zh-Hans", "ja": "ja"}
TRANSLATIONS_DIR = Path(__file__).parent / "translations"
LANG_COOKIE = "sprig_lang"
LANG_COOKIE_SECONDS = 365 * 24 * 3600
# The fixed words pages show from the data (categories, visibilities) in the reader's language.
LABELS = {
    "diet": lazy_gettext("diet"),
    "hydration": lazy_gettext("hydration"),
    "fitness": lazy_gettext("fitness"),
    "health": lazy_gettext("health"),
    "mood": lazy_gettext("mood"),
    "sleep": lazy_gettext("sleep"),
    "finance": lazy_gettext("finance"),
    "study": lazy_gettext("study"),
    "family": lazy_gettext("family"),
    "hobby": lazy_gettext("hobby"),
    "travel": lazy_gettext("travel"),
    "home": lazy_gettext("home"),
    "unlisted": lazy_gettext("unlisted"),
    "private": lazy_gettext("private"),
}


@functools.cache
def catalog(language: str) -> Translations:
    """The compiled translations of one language, from its ``messages.po``."""
    with (TRANSLATIONS_DIR / language / "LC_MESSAGES" / "messages.po").open("rb") as source:
        messages = read_po(source, locale=language)
    compiled = io.BytesIO()
    write_mo(compiled, messages)
    compiled.seek(0)
    return Translations(compiled)


class SourceCatalogs(Domain):
    """The message domain read from the ``.po`` sources (see :func:`catalog`)."""

    def get_translations(self):
        locale = get_locale()
        return catalog(locale.language if locale is not None else DEFAULT_LANGUAGE)


class SprigBabel(Babel):
    @cached_property
    def domain_instance(self):
        return SourceCatalogs()


def _supported(locale: str | None) -> str | None:
    """The chrome language of a BCP 47 locale, or None when the chrome does not speak it."""
    if not locale:
        return None
    language = locale.replace("_", "-").split("-")[0].casefold()
    return language if language in LANGUAGES else None


def page_language() -> str:
    """The language of this request's chrome (the module docstring gives the order)."""
    chosen = _supported(request.args.get("lang")) or _supported(request.cookies.get(LANG_COOKIE))
    if chosen:
        return chosen
    viewer = g.get("session_principal")
    if viewer is not None and viewer.user_id is not None:
        locale = db().exec(select(User.locale).where(User.id == viewer.user_id)).first()
        if _supported(locale):
            return _supported(locale)
    return request.accept_languages.best_match(list(LANGUAGES)) or DEFAULT_LANGUAGE


def label(word: str) -> str:
    return str(LABELS.get(word, word))


def current_language() -> str:
    locale = get_locale()
    return locale.language if locale is not None else DEFAULT_LANGUAGE


def language_url(language: str) -> str:
    """This page's address with the chrome in ``language``."""
    args = [(key, value) for key, value in request.args.items(multi=True) if key != "lang"]
    return f"{request.path}?{urlencode([*args, ('lang', language)])}"


@bp.before_request
def _check_language_choice():
    chosen = request.args.get("lang")
    if chosen is not None and chosen not in LANGUAGES:
        raise BadRequest(f"Unknown language {chosen!r}: choose one of {', '.join(LANGUAGES)}.")


@bp.after_request
def _remember_language_choice(response):
    chosen = request.args.get("lang")
    if chosen in LANGUAGES and request.cookies.get(LANG_COOKIE) != chosen:
        response.set_cookie(
            LANG_COOKIE,
            chosen,
            max_age=LANG_COOKIE_SECONDS,
            httponly=True,
            samesite="Lax",
            secure=app_state().settings.session_cookie_secure,
        )
    # The chrome's language follows these headers.
    response.vary.add("Accept-Language")
    response.vary.add("Cookie")
    return response


def install(app: Flask) -> None:
    """Translate the app's templates; every catalog compiles now, so a broken one fails here."""
    for language in LANGUAGES:
        catalog(language)
    SprigBabel(app, default_locale=DEFAULT_LANGUAGE, locale_selector=page_language)
    app.jinja_env.globals.update(
        page_languages=LANGUAGES,
        current_language=current_language,
        html_lang=lambda: HTML_LANG[current_language()],
        language_url=language_url,
        label=label,
    )
