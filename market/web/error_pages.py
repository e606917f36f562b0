"""Error pages: what a person browsing sees when a page cannot be shown, in their language.

The API answers every error with a problem document (market/platform/problems.py). A person
browsing gets this page instead, through those same handlers' ``browser_page`` hook (one place
decides, for pages and API alike): for any error a page raises (a domain error, the database
away, a crash) and for an address no route serves when the browser asks for HTML (a mistyped
or stale link).

The title and what to do next are the page's, in the reader's language (market/web/i18n.py).
The server's own message is the API's English sentence: English readers see it as it is, and
the others find it folded under "Details (in English)" (it names the exact field or limit,
which a bug report needs; translating every service message is not worth what it costs).
"""

from __future__ import annotations

from flask import g, make_response, render_template, request
from flask_babel import gettext

from market.platform.api import API_PREFIX
from market.platform.translation import N_
from market.web import signin
from market.web.blueprint import PAGE_CSP, bp
from market.web.i18n import current_language

# Each status a page may answer with: its title and what the reader can do about it.
STATUS_TEXTS = {
    400: (
        N_("Bad request"),
        N_("Something in this address or form could not be used. Go back, check it and try again."),
    ),
    401: (N_("Authentication required"), N_("Sign in to see this page.")),
    403: (N_("Forbidden"), N_("Your account may not do this.")),
    404: (
        N_("Not found"),
        N_("There is nothing at this address, or it is not shared with you."),
    ),
    405: (
        N_("Method not allowed"),
        N_("This address cannot be used that way: open it as a link instead."),
    ),
    409: (
        N_("Conflict"),
        N_("This changed while you were working on it. Reload the page and try again."),
    ),
    413: (N_("Payload too large"), N_("What you sent is larger than Sprig accepts.")),
    414: (N_("URI too long"), N_("This address is too long to open.")),
    415: (N_("Unsupported media type"), N_("What you sent is in a format Sprig does not read.")),
    422: (
        N_("Unprocessable content"),
        N_("Some of what you entered could not be accepted. Go back, check it and try again."),
    ),
    429: (N_("Too many requests"), N_("You have done this too often for now.")),
    500: (
        N_("Something went wrong"),
        N_("Sprig could not show this page. It is not your fault: try again in a moment."),
    ),
    503: (N_("Service unavailable"), N_("Sprig is briefly unavailable. Try again in a moment.")),
}
OTHER_STATUS = (N_("Error"), N_("This page cannot be shown."))


def _retry_seconds(headers: dict) -> int | None:
    """The wait a 429 or 503 names in its Retry-After (always seconds here: market/platform)."""
    value = str(headers.get("Retry-After", ""))
    return int(value) if value.isdigit() else None


def error_page(status: int, detail: str | None, headers: dict | None = None):
    """The error page of ``status`` in the reader's language, with ``headers`` kept
    (Retry-After, Allow). ``detail`` is the server's English message, None when it would only
    repeat the page's own words (werkzeug's generic descriptions)."""
    headers = dict(headers or {})
    title, advice = STATUS_TEXTS.get(status, OTHER_STATUS)
    page = render_template(
        "web/error.html",
        status=status,
        title=gettext(title),
        advice=gettext(advice),
        retry_seconds=_retry_seconds(headers),
        detail=detail,
        detail_folded=current_language() != "en",
        # Set by the web blueprint's hooks; an address no route serves did not run them.
        viewer=g.get("session_principal"),
    )
    response = make_response(page, status, headers)
    response.vary.update(("Accept-Language", "Cookie"))
    return response


def browsing() -> bool:
    """Whether a person's browser made this request: a page's route, or an address no route
    serves asked for by a client that prefers HTML to JSON (API clients and the MCP client
    ask for JSON or anything, and keep their problem documents). An address under the API is
    never a page, even in a browser: a developer trying the API there reads the problem."""
    if request.blueprint == bp.name:
        return True
    if request.url_rule is not None or request.path.startswith(f"{API_PREFIX}/"):
        return False
    accepted = request.accept_mimetypes
    return accepted.best_match(("application/json", "text/html")) == "text/html"


def browser_page(status: int, detail: str | None, headers: dict | None = None):
    """The problem handlers' hook (market/platform/problems.py): this error as a page when a
    person is browsing, else None (the problem document)."""
    if not browsing():
        return None
    if status >= 500:
        # A crash may leave the request's transaction broken: the page's own reads (the
        # reader's locale) start on a clean one.
        unit = g.get("unit_of_work")
        if unit is not None:
            unit.rollback()
    else:
        # Show who is signed in, in their language, also at an address no page serves (no
        # page hook looked the session up).
        signin.page_principal()
    response = error_page(status, detail, headers)
    if request.blueprint != bp.name:
        # The web blueprint's own headers were not added: its CSP lets the page load its
        # stylesheet, and the answer was chosen by the Accept header.
        response.headers["Content-Security-Policy"] = PAGE_CSP
        response.vary.add("Accept")
    return response
