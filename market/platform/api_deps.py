"""Per-request plumbing shared by the API blueprints and pages: the DB session, JSON bodies,
the commit (the caller is ``market.identity.tokens.caller``)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from flask import Request, current_app, g, request
from pydantic import BaseModel, ValidationError
from sqlmodel import Session
from werkzeug.routing import IntegerConverter

from feedback.json_limits import MAX_JSON_DEPTH, nesting_exceeds
from market.platform.db import UnitOfWork
from market.platform.errors import BadRequest, Unprocessable, UnsupportedMediaType
from market.platform.problems import client_message
from market.platform.state import app_state


def unit_of_work() -> UnitOfWork:
    """This request's unit of work (on the read engine for GET and HEAD), closed as the request
    ends (``market.app``)."""
    unit = g.get("unit_of_work")
    if unit is None:
        unit = app_state().unit_of_work(read_only=request.method in ("GET", "HEAD"))
        g.unit_of_work = unit
    return unit


def db() -> Session:
    return unit_of_work().session


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


def body_optional(view):
    """Mark a view whose JSON body only carries options: sent without a body, it reads as
    ``{}`` (every option at its default) instead of a 400. Put it under the route and input
    decorators, whose wrappers carry the mark up (``functools.wraps``)."""
    view.sprig_body_optional = True
    return view


class JsonBodyRequest(Request):
    """The request class: APIFlask's body inputs and the publish bodies read JSON through
    ``get_json``, so this is where a body must say it is JSON (whatever ``force`` asks) and
    goes through :func:`parse_json`. A problem is always raised (``silent`` is not honoured)."""

    def get_json(self, force: bool = False, silent: bool = False, cache: bool = True) -> Any:
        return self.json_body(self.get_data(cache=cache))

    def json_body(self, data: bytes) -> Any:
        """``data``, the body this request carried (read here or, capped, by the caller)."""
        if not data:
            view = current_app.view_functions.get(self.endpoint or "")
            if getattr(view, "sprig_body_optional", False):
                return {}
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
            "message": client_message(e["msg"]),
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


def commit() -> None:
    """End the request's work: commit it, then let this process's caches catch up."""
    unit_of_work().commit()


def _digits_up_to(top: int) -> str:
    """A regular expression matching exactly the decimal numbers 0..``top`` (leading zeros
    allowed): the shorter numbers, then each ``top``'s prefix followed by a smaller digit."""
    digits = str(top)
    parts = [rf"\d{{1,{len(digits) - 1}}}"] if len(digits) > 1 else []
    for at, digit in enumerate(digits):
        if digit != "0":
            rest = len(digits) - at - 1
            parts.append(f"{digits[:at]}[0-{int(digit) - 1}]" + (rf"\d{{{rest}}}" if rest else ""))
    parts.append(digits)
    return "|".join(f"(?:{part})" for part in parts)


class BoundedIntegerConverter(IntegerConverter):
    """``<int(max=N):…>`` whose pattern itself stops at ``max``. Werkzeug checks ``max`` after
    matching, and a number beyond it then answers 405 where another method has a rule of the
    same shape (``DELETE /subagents/2147483648/install``): it must be a 404 like any unknown id."""

    def __init__(self, map, fixed_digits=0, min=None, max=None, signed=False):
        super().__init__(map, fixed_digits=fixed_digits, min=min, max=max, signed=signed)
        if max is not None and not signed and not fixed_digits:
            self.regex = _digits_up_to(max)
