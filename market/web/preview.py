"""Previews of a bundle: its files served under ``/preview/<ticket>/`` for a sandboxed iframe.

Bundles are code written by a coding agent for strangers, so a preview runs it where it can
reach nothing:

- the iframe has ``sandbox="allow-scripts allow-forms"`` and never ``allow-same-origin``, and
  every preview response repeats that as a CSP ``sandbox`` directive, so even opened directly
  the document gets an opaque origin: no cookies, no storage of this site, no access to the
  page around it, no top-level navigation, no popups;
- its forms work, but nothing is ever submitted: ``allow-forms`` lets a form fire its
  ``submit`` event (without it the browser drops the submission before any handler runs, and
  every "Add" button does nothing), the app's handler does the work in the frame and cancels
  the submission, and ``form-action 'none'`` blocks any submission a handler lets through,
  to any address, this site and the frame's own included (the browser checks it only after
  the ``submit`` event, so handlers still run);
- ``connect-src 'none'`` and ``default-src 'none'``: it cannot call home or load anything but
  its own files (and our small shim, ``preview-shim.js``, which also tells the app it runs in
  a preview, so a part that needs the network can say "works once imported" rather than
  "offline"); the page around it names the hosts the app would talk to
  (:func:`described_hosts`);
- it is framed only by our own pages (``frame-ancestors 'self'``), and never served as the
  page itself (see ``_refusal_unless_framed``): a sandboxed document may still navigate its
  own tab, so one opened at the top could send the visitor anywhere from our address.

A sandboxed document sends no cookies with its sub-requests (its origin is opaque), so access
is carried by the URL: a signed, expiring ticket naming the sub-agent, the version and the
viewer, issued by the sub-agent page. Every request asks ``market.identity.access`` again, for that
viewer and the sub-agent's and version's current state, as the bundle download does: a link
issued while the sub-agent was public stops working the moment it is made private, yanked or
quarantined.
"""

from __future__ import annotations

import mimetypes
import re

from flask import Response, current_app, render_template, request, url_for
from itsdangerous import BadSignature, URLSafeTimedSerializer

from market.catalog import services as catalog
from market.catalog.models import SubAgent, Version
from market.identity.access import can_read_files
from market.identity.models import User
from market.identity.tokens import ANONYMOUS, Principal, principal_for_user
from market.platform.api_deps import db
from market.platform.errors import NotFound
from market.web.blueprint import bp

TICKET_SECONDS = 6 * 3600
_SALT = "sprig-preview"

PREVIEW_CSP = (
    "sandbox allow-scripts allow-forms; default-src 'none'; script-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
    "media-src 'self' data: blob:; connect-src 'none'; form-action 'none'; base-uri 'none'; "
    "frame-ancestors 'self'"
)
_TEXT_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".md": "text/markdown"}
# What the browser says a request is for (Fetch Metadata): a frame's document.
_FRAMED_DESTINATIONS = frozenset({"iframe", "frame"})
_HEAD = re.compile(r"<head(\s[^>]*)?>", re.IGNORECASE)
SHIM_SCRIPT = '<script src="/static/web/preview-shim.js"></script>'

# What the well-known public APIs that sub-agents call serve, in the words of the preview's
# note ("fetches data from api.open-meteo.com (the weather)"); any other host is named alone.
HOST_PURPOSES = {
    "api.open-meteo.com": "the weather",
    "api.frankfurter.app": "exchange rates",
    "world.openfoodfacts.org": "product names for barcodes",
    "date.nager.at": "public holidays",
}


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt=_SALT)


def url_for_version(viewer: Principal, subagent_id: int, version: Version) -> str:
    ticket = _serializer().dumps([subagent_id, version.id, viewer.user_id])
    entry = version.manifest.get("entry") or "index.html"
    return url_for("web.preview_file", ticket=ticket, path=entry)


def described_hosts(hosts: list[str]) -> list[tuple[str, str | None]]:
    """(host, what it serves or None) for each host a manifest lists, for the note above a
    preview: previews run offline, so whatever comes from these is missing there."""
    return [(host, HOST_PURPOSES.get(host)) for host in hosts]


def _with_preview_shim(html: str) -> str:
    """An opaque origin has no localStorage (reading it throws), and the apps keep their logs
    there: give the preview an in-memory one, loaded before the app's own scripts (with the
    flag that tells the app it is a preview)."""
    match = _HEAD.search(html)
    if match is None:
        return SHIM_SCRIPT + html
    return html[: match.end()] + SHIM_SCRIPT + html[match.end() :]


def _mimetype(path: str) -> str:
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path else ""
    return _TEXT_TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "text/plain"


def _runs_as_a_page(mimetype: str) -> bool:
    """HTML, SVG and XML documents run their scripts when a browser opens them."""
    return mimetype == "text/html" or mimetype.endswith(("/xml", "+xml"))


def _read_ticket(ticket: str) -> tuple[int, int, int | None] | None:
    """(sub-agent id, version id, viewer's user id or None) from a valid, unexpired ticket."""
    try:
        subagent_id, version_id, viewer_id = _serializer().loads(ticket, max_age=TICKET_SECONDS)
        return int(subagent_id), int(version_id), None if viewer_id is None else int(viewer_id)
    except (BadSignature, ValueError, TypeError):
        return None


def _refusal_unless_framed(ticket: str, path: str) -> Response | None:
    """A small page linking to the sub-agent instead of the file, when the browser asks for a
    preview file as the page itself rather than inside a frame of ours; else None.

    Browsers name what a request is for in ``Sec-Fetch-Dest``: ``iframe`` (or ``frame``) for
    the preview in the sub-agent page, ``script``, ``style``, ``image``… for the files it loads,
    ``document`` for the top page. A file asked for as ``document`` is refused. Browsers send
    the header only to HTTPS and loopback sites (and Safari only since 16.4), so without it a
    file that would run as a page is refused too: no preview there, but no way around this
    check by leaving the header out. The refusal names no bundle content.
    """
    destination = request.headers.get("Sec-Fetch-Dest")
    if destination in _FRAMED_DESTINATIONS:
        return None
    if destination is not None and destination != "document":
        return None
    if destination is None and not _runs_as_a_page(_mimetype(path)):
        return None
    fields = _read_ticket(ticket)
    if fields is None:
        back = url_for("web.browse_page")
    else:
        back = url_for("web.subagent_page", subagent_id=fields[0])
    response = Response(render_template("web/preview_unframed.html", back=back), status=403)
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/preview/<ticket>/<path:path>")
def preview_file(ticket: str, path: str):
    refusal = _refusal_unless_framed(ticket, path)
    if refusal is not None:
        return refusal
    fields = _read_ticket(ticket)
    if fields is None:
        raise NotFound("This preview link expired; reload the page.")
    subagent_id, version_id, viewer_id = fields
    session = db()
    subagent = session.get(SubAgent, subagent_id)
    version = session.get(Version, version_id)
    viewer = ANONYMOUS
    if viewer_id is not None:
        user = session.get(User, viewer_id)
        viewer = principal_for_user(user) if user is not None else None
    if (
        subagent is None
        or version is None
        or viewer is None
        or version.subagent_id != subagent.id
        or not can_read_files(session, viewer, subagent, version)
    ):
        raise NotFound("Nothing to preview here.")
    bundle = catalog.load_bundle(session, version)
    content = bundle.files.get(path)
    if content is None:
        raise NotFound(f"The bundle has no file {path!r}.")
    mimetype = _mimetype(path)
    if mimetype == "text/html":
        content = _with_preview_shim(content)
    response = Response(content, mimetype=mimetype)
    response.headers["Content-Security-Policy"] = PREVIEW_CSP
    response.headers["X-Frame-Options"] = "SAMEORIGIN"
    response.headers["Referrer-Policy"] = "no-referrer"
    # Asked again on every load: the files never change, but whether this viewer may still
    # read them does (the sub-agent made private, yanked or quarantined since).
    response.headers["Cache-Control"] = "private, no-cache"
    # A copy cached for a frame is never reused for the same URL opened as the page.
    response.vary.add("Sec-Fetch-Dest")
    return response
