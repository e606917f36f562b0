"""Per-request plumbing shared by the API blueprints: the DB session, the caller, bodies."""

from __future__ import annotations

import json
from typing import Any

import orjson
from flask import Request, current_app, g, request
from pydantic import BaseModel, ValidationError
from sqlmodel import Session

from feedback.json_limits import MAX_JSON_DEPTH, nesting_exceeds
from market import bundles
from market import feedback_store as usage
from market.auth import ANONYMOUS, Principal, principal_for_token
from market.catalog import commit_catalog_write
from market.db import session_scope
from market.errors import BadRequest, Unauthorized, Unprocessable, UnsupportedMediaType


def db() -> Session:
    session = g.get("db_session")
    if session is None:
        read_only = request.method in ("GET", "HEAD")
        engine = current_app.extensions["sprig.read_engine" if read_only else "sprig.engine"]
        session = Session(engine, expire_on_commit=False)
        g.db_session = session
    return session


def caller() -> Principal:
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


def fresh_rollups() -> None:
    """Embedded mode has no beat: bring the rollups up to date before reading them. In a
    transaction of its own (GET requests read in autocommit), so the rollup's lock holds while
    it runs; skipped when no mark waits (a mark committed just after the check waits for the
    next reader, as one committed during a rollup does)."""
    settings = current_app.extensions["sprig.settings"]
    if not (settings.celery_eager or not settings.redis_url):
        return
    if not usage.rollup_pending(db()):
        return
    with session_scope(current_app.extensions["sprig.engine"]) as session:
        usage.run_rollup(session)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(raw: bytes | str, what: str = "The body") -> Any:
    """A JSON request body (or a JSON form field), the one way every endpoint reads one: its
    depth is checked on the raw text before a parser recurses into it, and ``null`` is refused
    (APIFlask would read it as an empty object)."""
    if nesting_exceeds(raw):
        raise BadRequest(f"{what} nests arrays and objects more than {MAX_JSON_DEPTH} deep.")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # orjson refuses lone surrogates and integers beyond 64 bits; Python's parser reads
        # them, so the models can refuse such a value naming its field (and an event alone).
        try:
            value = json.loads(raw, parse_constant=_not_json)
        except ValueError as error:
            raise BadRequest(f"{what} is not valid JSON ({error}).") from None
    if value is None:
        raise BadRequest(f"{what} is JSON `null`; send an object.")
    return value


class JsonBodyRequest(Request):
    """The request class: APIFlask's body inputs and the publish bodies read JSON through
    ``get_json``, so this is where a body must say it is JSON (whatever ``force`` asks) and
    goes through :func:`parse_json`. A problem is always raised (``silent`` is not honoured)."""

    def get_json(self, force: bool = False, silent: bool = False, cache: bool = True) -> Any:
        return self.json_body(self.get_data(cache=cache))

    def json_body(self, data: bytes) -> Any:
        """``data``, the body this request carried (read here or, capped, by the caller)."""
        if not data:
            raise BadRequest("A JSON body is required.")
        if not self.is_json:
            raise UnsupportedMediaType(
                "Send the body as `application/json`.",
                errors=[{"location": "headers.Content-Type", "message": "unsupported"}],
            )
        return parse_json(data)


def _pydantic_errors(error: ValidationError, prefix: str) -> list[dict]:
    return [
        {
            "location": ".".join([prefix, *(str(p) for p in e["loc"])]),
            "message": e["msg"],
        }
        for e in error.errors()
    ]


def parse_model(model: type[BaseModel], data: object, prefix: str = "json") -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        errors = _pydantic_errors(error, prefix)
        detail = "; ".join(f"{e['location']}: {e['message']}" for e in errors[:5])
        raise Unprocessable(detail, errors=errors) from None


def read_body_with_bundle(model: type[BaseModel]) -> tuple[BaseModel, bundles.Bundle]:
    """A publish body: JSON with ``bundle``, or multipart with ``metadata`` (JSON) and a zip
    file field ``bundle``. Both reach the same checks."""
    if request.mimetype == "multipart/form-data":
        raw = request.form.get("metadata")
        if raw is None:
            raise Unprocessable(
                "Multipart uploads carry a `metadata` field with the JSON listing.",
                errors=[{"location": "form.metadata", "message": "missing"}],
            )
        body = parse_model(model, parse_json(raw, "The `metadata` field"), "form.metadata")
        upload = request.files.get("bundle")
        if upload is None:
            raise Unprocessable(
                "Multipart uploads carry the zip in a file field named `bundle`.",
                errors=[{"location": "files.bundle", "message": "missing"}],
            )
        if getattr(body, "bundle", None) is not None:
            raise Unprocessable("Send the bundle either as JSON or as a zip, not both.")
        return body, bundles.bundle_from_zip(upload.stream)
    if request.get_data() and not request.is_json:
        raise UnsupportedMediaType(
            "Send `application/json` or `multipart/form-data`.",
            errors=[{"location": "headers.Content-Type", "message": "unsupported"}],
        )
    body = parse_model(model, request.get_json())
    if body.bundle is None:
        raise Unprocessable(
            "A bundle is required (JSON `bundle`, or a zip upload).",
            errors=[{"location": "json.bundle", "message": "Field required"}],
        )
    return body, bundles.bundle_from_json(body.bundle.model_dump())


def commit() -> None:
    commit_catalog_write(
        db(),
        read_cache=current_app.extensions.get("sprig.read_cache"),
        suggestions=current_app.extensions.get("sprig.suggestions"),
    )
