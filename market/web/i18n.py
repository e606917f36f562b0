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
from contextvars import ContextVar
from pathlib import Path
from urllib.parse import urlencode

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations
from flask import Flask, g, request
from flask_babel import Babel, Domain, get_locale
from jinja2 import pass_eval_context
from markupsafe import Markup, escape
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlmodel import select
from werkzeug.utils import cached_property

from market.identity.models import User
from market.platform.api_deps import db
from market.platform.errors import BadRequest
from market.platform.state import app_state
from market.platform.translation import N_
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


# The fixed words pages show from the data (categories, visibilities, a file's change) in the
# reader's language.
LABELS = frozenset(
    (
        N_("diet"),
        N_("hydration"),
        N_("fitness"),
        N_("health"),
        N_("mood"),
        N_("sleep"),
        N_("finance"),
        N_("study"),
        N_("family"),
        N_("hobby"),
        N_("travel"),
        N_("home"),
        N_("unlisted"),
        N_("private"),
        N_("added"),
        N_("removed"),
        N_("modified"),
        # How an upstream update merged a file (evolution.merge.FileStatus).
        N_("unchanged"),
        N_("taken-from-upstream"),
        N_("kept-fork"),
        N_("merged-clean"),
        N_("conflict"),
        # Why a file conflicted (evolution.merge's reasons).
        N_("upstream deleted the file; the fork edited it"),
        N_("the fork deleted the file; upstream edited it"),
        N_("both added the file, differently"),
        N_("both changed the same or adjacent lines"),
        # The rating form's suggested tags (market/catalog/views.SUGGESTED_TAGS): stored and
        # sent in English, shown in the reader's language.
        N_("love it"),
        N_("crashes"),
        N_("too slow"),
        N_("confusing"),
        N_("wants reminders"),
        N_("needs dark mode"),
        N_("wants export"),
        # How loved a branch is, in the family tree (market/usage/queries.quality_word).
        N_("not rated yet"),
        N_("loved"),
        N_("liked"),
        N_("mixed"),
        N_("disliked"),
    )
)


@functools.cache
def catalog(language: str) -> Translations:
    """The compiled translations of one language, from its ``messages.po``."""
    with (TRANSLATIONS_DIR / language / "LC_MESSAGES" / "messages.po").open("rb") as source:
        messages = read_po(source, locale=language)
    compiled = io.BytesIO()
    write_mo(compiled, messages)
    compiled.seek(0)
    return Translations(compiled)


# This request's catalog, looked up once: a page calls gettext a few hundred times, and
# Flask-Babel's own lookup goes through its request context (several proxies) on every call.
# Reset before every request (see install), filled on the first call.
_page_catalog: ContextVar[Translations | None] = ContextVar("page_catalog", default=None)


def _forget_page_catalog() -> None:
    _page_catalog.set(None)


def page_translations() -> Translations:
    translations = _page_catalog.get()
    if translations is None:
        translations = catalog(current_language())
        _page_catalog.set(translations)
    return translations


def _fill(eval_context, translated: str, variables: dict) -> str:
    """Jinja's "newstyle" gettext: the variables go into the translated text (which may hold
    markup of its own) escaped when the template autoescapes. Numbers need no escaping, and
    only text needs it, so only text is escaped (far cheaper than ``Markup.__mod__``)."""
    if not eval_context.autoescape:
        return translated % variables
    safe = {
        name: value if isinstance(value, int | float) else escape(value)
        for name, value in variables.items()
    }
    # The catalogs' own text, trusted like a template's; every variable is escaped above.
    return Markup(translated % safe)  # noqa: S704


@pass_eval_context
def template_gettext(eval_context, message: str, **variables) -> str:
    """``_()`` and ``gettext()`` in templates; a message without variables is not formatted,
    so it writes a percent sign as itself."""
    translated = page_translations().gettext(message)
    if not variables:
        return Markup(translated) if eval_context.autoescape else translated  # noqa: S704
    return _fill(eval_context, translated, variables)


@pass_eval_context
def template_ngettext(eval_context, singular: str, plural: str, num: int, **variables) -> str:
    translated = page_translations().ngettext(singular, plural, num)
    return _fill(eval_context, translated, {"num": num, **variables})


class SourceCatalogs(Domain):
    """The message domain read from the ``.po`` sources (see :func:`catalog`)."""

    def get_translations(self):
        return page_translations()


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
        try:
            locale = db().exec(select(User.locale).where(User.id == viewer.user_id)).first()
        except (OperationalError, InterfaceError):
            # The database-away page itself: the person's setting cannot be read, the
            # request's own choices still can.
            locale = None
        if _supported(locale):
            return _supported(locale)
    return request.accept_languages.best_match(list(LANGUAGES)) or DEFAULT_LANGUAGE


def label(word: str) -> str:
    return page_translations().gettext(word) if word in LABELS else word


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
    app.before_request(_forget_page_catalog)
    app.jinja_env.globals.update(
        _=template_gettext,
        gettext=template_gettext,
        ngettext=template_ngettext,
        page_languages=LANGUAGES,
        current_language=current_language,
        html_lang=lambda: HTML_LANG[current_language()],
        language_url=language_url,
        label=label,
    )
