"""Web sign-in kept in Flask's signed session cookie, and the CSRF token of every form.

The cookie never holds a token: after a token sign-in it holds the token's SHA-256 (what the
database stores anyway), and every request looks that up again, so revoking the token signs
the browser out too and the token's scopes still apply. The embedded demo's picker stores a
user id instead, honoured only while ``demo_signin`` is on.
"""

from __future__ import annotations

import hmac
import secrets
import unicodedata
from datetime import timedelta
from urllib.parse import urljoin, urlsplit

from flask import current_app, request, session, url_for
from sqlmodel import select

from market.api.deps import db
from market.auth import Principal, hash_token, principal_for_token, principal_for_user
from market.errors import BadRequest, Forbidden, Unauthorized
from market.models import ApiToken, User

SESSION_LIFETIME = timedelta(days=14)
_AUTH_KEY = "auth"
_CSRF_KEY = "csrf"


def has_session() -> bool:
    return _AUTH_KEY in session


def demo_signin_enabled() -> bool:
    return current_app.extensions["sprig.settings"].demo_signin


def session_principal() -> Principal | None:
    """Who the session cookie signs in, or None. A revoked token or an unknown user clears it."""
    auth = session.get(_AUTH_KEY)
    if not isinstance(auth, dict):
        return None
    principal = None
    if isinstance(auth.get("token_hash"), str):
        row = (
            db()
            .exec(
                select(ApiToken, User)
                .join(User, User.id == ApiToken.user_id)
                .where(ApiToken.token_hash == auth["token_hash"], ApiToken.revoked_at.is_(None))
            )
            .first()
        )
        if row is not None:
            api_token, user = row
            principal = principal_for_user(user, frozenset(api_token.scopes.split()))
    elif isinstance(auth.get("demo_user_id"), int) and demo_signin_enabled():
        user = db().get(User, auth["demo_user_id"])
        if user is not None and user.kind == "person":
            principal = principal_for_user(user)
    if principal is None:
        session.pop(_AUTH_KEY, None)
    return principal


def sign_in_with_token(token: str) -> Principal:
    token = token.strip()
    try:
        principal = principal_for_token(db(), token)
    except Unauthorized:
        raise Unauthorized("That token is unknown, revoked or mistyped.") from None
    if principal.kind != "person":
        raise Forbidden("Service tokens are for the API; sign in with a person's token.")
    _start_session({"token_hash": hash_token(token)})
    return principal


def sign_in_demo_user(handle: str) -> Principal:
    if not demo_signin_enabled():
        raise Forbidden("The demo sign-in is only available in the embedded demo.")
    user = db().exec(select(User).where(User.handle == handle)).first()
    if user is None or user.kind != "person":
        raise BadRequest("Pick one of the demo people.")
    _start_session({"demo_user_id": user.id})
    return principal_for_user(user)


def _start_session(auth: dict) -> None:
    # A new session on every sign-in: a CSRF token seen before signing in is not reused.
    session.clear()
    session[_AUTH_KEY] = auth
    session[_CSRF_KEY] = secrets.token_urlsafe(32)
    session.permanent = True


def sign_out() -> None:
    session.clear()


def same_site_path(target: str | None) -> str:
    r"""Where a browser may be sent back to (a ``next`` after sign-in): ``target`` when it is
    a path on this site, else browse. No open redirect.

    Browsers repair a Location before following it: they drop tabs and newlines anywhere,
    trim spaces and control characters at the ends and read a backslash as a slash, so
    ``/\t/evil.example`` is followed as ``//evil.example``, another host. So the target is
    refused unless it is already clean of all that: only visible characters (no control,
    format or space characters of any script), no backslash, starting with exactly one ``/``,
    with no empty or dot segment in its path; and resolved against this site it must stay on
    this site.
    """
    fallback = url_for("web.browse_page")
    if not target or not target.startswith("/") or "\\" in target:
        return fallback
    if any(unicodedata.category(ch)[0] in "CZ" for ch in target):
        return fallback
    path = target.split("#", 1)[0].split("?", 1)[0]
    segments = path.split("/")[1:]
    if "" in segments[:-1] or any(s in (".", "..") for s in segments):
        return fallback
    here = urlsplit(request.host_url)
    there = urlsplit(urljoin(request.host_url, target))
    if (there.scheme, there.netloc) != (here.scheme, here.netloc):
        return fallback
    return target


def csrf_token() -> str:
    """The session's CSRF token (made on first use; forms embed it in a hidden field)."""
    token = session.get(_CSRF_KEY)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        session[_CSRF_KEY] = token
    return token


def check_csrf() -> None:
    """Every web POST carries the session's token, and comes from this site when the browser
    says where it comes from (SameSite=Lax cookies already stop most cross-site posts)."""
    origin = request.headers.get("Origin")
    # "null" (a sandboxed frame, a privacy redirect) is refused too: real forms here never
    # send it.
    if origin and urlsplit(origin).netloc != request.host:
        raise Forbidden("This form was sent from another site.")
    expected = session.get(_CSRF_KEY)
    sent = request.form.get(_CSRF_KEY, "")
    if not isinstance(expected, str) or not hmac.compare_digest(expected, sent):
        raise BadRequest("The form expired or did not come from this site; reload and retry.")
