"""The web blueprint: who is signed in, CSRF checks, security headers (its error pages:
market/web/error_pages.py).

Pages are server-rendered from the same domain functions the JSON API calls (the domains'
services, queries and installs); each domain's ``views`` module adds its pages to ``bp``, and
nothing here goes over HTTP to the API.
"""

from __future__ import annotations

from apiflask import APIBlueprint
from flask import g, request

from market.web import signin

# An APIBlueprint only because APIFlask expects every blueprint to say whether it belongs in
# the OpenAPI document: pages do not.
bp = APIBlueprint("web", __name__, template_folder="templates", enable_openapi=False)

# Every page: scripts and styles only from our own files (no inline code, no CDN), frames
# only our own preview path, never framed by anyone else.
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; frame-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


# Pages shown alike to every anonymous reader in a language: the catalog's, which change only
# with the catalog (announced to every worker) or slowly (counts, ratings). An anonymous
# request for one is answered from the read cache as the JSON API's catalog reads are
# (market/platform/read_cache.py); a page that shows or asks anything of its reader is not here.
SHARED_PAGES: set[str] = set()


def shared_page(view):
    """Marks a page view as one of ``SHARED_PAGES`` (below its route decorator)."""
    SHARED_PAGES.add(f"{bp.name}.{view.__name__}")
    return view


@bp.before_request
def _before():
    # Cookie sign-in is honoured on web pages only: the JSON API stays bearer-token only, so
    # a cross-site form can never spend a browser's session on an API write.
    # The page's limit was spent before (market/platform/limits.py), which looked the session
    # up when the page has one.
    signin.page_principal()
    if request.method == "POST":
        signin.check_csrf()


@bp.after_request
def _headers(response):
    response.headers.setdefault("Content-Security-Policy", PAGE_CSP)
    response.headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    response.headers.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
    if g.get("session_principal") is not None or signin.has_session():
        # What a signed-in person sees is theirs: never stored by shared caches.
        response.headers["Cache-Control"] = "private, no-store"
        response.vary.add("Cookie")
    return response


@bp.context_processor
def _template_context():
    return {"viewer": g.get("session_principal")}
