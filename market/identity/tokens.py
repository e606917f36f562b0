"""API tokens and the principal behind a request.

Tokens are ``sprig_`` + 43 url-safe characters (256 random bits); only their SHA-256 is
stored. Scopes limit what a token may do; service scopes are never granted to people.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from flask import g, has_request_context, request
from sqlmodel import Session, select

from evolution.language import locale_language
from market.identity.models import ApiToken, User
from market.platform.api_deps import db
from market.platform.errors import BadRequest, Forbidden, Unauthorized
from market.platform.time import utcnow

TOKEN_PREFIX = "sprig_"  # noqa: S105 - a public prefix, not a secret

PERSON_SCOPES = frozenset({"publish", "install", "request", "feedback"})
SERVICE_SCOPES = frozenset(
    {"events:write", "recommend", "suggest", "publish:on-behalf", "feedback:on-behalf", "exports"}
)
ALL_SCOPES = PERSON_SCOPES | SERVICE_SCOPES


@dataclass(frozen=True)
class Principal:
    """Who is calling. ``user_id`` is None for anonymous callers."""

    user_id: int | None = None
    handle: str | None = None
    kind: str = "anonymous"  # anonymous | person | service
    role: str = "user"
    scopes: frozenset[str] = frozenset()

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


def issue_token(
    session: Session, user: User, scopes: list[str] | None = None, name: str = ""
) -> str:
    """Create a token for ``user`` and return it in clear text (the only time it exists)."""
    wanted = frozenset(scopes) if scopes else default_scopes(user.kind)
    unknown = wanted - ALL_SCOPES
    if unknown:
        raise BadRequest(f"Unknown scopes: {', '.join(sorted(unknown))}.")
    if user.kind == "person" and wanted & SERVICE_SCOPES:
        raise BadRequest(
            "Service scopes are only for service accounts: "
            + ", ".join(sorted(wanted & SERVICE_SCOPES))
        )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ApiToken(
            user_id=user.id,
            token_hash=hash_token(token),
            prefix=token[: len(TOKEN_PREFIX) + 4],
            name=name,
            scopes=" ".join(sorted(wanted)),
        )
    )
    session.flush()
    return token


def live_token(session: Session, token: str) -> tuple[ApiToken, User]:
    """The unrevoked token row and its owner, or Unauthorized."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        raise Unauthorized("The token is malformed.")
    row = session.exec(
        select(ApiToken, User)
        .join(User, User.id == ApiToken.user_id)
        .where(ApiToken.token_hash == hash_token(token))
    ).first()
    if row is None or row[0].revoked_at is not None:
        raise Unauthorized("The token is unknown or revoked.")
    return row


def principal_for_token(session: Session, token: str) -> Principal:
    api_token, user = live_token(session, token)
    return principal_for_user(user, frozenset(api_token.scopes.split()))


def principal_for_user(user: User, scopes: frozenset[str] | None = None) -> Principal:
    return Principal(
        user_id=user.id,
        handle=user.handle,
        kind=user.kind,
        role=user.role,
        scopes=default_scopes(user.kind) if scopes is None else scopes,
    )


def revoke_token(session: Session, token: str) -> bool:
    api_token = session.exec(
        select(ApiToken).where(ApiToken.token_hash == hash_token(token))
    ).first()
    if api_token is None or api_token.revoked_at is not None:
        return False
    api_token.revoked_at = utcnow()
    session.add(api_token)
    return True


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
            principal = principal_for_token(db(), token.strip())
        g.principal = principal
    return principal


def reader_language(session: Session, viewer: Principal) -> str | None:
    """The language the caller reads (``evolution.language.locale_language``): the first one
    its request accepts (Accept-Language), else the signed-in person's locale; None when
    neither says."""
    accepted = request.accept_languages.best if has_request_context() else None
    if accepted and accepted != "*":
        return locale_language(accepted)
    if viewer.user_id is None:
        return None
    locale = session.exec(select(User.locale).where(User.id == viewer.user_id)).first()
    return locale_language(locale)
