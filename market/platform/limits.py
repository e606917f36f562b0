"""Rate limits per client: who may publish, fork, search, ask for suggestions and
recommendations, send events, and fail token checks, how often.

Each limit class has one setting, ``rate_limit_<class>`` = ``"<count>/<seconds>"``
(market/platform/config.py). The client is the signed-in user (bearer token, or the web
session on pages), else the client's address; so one person's flood never spends another's
budget, and anonymous callers are held per address. Failed token checks are counted per
address alone (a guess has no user), and once an address is over, its token checks are
refused before the lookup.

Built on this app's own counter (market/platform/ratelimit.py) rather than Flask-Limiter:
- fixed windows are one atomic INCRBY per request in Redis, so racing clients get exactly the
  budget; Flask-Limiter's moving window keeps one Redis list entry per request, which for the
  events budget (millions a minute, counted per event) is memory we will not spend;
- an events batch spends one unit per event, and a token check spends only when it fails: both
  costs known only inside the request, where a decorator-based limiter would need its own
  escape hatches;
- when Redis is away each worker counts alone and requests go on (fail open): a limiter
  outage loosens limits by the number of workers and never takes the market down.
  Flask-Limiter can do that too (``swallow_errors``, an in-memory fallback), but its default
  is to fail the request.
Limit answers are 429 problem documents with ``Retry-After`` (seconds to the window's end).
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask, request
from werkzeug.middleware.proxy_fix import ProxyFix

from market.platform.config import Settings
from market.platform.errors import TooManyRequests
from market.platform.state import app_state

# The endpoints each limit class holds (search: only with a query; events spend per event,
# in their view).
LIMITED_ENDPOINTS = {
    "subagents.publish": "publish",
    "subagents.publish_zip": "publish",
    "subagents.publish_version": "publish",
    "subagents.publish_version_zip": "publish",
    # Accepting an upstream update publishes a version; refreshing one merges it again.
    "subagents.accept_upstream_update": "publish",
    "subagents.refresh_upstream_update": "publish",
    "web.accept_upstream": "publish",
    "web.refresh_upstream": "publish",
    "subagents.fork_subagent": "fork",
    "subagents.fork_subagent_zip": "fork",
    "subagents.request_fork": "fork",
    "web.customize_subagent": "fork",
    "subagents.list_subagents": "search",
    "web.browse_page": "search",
    "suggestions.suggest": "suggestions",
    "recommendations.recommend": "recommendations",
}
LIMIT_CLASSES = (
    "events",
    "publish",
    "fork",
    "search",
    "suggestions",
    "recommendations",
    "auth_failures",
)


@dataclass(frozen=True)
class Limit:
    count: int
    seconds: int


def parse_limit(name: str, text: str) -> Limit | None:
    """``"30/3600"``: 30 per hour; empty: no limit. Anything else is a startup error."""
    if not text.strip():
        return None
    count, _, seconds = text.partition("/")
    try:
        limit = Limit(int(count), int(seconds))
    except ValueError:
        limit = None
    if limit is None or limit.count < 1 or limit.seconds < 1:
        raise ValueError(f"rate_limit_{name} must be '<count>/<seconds>', both ≥ 1: {text!r}")
    return limit


def configured_limits(settings: Settings) -> dict[str, Limit | None]:
    return {
        name: parse_limit(name, getattr(settings, f"rate_limit_{name}")) for name in LIMIT_CLASSES
    }


def client_address() -> str:
    """The client's address, normalised (an IPv6 client's /64, which one subscriber holds)."""
    raw = request.remote_addr or "unknown"
    try:
        address = ipaddress.ip_address(raw)
    except ValueError:
        return raw
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def client_key(principal) -> str:
    if principal is not None and principal.user_id is not None:
        return f"user:{principal.user_id}"
    return f"ip:{client_address()}"


def _limits() -> dict[str, Limit | None]:
    return app_state().rate_limits


def _refuse(name: str, limit: Limit, wait: int) -> TooManyRequests:
    return TooManyRequests(
        f"Rate limit reached: at most {limit.count} per {limit.seconds} s "
        f"({name.replace('_', ' ')}) for this client; retry in {wait} s.",
        headers={"Retry-After": str(wait)},
    )


def enforce(name: str, principal=None, *, amount: int = 1) -> None:
    """Spend ``amount`` of the client's ``name`` budget, or raise a 429."""
    limit = _limits()[name]
    if limit is None:
        return
    wait = app_state().rate_limiter.spend(
        f"{name}:{client_key(principal)}", amount, limit.count, limit.seconds
    )
    if wait is not None:
        raise _refuse(name, limit, wait)


def check_auth_failures() -> None:
    """Before a token lookup: refuse it if this address has failed too many already."""
    limit = _limits()["auth_failures"]
    if limit is None:
        return
    key = f"auth_failures:{client_key(None)}"
    if app_state().rate_limiter.used(key, limit.seconds) >= limit.count:
        raise _refuse("auth_failures", limit, limit.seconds - int(time.time()) % limit.seconds)


def record_auth_failure() -> None:
    """After a failed lookup: spend one of this address's failures (no 429 for this one: the
    caller answers that the token was refused; the next check is refused if over)."""
    limit = _limits()["auth_failures"]
    if limit is not None:
        app_state().rate_limiter.spend(
            f"auth_failures:{client_key(None)}", 1, limit.count, limit.seconds
        )


def enforce_endpoint(who: Callable[[], Any]) -> None:
    """The limit of the request's endpoint, if it has one, spent by its caller (``who()``:
    the identity domain's, which the platform does not import; looked up only when needed)."""
    name = LIMITED_ENDPOINTS.get(request.endpoint or "")
    if name is None or _limits()[name] is None:
        return
    if name == "search" and not request.args.get("q", "").strip():
        return
    enforce(name, who())


def install_limits(app: Flask, settings: Settings, who: Callable[[], Any]) -> None:
    """Trust X-Forwarded-For only as configured, and spend each request's endpoint limit
    before any other hook answers it (the read cache included), by ``who()``: on a page, the
    person its session signs in."""
    if settings.trusted_proxy_hops > 0:
        hops = settings.trusted_proxy_hops
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)

    @app.before_request
    def _enforce_endpoint_limits():
        enforce_endpoint(who)
