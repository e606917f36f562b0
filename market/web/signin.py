"""Web sign-in: a server-side session per sign-in, named by a random key in Flask's signed
cookie, and the CSRF token of every form.

The cookie never holds an API token: it holds the key of a ``web_session`` row (the table
stores only the key's SHA-256), and every web request looks that row up again. Signing out
ends the row, so a copy of the cookie taken before signs no one in afterwards; a token
sign-in also ends when its token is revoked or expires, and the token's scopes still apply.
The embedded demo's picker makes sessions without a token, honoured only while
``demo_signin`` is on.
"""

from __future__ import annotations

import hmac
import secrets
import unicodedata
from datetime import datetime, timedelta
from urllib.parse import urljoin, urlsplit

from flask import g, request, session, url_for
from sqlalchemy import bindparam, update
from sqlmodel import select

from market.identity.models import ApiToken, User, WebSession
from market.identity.tokens import (
    Principal,
    caller,
    checked_live_token,
    hash_token,
    live_clause,
    principal_for_api_token,
    principal_for_user,
)
from market.platform.api_deps import commit, db
from market.platform.errors import BadRequest, Forbidden, Unauthorized
from market.platform.state import app_state
from market.platform.time import utcnow

# Idle sessions end this long after their last use (the cookie's own lifetime is the same).
SESSION_LIFETIME = timedelta(days=14)
# A session's last use is written when it is older than this, not on every request.
LAST_SEEN_EVERY = timedelta(minutes=5)
_AUTH_KEY = "auth"
_CSRF_KEY = "csrf"

# Built once: one lookup by the unique key hash per web request that carries a session.
_LIVE_SESSION = (
    select(
        WebSession,
        User,
        ApiToken,
        (WebSession.last_seen_at < bindparam("seen_before")).label("stale"),
        live_clause(bindparam("now")).label("token_live"),
    )
    .join(User, User.id == WebSession.user_id)
    .outerjoin(ApiToken, ApiToken.id == WebSession.api_token_id)
    .where(
        WebSession.key_hash == bindparam("key_hash"),
        WebSession.ended_at.is_(None),
        WebSession.expires_at > bindparam("now"),
    )
)


def has_session() -> bool:
    return _AUTH_KEY in session


def demo_signin_enabled() -> bool:
    return app_state().settings.demo_signin


def _cookie_key() -> str | None:
    auth = session.get(_AUTH_KEY)
    key = auth.get("key") if isinstance(auth, dict) else None
    return key if isinstance(key, str) else None


def session_principal() -> Principal | None:
    """Who the session cookie signs in, or None. A session that was ended (signed out),
    expired, made from a token since revoked or expired, or by the demo picker while the demo is off
    signs no one in, and the cookie's sign-in is dropped."""
    key = _cookie_key()
    if key is None:
        session.pop(_AUTH_KEY, None)
        return None
    now = utcnow()
    row = (
        db()
        .exec(
            _LIVE_SESSION,
            params={
                "key_hash": hash_token(key),
                "now": now,
                "seen_before": now - LAST_SEEN_EVERY,
            },
        )
        .first()
    )
    principal = None
    if row is not None:
        web_session, user, api_token, stale, token_live = row
        if web_session.api_token_id is not None:
            if api_token is not None and token_live:
                principal = principal_for_api_token(user, api_token)
        elif demo_signin_enabled() and user.kind == "person":
            principal = principal_for_user(user)
        if principal is not None and stale:
            _note_use(web_session.id, now)
    if principal is None:
        session.pop(_AUTH_KEY, None)
    return principal


def page_principal() -> Principal | None:
    """:func:`session_principal`, looked up once per request (kept in ``g``)."""
    if "session_principal" not in g:
        g.session_principal = session_principal()
    return g.session_principal


def request_caller() -> Principal:
    """Who makes the request (``caller``), with a page's session looked up first: what the
    app-wide hooks (the endpoint limits) ask before the web blueprint's own hook has run."""
    if request.blueprint == "web":
        page_principal()
    return caller()


def _note_use(web_session_id: int, now: datetime) -> None:
    """Record the session's use and slide its expiry. On a connection of its own to the
    writing engine: GET requests read on autocommit connections and never commit."""
    with app_state().unit_of_work() as writer:
        writer.session.exec(
            update(WebSession)
            .where(WebSession.id == web_session_id, WebSession.ended_at.is_(None))
            .values(last_seen_at=now, expires_at=now + SESSION_LIFETIME)
        )
        writer.commit()


def sign_in_with_token(token: str) -> Principal:
    try:
        api_token, user = checked_live_token(token)
    except Unauthorized:
        raise Unauthorized("That token is unknown, expired, revoked or mistyped.") from None
    if user.kind != "person":
        raise Forbidden("Service tokens are for the API; sign in with a person's token.")
    _start_session(user.id, api_token.id)
    return principal_for_api_token(user, api_token)


def sign_in_demo_user(handle: str) -> Principal:
    if not demo_signin_enabled():
        raise Forbidden("The demo sign-in is only available in the embedded demo.")
    user = db().exec(select(User).where(User.handle == handle)).first()
    if user is None or user.kind != "person":
        raise BadRequest("Pick one of the demo people.")
    _start_session(user.id, None)
    return principal_for_user(user)


def _start_session(user_id: int, api_token_id: int | None) -> None:
    # A new session on every sign-in: the one this browser had before ends, and a CSRF token
    # seen before signing in is not reused.
    _end_session()
    key = secrets.token_urlsafe(32)
    now = utcnow()
    db().add(
        WebSession(
            key_hash=hash_token(key),
            user_id=user_id,
            api_token_id=api_token_id,
            created_at=now,
            last_seen_at=now,
            expires_at=now + SESSION_LIFETIME,
        )
    )
    commit()
    session.clear()
    session[_AUTH_KEY] = {"key": key}
    session[_CSRF_KEY] = secrets.token_urlsafe(32)
    session.permanent = True


def _end_session() -> None:
    key = _cookie_key()
    if key is not None:
        db().exec(
            update(WebSession)
            .where(WebSession.key_hash == hash_token(key), WebSession.ended_at.is_(None))
            .values(ended_at=utcnow())
        )


def sign_out() -> None:
    """Ends the session on the server, so every copy of the cookie is signed out."""
    _end_session()
    commit()
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
