"""Logs an operator can read: one structured line per request, a request id on every line.

Every process (gunicorn's web workers, the Celery worker and beat) writes its log records to
stdout, as one JSON object a line (``SPRIG_LOG_FORMAT=json``, the default) or as plain text
for a person at a terminal (``console``, what ``make run`` uses): :func:`logging_config` is the
one configuration, given to gunicorn as its ``logconfig_dict`` and applied by the Celery
entrypoint.

Each request gets an id: the caller's ``X-Request-Id`` when it is a short run of safe
characters, else a new uuid4 hex. It is returned in the response's ``X-Request-Id``, stamped
on every log record emitted while the request runs, and sent along with every Celery task the
request starts, so the task's lines carry it too (:func:`task_headers`, :func:`enter_task`).

The access line holds the method, the route's rule (``/api/v1/subagents/<subagent_id>``) and
its integer ids, the status, the duration and who called (a person's user id or a
service's id). Never the raw path or query string (search text is personal), a header, a
token or a body.
"""

from __future__ import annotations

import functools
import logging
import logging.config
import os
import re
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

import orjson
from flask import Flask, Response, g, request
from pythonjsonlogger.orjson import OrjsonFormatter

REQUEST_ID_HEADER = "X-Request-Id"
# Ids from a proxy or a client are kept when they could not smuggle anything into a log line
# or a header: letters, digits and a few separators, at most 64 of them (a uuid with dashes
# is 36).
SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
LOG_FORMATS = ("json", "console")

access_log = logging.getLogger("market.access")

# The id of the request (or of the request that started the task) this context serves.
current_request_id: ContextVar[str | None] = ContextVar("sprig_request_id", default=None)
# The Celery task this context runs: (task id, task name).
current_task: ContextVar[tuple[str, str] | None] = ContextVar("sprig_task", default=None)


def accepted_request_id(given: str | None) -> str:
    """The caller's request id when it is safe to log and echo, else a new one."""
    if given and SAFE_REQUEST_ID.fullmatch(given):
        return given
    return uuid.uuid4().hex


class ContextFilter(logging.Filter):
    """Stamps each record with the request id and the running task, whichever logger made it
    (the app's, Celery's, gunicorn's), so every line can be joined to its request."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = current_request_id.get()
        if request_id is not None:
            record.request_id = request_id
        task = current_task.get()
        if task is not None:
            record.task_id, record.task = task
        return True


def json_formatter() -> logging.Formatter:
    """One JSON object a line: time, level, logger, process, message, then every field the
    record carries (the access line's, the request id, the task, a traceback)."""
    return OrjsonFormatter(
        fmt=["levelname", "name", "process", "message"],
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp="time",  # ISO 8601, UTC
    )


class AccessLineHandler(logging.StreamHandler):
    """The access logger's handler in the JSON format: it takes each access line ready-made
    (:meth:`write_access`) and writes it in one system call, skipping the record, the filters
    and the formatter a logger call goes through. That path costs a request 20-40 µs of CPU
    where this one costs under half of it, which on the cheapest requests (a health check, a
    cached page: 0.3 ms) is the difference between logging costing 15% and under 10%. The line
    is the one the JSON formatter would write for the same record, key for key and in the same
    order (a test holds the two side by side). A record logged to ``market.access`` the usual
    way is formatted and written as any other."""

    def __init__(self, stream=None) -> None:
        super().__init__(stream)
        self.setFormatter(json_formatter())
        self.addFilter(ContextFilter())
        try:
            self._fd: int | None = self.stream.fileno()
        except (AttributeError, OSError, ValueError):  # a stream without a file (captured)
            self._fd = None

    def write_access(self, message: str, fields: dict) -> None:
        line = {
            "level": "INFO",
            "logger": access_log.name,
            # Asked each time: gunicorn makes this handler in its master, before the fork.
            "process": os.getpid(),
            "message": message,
            **fields,
        }
        request_id = current_request_id.get()
        if request_id is not None:
            line["request_id"] = request_id
        task = current_task.get()
        if task is not None:
            line["task_id"], line["task"] = task
        line["time"] = datetime.now(UTC).isoformat()
        data = orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)
        if self._fd is None:
            with self.lock:
                self.stream.write(data.decode())
                self.flush()
            return
        # One write of a short line: whole on a pipe (under PIPE_BUF) and in a file, whatever
        # the other threads and handlers write around it.
        os.write(self._fd, data)


def console_formatter() -> logging.Formatter:
    return logging.Formatter(
        "%(asctime)s %(levelname)-7s %(name)s [%(request_id)s] %(message)s",
        defaults={"request_id": "-"},
    )


def logging_config(log_format: str, level: str = "INFO") -> dict:
    """The ``logging.config.dictConfig`` of a Sprig process: everything to stdout through one
    handler. gunicorn's own access log is silenced: the app writes a better line per request
    (gunicorn's holds the raw URL, query string included)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"SPRIG_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}")
    formatters = {
        "json": {"()": json_formatter},
        "console": {"()": console_formatter},
    }
    handlers = {
        "stdout": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": log_format,
            "filters": ["context"],
        }
    }
    loggers = {
        "market": {"level": level},
        "feedback": {"level": level},
        "celery": {"level": "INFO"},
        "gunicorn.error": {"level": "INFO", "handlers": [], "propagate": True},
        "gunicorn.access": {"level": "WARNING", "handlers": [], "propagate": False},
    }
    if log_format == "json":
        # Access lines go straight to stdout; the level is still market's (SPRIG_LOG_LEVEL).
        handlers["access"] = {"()": AccessLineHandler, "stream": "ext://sys.stdout"}
        loggers[access_log.name] = {"handlers": ["access"], "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": ContextFilter}},
        "formatters": {log_format: formatters[log_format]},
        "handlers": handlers,
        "root": {"level": "WARNING", "handlers": ["stdout"]},
        "loggers": loggers,
    }


def skip_unwritten_record_fields() -> None:
    """Records stop looking up what no line of ours prints: the caller's file and line (a walk
    up the stack on every record), the thread and the multiprocessing process name. These are
    the logging module's documented switches; with one access line per request they are a
    measurable part of each request's cost. The process id stays: the JSON line carries it."""
    logging._srcfile = None  # the documented way to skip the stack walk
    logging.logThreads = False
    logging.logMultiprocessing = False


def configure_logging(log_format: str, level: str = "INFO") -> None:
    """Apply :func:`logging_config` to this process (the Celery worker and beat; gunicorn
    applies it itself), Python's warnings included, so no line escapes the format."""
    logging.config.dictConfig(logging_config(log_format, level))
    logging.captureWarnings(True)
    skip_unwritten_record_fields()


def install_request_logging(app: Flask) -> None:
    """Give every request an id and write its access line. Installed before any other hook,
    so the clock starts first and the line is written last, with the final status."""

    @app.before_request
    def _start_request_log():
        g.request_started = time.perf_counter()
        g.request_id = accepted_request_id(request.headers.get(REQUEST_ID_HEADER))
        g.request_id_token = current_request_id.set(g.request_id)

    @app.after_request
    def _write_request_log(response: Response) -> Response:
        duration_ms = round((time.perf_counter() - g.request_started) * 1000, 2)
        response.headers[REQUEST_ID_HEADER] = g.request_id
        # The server's own time: browsers' dev tools show it, and the benches read it apart
        # from their clients' queueing.
        response.headers["Server-Timing"] = f"app;dur={duration_ms:.1f}"
        if access_log.isEnabledFor(logging.INFO):
            write_access_line(response.status_code, duration_ms)
        return response

    @app.teardown_request
    def _forget_request_id(_exc):
        token = g.pop("request_id_token", None)
        if token is not None:
            current_request_id.reset(token)


@functools.lru_cache(maxsize=1024)
def route_template(rule: str) -> str:
    """A rule without its converters: ``/subagents/<int(max=2147483647):subagent_id>`` reads
    ``/subagents/<subagent_id>``."""
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"<\1>", rule)


def write_access_line(status: int, duration_ms: float) -> None:
    current = request._get_current_object()  # one proxy lookup, not one per field
    method = current.method
    rule = current.url_rule
    route = route_template(rule.rule) if rule is not None else None
    view_args = current.view_args
    ids = {k: v for k, v in view_args.items() if isinstance(v, int)} if view_args else None
    fields = {
        "method": method,
        "route": route,
        "ids": ids or None,
        "status": status,
        "duration_ms": duration_ms,
        **caller_fields(),
    }
    message = f"{method} {route or '(no route)'} {status} {duration_ms:.1f}ms"
    handlers = access_log.handlers
    if len(handlers) == 1 and not access_log.propagate and type(handlers[0]) is AccessLineHandler:
        handlers[0].write_access(message, fields)
    else:  # logging configured some other way (tests, an embedding host): an ordinary record
        access_log.info(message, extra=fields)


def caller_fields() -> dict:
    """Who called, when the request looked it up (an anonymous or unauthenticated request, or
    one refused before its token was read, has neither)."""
    principal = g.get("principal") or g.get("session_principal")
    if principal is None or principal.user_id is None:
        return {}
    if principal.kind == "service":
        return {"service_id": principal.user_id}
    return {"user_id": principal.user_id}


def task_headers() -> dict:
    """Message headers for a task started now: the current request id, when there is one."""
    request_id = current_request_id.get()
    return {"request_id": request_id} if request_id is not None else {}


def enter_task(task) -> None:
    """At a task's start (Celery's ``task_prerun``): its lines carry its id and name, and the
    request id it was sent with. A worker reads custom headers as request attributes; an eager
    run keeps them under ``headers``."""
    context = task.request
    request_id = getattr(context, "request_id", None) or (context.headers or {}).get("request_id")
    context.sprig_log_tokens = (
        current_request_id.set(request_id if request_id is not None else current_request_id.get()),
        current_task.set((context.id, task.name)),
    )


def leave_task(task) -> None:
    """At a task's end (``task_postrun``): back to the context it started in."""
    tokens = getattr(task.request, "sprig_log_tokens", None)
    if tokens is not None:
        request_token, task_token = tokens
        current_task.reset(task_token)
        current_request_id.reset(request_token)
