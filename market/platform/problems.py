"""Every error as ``application/problem+json`` (RFC 9457): type, title, status, detail, errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apiflask import APIFlask
from apiflask.exceptions import HTTPError
from psycopg.errors import QueryCanceled
from sqlalchemy.exc import InterfaceError, OperationalError
from werkzeug.exceptions import HTTPException

from market.platform.errors import SprigError

PROBLEM_SCHEMA = {
    "type": "object",
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"location": {"type": "string"}, "message": {"type": "string"}},
            },
        },
    },
    "required": ["title", "status", "detail"],
}

CONTENT_TYPE = "application/problem+json"


def problem(status: int, title: str, detail: str, errors=None, headers=None):
    body = {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "errors": errors or [],
    }
    return body, status, {"Content-Type": CONTENT_TYPE, **(headers or {})}


# What pydantic puts before the message a validator raised: library words, not the client's.
_LIBRARY_PREFIXES = ("Value error, ", "Assertion failed, ")


def client_message(message: str) -> str:
    """A validation message as the client should read it, without pydantic's prefix."""
    for prefix in _LIBRARY_PREFIXES:
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


def client_location(location: str, field: str) -> str:
    """``json.tags.0`` for a field; ``json`` (the body itself) for a check across fields,
    which APIFlask files under the marshmallow-era name ``_schema``."""
    return location if field in ("", "_schema") else f"{location}.{field}"


def _validation_errors(detail) -> list[dict]:
    """APIFlask reports ``{location: {field: [messages]}}``; flatten it, in the client's
    terms."""
    errors = []
    if isinstance(detail, dict):
        for location, fields in detail.items():
            if isinstance(fields, dict):
                for field, messages in fields.items():
                    for message in messages if isinstance(messages, list) else [messages]:
                        errors.append(
                            {
                                "location": client_location(str(location), str(field)),
                                "message": client_message(str(message)),
                            }
                        )
            else:
                errors.append({"location": str(location), "message": str(fields)})
    return errors


# The web shell's page for a person browsing (market/web/error_pages.py): given the status, the
# detail worth showing (None: werkzeug's generic words) and the headers, a page, or None for
# a problem document. The platform knows no templates, so the shell hands it in.
BrowserPage = Callable[[int, str | None, dict], Any]


def install(app: APIFlask, browser_page: BrowserPage | None = None) -> None:
    def answer(status: int, title: str, detail: str, errors=None, headers=None, *, generic=False):
        if browser_page is not None:
            page = browser_page(status, None if generic else detail, dict(headers or {}))
            if page is not None:
                return page
        return problem(status, title, detail, errors, headers)

    @app.error_processor
    def _apiflask_error(error: HTTPError):
        errors = _validation_errors(error.detail)
        if errors:
            detail = "; ".join(f"{e['location']}: {e['message']}" for e in errors[:5])
        else:
            detail = error.message or "Request failed."
        title = "Invalid input" if error.status_code == 422 else (error.message or "Error")
        return problem(error.status_code, title, detail, errors, error.headers)

    @app.errorhandler(SprigError)
    def _domain_error(error: SprigError):
        return answer(error.status, error.title, error.detail, error.errors, error.headers)

    @app.errorhandler(OperationalError)
    @app.errorhandler(InterfaceError)
    def _database_away(error):
        if isinstance(getattr(error, "orig", None), QueryCanceled):
            # The request's statement ran past request_statement_timeout_ms (a lock held
            # elsewhere, most likely): nothing it began was kept.
            detail = "The database took too long to answer and the request was cancelled; retry."
        else:
            detail = "The database is unavailable; retry shortly."
        return answer(503, "Service unavailable", detail, headers={"Retry-After": "5"})

    @app.errorhandler(HTTPException)
    def _http_error(error: HTTPException):
        # Keep werkzeug's headers (Allow on a 405, …), not its content type.
        headers = {k: v for k, v in error.get_headers() if k.lower() != "content-type"}
        return answer(
            error.code or 500,
            error.name,
            error.description or error.name,
            None,
            headers,
            generic=True,
        )
