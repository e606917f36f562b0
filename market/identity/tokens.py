"""API tokens and the principal behind a request.

Tokens are ``sprig_`` + 43 url-safe characters (256 random bits); only their SHA-256 is
stored. Scopes limit what a token may do; service scopes are never granted to people. A token
works until it is revoked or its ``expires_at`` passes (new tokens get the lifetime the
settings give their owner's kind); :func:`live_clause` is the one definition of "still works".
Tokens are listed and revoked by their row id, never by anything derived from the secret.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flask import g, has_app_context, has_request_context, request
from sqlalchemy import and_, or_, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, select
from werkzeug.datastructures import LanguageAccept
from werkzeug.http import parse_accept_header

from evolution.language import locale_language
from market.identity.models import ApiToken, User
from market.platform import limits
from market.platform.api_deps import db
from market.platform.config import Settings, load_settings
from market.platform.db import begin_writing
from market.platform.errors import BadRequest, Forbidden, NotFound, Unauthorized
from market.platform.pagination import newest_first_page
from market.platform.state import app_state
from market.platform.time import utcnow

log = logging.getLogger(__name__)

TOKEN_PREFIX = "sprig_"  # noqa: S105 - a public prefix, not a secret

METRICS_SCOPE = "metrics:read"
PERSON_SCOPES = frozenset({"publish", "install", "request", "feedback"})
SERVICE_SCOPES = frozenset(
    {
        "events:write",
        "recommend",
        "suggest",
        "publish:on-behalf",
        "feedback:on-behalf",
        "exports",
        METRICS_SCOPE,
    }
)
ALL_SCOPES = PERSON_SCOPES | SERVICE_SCOPES
# A token's last use is written when the recorded one is older than this, not on every call.
LAST_USED_EVERY = timedelta(minutes=5)


@dataclass(frozen=True)
class Principal:
    """Who is calling. ``user_id`` is None for anonymous callers."""

    user_id: int | None = None
    handle: str | None = None
    kind: str = "anonymous"  # anonymous | person | service
    role: str = "user"
    scopes: frozenset[str] = frozenset()
    # The API token the caller authenticated with (None for the demo picker and anonymous).
    token_id: int | None = None

    @property
    def is_authenticated(self) -> bool:
        return self.user_id is not None

    @property
    def is_moderator(self) -> bool:
        return self.role == "moderator"

    def require(self, scope: str | None = None) -> None:
        if not self.is_authenticated:
            raise Unauthorized("This needs a token: send `Authorization: Bearer <token>`.")
        if scope is not None and scope not in self.scopes:
            raise Forbidden(f"This token lacks the `{scope}` scope.")


ANONYMOUS = Principal()


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def default_scopes(kind: str) -> frozenset[str]:
    return PERSON_SCOPES if kind == "person" else frozenset()


def default_lifetime_days(kind: str, settings: Settings | None = None) -> int:
    """Days a new token of a ``kind`` owner works (0: never expires), from ``settings``, else
    the running app's, else the environment's."""
    if settings is None:
        settings = app_state().settings if has_app_context() else load_settings()
    return settings.person_token_days if kind == "person" else settings.service_token_days


@dataclass(frozen=True)
class NewToken:
    """A token just made: its secret, shown once, and its row (listed by ``row.id``)."""

    secret: str
    row: ApiToken


def create_token(
    session: Session,
    user: User,
    scopes: list[str] | None = None,
    name: str = "",
    *,
    lifetime_days: int | None = None,
) -> NewToken:
    """Create a token for ``user``. ``lifetime_days``: None for the default of the owner's
    kind (:func:`default_lifetime_days`), 0 for a token that never expires."""
    wanted = frozenset(scopes) if scopes else default_scopes(user.kind)
    unknown = wanted - ALL_SCOPES
    if unknown:
        raise BadRequest(f"Unknown scopes: {', '.join(sorted(unknown))}.")
    if user.kind == "person" and wanted & SERVICE_SCOPES:
        raise BadRequest(
            "Service scopes are only for service accounts: "
            + ", ".join(sorted(wanted & SERVICE_SCOPES))
        )
    if lifetime_days is None:
        lifetime_days = default_lifetime_days(user.kind)
    if lifetime_days < 0:
        raise BadRequest("A token's lifetime is a number of days, 0 for no expiry.")
    now = utcnow()
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(
        user_id=user.id,
        token_hash=hash_token(token),
        prefix=token[: len(TOKEN_PREFIX) + 4],
        name=name,
        scopes=" ".join(sorted(wanted)),
        created_at=now,
        expires_at=now + timedelta(days=lifetime_days) if lifetime_days else None,
    )
    session.add(row)
    session.flush()
    return NewToken(token, row)


def issue_token(
    session: Session, user: User, scopes: list[str] | None = None, name: str = ""
) -> str:
    """Create a token for ``user`` with the default lifetime and return it in clear text (the
    only time it exists)."""
    return create_token(session, user, scopes, name).secret


def live_clause(now: datetime | ColumnElement) -> ColumnElement[bool]:
    """SQL: the token row still works at ``now`` (neither revoked nor expired)."""
    return and_(
        ApiToken.revoked_at.is_(None),
        or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now),
    )


def token_state(api_token: ApiToken, now: datetime) -> str:
    """``active``, ``expired`` or ``revoked``, as :func:`live_clause` decides it in SQL."""
    if api_token.revoked_at is not None:
        return "revoked"
    if api_token.expires_at is not None and _utc(api_token.expires_at) <= now:
        return "expired"
    return "active"


def _utc(moment: datetime) -> datetime:
    """A stored moment, zone-aware: SQLite hands datetimes back naive, and all are UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def live_token(session: Session, token: str) -> tuple[ApiToken, User]:
    """The token row, unrevoked and unexpired, and its owner, or Unauthorized."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        raise Unauthorized("The token is malformed.")
    row = session.exec(
        select(ApiToken, User)
        .join(User, User.id == ApiToken.user_id)
        .where(ApiToken.token_hash == hash_token(token), live_clause(utcnow()))
    ).first()
    if row is None:
        raise Unauthorized("The token is unknown or revoked, or has expired.")
    return row


def checked_live_token(token: str) -> tuple[ApiToken, User]:
    """:func:`live_token` for a request's client, within its budget of failed checks: an
    address that failed too many is refused before the lookup, and each failure spends one."""
    limits.check_auth_failures()
    try:
        return live_token(db(), token.strip())
    except Unauthorized:
        limits.record_auth_failure()
        raise


def principal_for_token(session: Session, token: str) -> Principal:
    api_token, user = live_token(session, token)
    return principal_for_api_token(user, api_token)


def principal_for_api_token(user: User, api_token: ApiToken) -> Principal:
    return principal_for_user(user, frozenset(api_token.scopes.split()), token_id=api_token.id)


def principal_for_user(
    user: User, scopes: frozenset[str] | None = None, token_id: int | None = None
) -> Principal:
    return Principal(
        user_id=user.id,
        handle=user.handle,
        kind=user.kind,
        role=user.role,
        scopes=default_scopes(user.kind) if scopes is None else scopes,
        token_id=token_id,
    )


def revoke_token(session: Session, token: str) -> bool:
    """Revoke the token whose secret this is (operators and tests hold the secret, not the
    id): True if this call revoked it, False if it was unknown or already revoked."""
    token_id = session.exec(
        select(ApiToken.id).where(ApiToken.token_hash == hash_token(token))
    ).first()
    return token_id is not None and revoke_token_id(session, token_id)


def revoke_token_id(session: Session, token_id: int, owner_id: int | None = None) -> bool:
    """Revoke token ``token_id`` (only if ``owner_id`` owns it, when given): True if this
    call revoked it, False if it already was. One conditional UPDATE, so of two revocations
    at once exactly one changes the row and both answer alike. A token that is not the
    owner's is NotFound, exactly like one that does not exist."""
    mine = ApiToken.id == token_id
    if owner_id is not None:
        mine = and_(mine, ApiToken.user_id == owner_id)
    begin_writing(session)
    changed = session.exec(
        update(ApiToken).where(mine, ApiToken.revoked_at.is_(None)).values(revoked_at=utcnow())
    ).rowcount
    if changed:
        return True
    if session.exec(select(ApiToken.id).where(mine)).first() is None:
        raise NotFound(f"No token {token_id}.")
    return False


@dataclass(frozen=True)
class TokenPage:
    items: list[ApiToken]
    next_cursor: str | None


def list_tokens(
    session: Session, owner_id: int, *, limit: int = 100, cursor: str | None = None
) -> TokenPage:
    """``owner_id``'s tokens, newest first, revoked and expired ones included (they say so)."""
    statement = select(ApiToken).where(ApiToken.user_id == owner_id)
    return TokenPage(
        *newest_first_page(session, statement, ApiToken.id, limit=limit, cursor=cursor)
    )


def last_use_is_stale(last_used_at: datetime | None, now: datetime) -> bool:
    """Whether a token's recorded last use is old enough to write again."""
    return last_used_at is None or _utc(last_used_at) < now - LAST_USED_EVERY


def _note_use(token_id: int, now: datetime) -> None:
    """Record the token's use, at most every LAST_USED_EVERY. On a connection of its own to
    the writing engine: GET requests read on autocommit connections and never commit. Only
    bookkeeping: if the database cannot take the write now (SQLite's writer lock held past
    the busy timeout), the request goes on and a later call records the use."""
    try:
        with app_state().unit_of_work() as writer:
            writer.session.exec(
                update(ApiToken)
                .where(
                    ApiToken.id == token_id,
                    or_(
                        ApiToken.last_used_at.is_(None),
                        ApiToken.last_used_at < now - LAST_USED_EVERY,
                    ),
                )
                .values(last_used_at=now)
            )
            writer.commit()
    except OperationalError as error:
        log.warning("token %s: last use not recorded (%s)", token_id, error.orig)


def require_metrics_reader() -> None:
    """Who may scrape /metrics: a service token with the ``metrics:read`` scope."""
    caller().require(METRICS_SCOPE)


def caller() -> Principal:
    """Who makes the current request: its bearer token's owner, else the person signed in to
    the browser session (pages only), else anonymous. Looked up once per request."""
    principal = g.get("principal")
    if principal is None:
        header = request.headers.get("Authorization", "")
        if not header:
            principal = g.get("session_principal") or ANONYMOUS
        else:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthorized("Use `Authorization: Bearer <token>`.")
            api_token, user = checked_live_token(token)
            principal = principal_for_api_token(user, api_token)
            now = utcnow()
            if last_use_is_stale(api_token.last_used_at, now):
                _note_use(api_token.id, now)
        g.principal = principal
    return principal


def reader_language(
    session: Session, viewer: Principal, accept_language: str | None = None
) -> str | None:
    """The language the caller reads (``evolution.language.locale_language``): the first one
    its Accept-Language accepts, else the signed-in person's locale; None when neither says.
    The header is this request's, or ``accept_language`` where the caller is served outside a
    Flask request (MCP over HTTP hands its request's header here; stdio has none)."""
    if accept_language is None and has_request_context():
        accept_language = request.headers.get("Accept-Language")
    accepted = first_accepted_language(accept_language)
    if accepted is not None:
        return locale_language(accepted)
    if viewer.user_id is None:
        return None
    locale = session.exec(select(User.locale).where(User.id == viewer.user_id)).first()
    return locale_language(locale)


def first_accepted_language(header: str | None) -> str | None:
    """The language tag an Accept-Language header prefers: the highest quality above zero
    (``q=0`` refuses a language), never the wildcard; None for none. A malformed header reads
    as werkzeug parses it (entries it cannot read are dropped), so it can only fall back."""
    if not header:
        return None
    for tag, quality in parse_accept_header(header, LanguageAccept):
        if quality > 0 and tag != "*":
            return tag
    return None
