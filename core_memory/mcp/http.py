"""`/mcp` under gunicorn's sync WSGI workers: the SDK's streamable-HTTP app (ASGI) mounted with
a2wsgi, stateless and answering JSON, so any worker of any instance can answer any request
(docs/decisions.md "MCP").

Only POST is answered (GET, the stream a stateful server may open, is a 405 at once: it would
hold the worker's thread for as long as the client keeps it). The same gate as every other
entrance, here in the worker's own thread before the protocol runs: a body over `CORE_MAX_REQUEST_BYTES` is a 413; a missing, unknown or insufficient
credential is an HTTP 401/403 with the API's JSON error body (what MCP clients expect), and a
request without a valid credential counts against its address's limit as on the API; each request
counts against the key's rate limit as an API request does — over either, a 429 with
`Retry-After`, the bucket's `X-RateLimit-*` headers and a JSON-RPC error. Every request counts, the protocol's handshake (`initialize`, `ping`,
notifications) too: it is cheap, but a limit that some requests pass by is no limit. The event loop, its thread and the SDK's session manager start with the first
MCP request of each worker process (never at import: a forked worker would not inherit the
thread).
"""
from __future__ import annotations

import asyncio
import io
import json
import math
import threading
import time

from a2wsgi import ASGIMiddleware
from django.conf import settings
from django.db import close_old_connections
from mcp.server.transport_security import TransportSecuritySettings

from core_memory.base.api.exceptions import error_body
from core_memory.base.addresses import client_address
from core_memory.base.api.throttling import anonymous_rate_limit_take, key_rate_limit_state, rate_limit_headers
from core_memory.base.errors import ApplicationError
from core_memory.base.telemetry.context import REQUEST_ID_HEADER, REQUEST_ID_META, organisation_set, request_answered, request_begin, request_end
from core_memory.base.telemetry.tracing import current_carrier, span_from
from core_memory.mcp.server import Unauthenticated, mcp_caller, server

MCP_PATH = "/mcp"
STARTUP_TIMEOUT_SECONDS = 10
# JSON-RPC's range for errors a server defines.
RATE_LIMITED_CODE = -32000
BODY_TOO_LARGE_CODE = -32600
METHOD_NOT_ALLOWED_CODE = -32601
# What the streamable HTTP transport answers here: its messages. GET (a stream the server opens
# for messages of its own) is refused with 405, as the transport allows a server to.
ANSWERED_METHODS = ("POST",)


def transport_security() -> TransportSecuritySettings:
    """DNS-rebinding protection from ALLOWED_HOSTS (the SDK enables it by itself only for localhost)."""
    hosts = [host for host in settings.ALLOWED_HOSTS if host != "*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection="*" not in settings.ALLOWED_HOSTS,
        allowed_hosts=[*hosts, *(f"{host}:*" for host in hosts)],
        allowed_origins=[f"{scheme}://{host}{port}" for scheme in ("http", "https") for host in hosts for port in ("", ":*")],
    )


class McpMount:
    """A WSGI application: `/mcp` to the MCP server, everything else to Django."""

    # The addresses this mount answers itself, outside Django's URLs (tests/test_entrances.py walks them).
    prefix = MCP_PATH

    def __init__(self, django_application):
        self.django_application = django_application
        self._mcp = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path != MCP_PATH and not path.startswith(MCP_PATH + "/"):
            return self.django_application(environ, start_response)
        started = time.perf_counter()
        request_id = request_begin(sent_id=environ.get(REQUEST_ID_META), route=MCP_PATH)
        environ[REQUEST_ID_META] = request_id  # the MCP server's thread reads it from there
        answered = {}
        carrier = {name: environ[f"HTTP_{name.upper()}"] for name in ("traceparent", "tracestate") if f"HTTP_{name.upper()}" in environ}
        try:
            with span_from(carrier, f"{environ.get('REQUEST_METHOD')} {MCP_PATH}", server=True, **{"http.route": MCP_PATH}):
                # The MCP server runs on its own thread: it continues this span from the headers.
                environ.update({f"HTTP_{name.upper()}": value for name, value in current_carrier().items()})
                return self._answer(environ, _with_request_id(start_response, request_id, answered))
        finally:
            request_answered(method=environ.get("REQUEST_METHOD", ""), status=answered.get("status", 500), seconds=time.perf_counter() - started)
            request_end()

    def _answer(self, environ, start_response):
        environ["REMOTE_ADDR"] = client_address(environ)  # behind the operator's load balancers, the client's
        if environ.get("REQUEST_METHOD") not in ANSWERED_METHODS:
            # A stateless server has no stream of its own to offer (GET), nor a session to end
            # (DELETE); a GET stream would hold a worker's thread for as long as the client likes.
            message = "This MCP server is stateless: send each message as a POST."
            return _json_answer(405, _json_rpc_error(None, METHOD_NOT_ALLOWED_CODE, message, "method_not_allowed"))(start_response)
        body = _body_within_limit(environ)
        if body is None:
            message = f"The request body is larger than {settings.CORE_MAX_REQUEST_BYTES} bytes."
            return _json_answer(413, _json_rpc_error(None, BODY_TOO_LARGE_CODE, message, "request_too_large"))(start_response)
        # The SDK reads the body again from here.
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        refusal = self._refusal(environ, body)
        if refusal is not None:
            return refusal(start_response)
        return self._mcp_application()(environ, start_response)

    def _refusal(self, environ, body: bytes):
        close_old_connections()
        try:
            caller = mcp_caller(authorization=environ.get("HTTP_AUTHORIZATION"), subject_header=environ.get("HTTP_X_CORE_SUBJECT"))
        except Unauthenticated as error:
            # Without a valid credential, the address's bucket (as on the API): guessing keys is limited too.
            state = anonymous_rate_limit_take(address=environ["REMOTE_ADDR"])
            if state is not None and state.wait is not None:
                return _rate_limited(state, body, "Too many requests without a valid credential from this address")
            return _json_answer(401, error_body(status_code=401, message=error.message, param=error.param, error_type=error.error_type))
        except ApplicationError as error:
            return _json_answer(error.status_code, error_body(status_code=error.status_code, message=error.message, param=error.param, error_type=error.error_type))
        finally:
            close_old_connections()
        organisation_set(caller.organisation_id)
        state = key_rate_limit_state(caller)
        if state is None or state.wait is None:
            return None
        return _rate_limited(state, body, "Too many requests for this key")

    def _mcp_application(self):
        with self._lock:
            if self._mcp is None:
                self._mcp = _start_mcp()
        return self._mcp


def _with_request_id(start_response, request_id: str, answered: dict):
    def start(status, headers, exc_info=None):
        answered["status"] = int(status.split()[0])
        return start_response(status, [*headers, (REQUEST_ID_HEADER, request_id)], exc_info)

    return start


def _rate_limited(state, body: bytes, reason: str):
    """A 429 as JSON-RPC, answering the request's id, with the bucket's headers."""
    seconds = max(1, math.ceil(state.wait))
    request_id = next((each.get("id") for each in _messages(body) or [] if isinstance(each, dict) and "id" in each), None)
    error = _json_rpc_error(request_id, RATE_LIMITED_CODE, f"{reason}; retry in {seconds} seconds.", "rate_limit_error", retry_after=seconds)
    return _json_answer(429, error, headers=rate_limit_headers(state))


def _start_mcp() -> ASGIMiddleware:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="mcp-loop", daemon=True).start()
    application = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True, transport_security=transport_security()
    )
    started = threading.Event()

    async def hold_session_manager():
        # a2wsgi has no lifespan: the session manager's task group runs here for the process's life.
        async with server.session_manager.run():
            started.set()
            await asyncio.Event().wait()

    asyncio.run_coroutine_threadsafe(hold_session_manager(), loop)
    if not started.wait(STARTUP_TIMEOUT_SECONDS):
        raise RuntimeError("The MCP session manager did not start.")
    return ASGIMiddleware(application, loop=loop)


def _body_within_limit(environ) -> bytes | None:
    """The request's body, or None when it is larger than the limit (read no further than that)."""
    limit = settings.CORE_MAX_REQUEST_BYTES
    stream = environ.get("wsgi.input")
    try:
        length = int(environ.get("CONTENT_LENGTH") or -1)
    except ValueError:
        length = -1
    if length > limit:
        return None
    if stream is None or length == 0:
        return b""
    # Without a length (a chunked body) read one byte past the limit to know it is over.
    body = stream.read(length if length > 0 else limit + 1)
    return None if len(body) > limit else body


def _messages(body: bytes) -> list | None:
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return parsed if isinstance(parsed, list) else [parsed]


def _json_rpc_error(request_id, code: int, message: str, error_type: str, **data) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message, "data": {"type": error_type, **data}}}


def _json_answer(status_code: int, body: dict, *, headers: dict[str, str] | None = None):
    payload = json.dumps(body).encode()
    reason = {
        400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 405: "Method Not Allowed", 413: "Content Too Large",
        429: "Too Many Requests",
    }.get(status_code, "Error")
    listed = [("Content-Type", "application/json"), ("Content-Length", str(len(payload))), *(headers or {}).items()]
    if status_code == 405:
        listed.append(("Allow", "POST"))
    if status_code == 401:
        listed.append(("WWW-Authenticate", 'Bearer realm="core"'))

    def answer(start_response):
        start_response(f"{status_code} {reason}", listed)
        return [payload]

    return answer
