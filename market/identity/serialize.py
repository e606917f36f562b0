"""Token rows to their response model, for the API and `sprig tokens … --json`."""

from __future__ import annotations

from market.identity.models import ApiToken
from market.identity.schemas import TokenOut
from market.identity.tokens import token_state
from market.platform.time import utcnow


def token_out(row: ApiToken, current_token_id: int | None = None) -> TokenOut:
    return TokenOut(
        id=row.id,
        prefix=row.prefix,
        name=row.name,
        scopes=row.scopes.split(),
        state=token_state(row, utcnow()),
        current=row.id == current_token_id,
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
    )
