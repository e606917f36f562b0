"""Domain errors raised by services and turned into ``application/problem+json`` by the API."""

from __future__ import annotations


class SprigError(Exception):
    status = 400
    title = "Bad request"

    def __init__(self, detail: str, *, errors: list[dict] | None = None, headers=None):
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or {}


class BadRequest(SprigError):
    status, title = 400, "Bad request"


class Unauthorized(SprigError):
    status, title = 401, "Authentication required"


class Forbidden(SprigError):
    status, title = 403, "Forbidden"


class NotFound(SprigError):
    status, title = 404, "Not found"


class Conflict(SprigError):
    status, title = 409, "Conflict"


class PayloadTooLarge(SprigError):
    status, title = 413, "Payload too large"


class Unprocessable(SprigError):
    status, title = 422, "Unprocessable content"


class ServiceUnavailable(SprigError):
    status, title = 503, "Service unavailable"


class UriTooLong(SprigError):
    status, title = 414, "URI too long"


class UnsupportedMediaType(SprigError):
    status, title = 415, "Unsupported media type"


class TooManyRequests(SprigError):
    status, title = 429, "Too many requests"
