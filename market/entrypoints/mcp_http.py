"""MCP over streamable HTTP at ``/mcp``, served by the web app itself (gunicorn, threads).

A remote coding agent connects to ``https://<host>/mcp`` with ``Authorization: Bearer
sprig_…``. The endpoint looks the token up on every request exactly as the API does
(``market.identity.tokens.caller``): no token is an anonymous caller (public reads only); a
malformed, unknown or revoked one is a 401 problem with ``WWW-Authenticate: Bearer`` before
any MCP message is read. The principal found is handed to the tools for that request only
(``market.entrypoints.mcp_server.HTTP_CALLER``), so one server answers many callers, each as
themselves; so is its Accept-Language (``HTTP_ACCEPT_LANGUAGE``), which picks a better branch
in the reader's language as the API does (``market.identity.tokens.reader_language``).

The MCP SDK's streamable HTTP is an ASGI app; this app is WSGI. Each worker process runs one
asyncio loop in a thread of its own, started on its first MCP request, which hosts the SDK's
session manager in **stateless JSON** mode: every HTTP request is a whole exchange (one
JSON-RPC message in, one JSON document out) and no session lives in a process, so any worker
of any process may answer any request. A request thread hands its request to that loop and
waits for the response; the tools themselves run in the loop's worker threads.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from flask import Blueprint, Flask, Response, request
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from market.entrypoints.mcp_server import HTTP_ACCEPT_LANGUAGE, HTTP_CALLER, build_http_server
from market.identity.tokens import Principal, caller
from market.platform.api_deps import unit_of_work
from market.platform.errors import ServiceUnavailable, Unauthorized
from market.platform.state import app_state

MCP_PATH = "/mcp"
# How long a request thread waits for the loop's answer before a 503: gunicorn's worker
# timeout (market.entrypoints.gunicorn_conf). A tool call is a few reads or one publish.
ANSWER_SECONDS = 30
# RFC 6750: the scheme to use and, for a bearer token that was refused, why.
CHALLENGE = 'Bearer realm="sprig"'
REFUSED_TOKEN = f'{CHALLENGE}, error="invalid_token"'

bp = Blueprint("mcp", __name__)


class McpBridge:
    """The SDK's streamable HTTP session manager on a loop thread of this process, and a
    blocking call that serves one WSGI request through it. Both are made on the first MCP
    request: a process forked from one that built the app (as gunicorn's workers are) must
    not inherit a loop whose thread it does not have, and an app that never serves MCP (most
    test apps) does not pay for building the server."""

    def __init__(self, build_server: Callable[[], MCPServer]):
        self._build_server = build_server
        self._manager: StreamableHTTPSessionManager | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._starting = threading.Lock()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._starting:
            if self._loop is None:
                server = self._build_server()
                # The token is a header, never a cookie: a page on another site cannot make
                # a browser send it, so a host name rebound to this server gets no more than
                # an anonymous caller does. The SDK's DNS-rebinding guard, which would refuse
                # every Host but localhost, adds nothing.
                server.streamable_http_app(
                    json_response=True,
                    stateless_http=True,
                    transport_security=TransportSecuritySettings(
                        enable_dns_rebinding_protection=False
                    ),
                )
                self._manager = server.session_manager
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                threading.Thread(
                    target=loop.run_until_complete,
                    args=(self._run_manager(ready),),
                    name="sprig-mcp",
                    daemon=True,
                ).start()
                if not ready.wait(ANSWER_SECONDS):
                    raise ServiceUnavailable("The MCP server did not start; try again.")
                self._loop = loop
            return self._loop

    async def _run_manager(self, ready: threading.Event) -> None:
        async with self._manager.run():
            ready.set()
            await asyncio.Event().wait()  # for the life of the process

    def serve(
        self,
        scope: dict[str, Any],
        body: bytes,
        principal: Principal,
        accept_language: str | None,
    ) -> Response:
        future = asyncio.run_coroutine_threadsafe(
            self._exchange(scope, body, principal, accept_language), self._running_loop()
        )
        try:
            status, headers, content = future.result(ANSWER_SECONDS)
        except FutureTimeout:
            future.cancel()
            raise ServiceUnavailable(
                f"The MCP call took longer than {ANSWER_SECONDS} s; try again."
            ) from None
        return Response(content, status, headers)

    async def _exchange(
        self,
        scope: dict[str, Any],
        body: bytes,
        principal: Principal,
        accept_language: str | None,
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """One request through the ASGI app, its whole response collected. Runs in a task of
        its own, so the caller and language set here are this request's only."""
        HTTP_CALLER.set(principal)
        HTTP_ACCEPT_LANGUAGE.set(accept_language)
        answered = asyncio.Event()
        status = 500
        headers: list[tuple[str, str]] = []
        chunks: list[bytes] = []
        sent_body = False

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await answered.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers.extend(
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in message["headers"]
                )
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    answered.set()

        await self._manager.handle_request(scope, receive, send)
        answered.set()
        return status, headers, b"".join(chunks)


def asgi_scope(environ: dict[str, Any]) -> dict[str, Any]:
    """The ASGI HTTP scope of a WSGI request (what the SDK's transport reads of it)."""
    headers = [
        (key[5:].replace("_", "-").lower().encode("latin-1"), value.encode("latin-1"))
        for key, value in environ.items()
        if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", b"content-type"), ("CONTENT_LENGTH", b"content-length")):
        if environ.get(key):
            headers.append((name, environ[key].encode("latin-1")))
    server_port = environ.get("SERVER_PORT")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": environ.get("SERVER_PROTOCOL", "HTTP/1.1").partition("/")[2] or "1.1",
        "method": environ["REQUEST_METHOD"],
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": MCP_PATH,
        "raw_path": MCP_PATH.encode(),
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": headers,
        "client": (environ.get("REMOTE_ADDR", ""), int(environ.get("REMOTE_PORT") or 0)),
        "server": (environ.get("SERVER_NAME", ""), int(server_port) if server_port else None),
    }


# POST only: a stateless server has no session to end (DELETE) and sends no message of its own,
# so it offers no stream to listen on (GET); the transport's rules allow a 405 for both.
@bp.route(MCP_PATH, methods=["POST"])
def mcp_endpoint():
    try:
        principal = caller()
    except Unauthorized as error:
        bearer = request.headers.get("Authorization", "").lower().startswith("bearer ")
        error.headers.setdefault("WWW-Authenticate", REFUSED_TOKEN if bearer else CHALLENGE)
        raise
    # The token lookup's transaction ends here: its connection goes back to the pool rather
    # than idling through the tool call, which works in a unit of its own.
    unit_of_work().rollback()
    body = request.get_data()
    return app_state().mcp.serve(
        asgi_scope(request.environ), body, principal, request.headers.get("Accept-Language")
    )


def mcp_bridge(app: Flask) -> McpBridge:
    """The bridge the app's state keeps: its server, built on first use, runs on the app's
    engine, suggestion index and after-commit hooks."""

    def build() -> MCPServer:
        state = app_state(app)
        return build_http_server(state.engine, state.suggestions, state.after_commit)

    return McpBridge(build)


def install_mcp(app: Flask) -> None:
    """Serve MCP at ``/mcp`` (the bridge is the app state's ``mcp``)."""
    app.register_blueprint(bp)
