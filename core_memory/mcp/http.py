"""`/mcp` under gunicorn's sync WSGI workers: the SDK's streamable-HTTP app (ASGI) mounted with
a2wsgi, stateless and answering JSON, so any worker of any instance can answer any request
(docs/decisions.md "MCP").

The credential is checked here first, in the worker's own thread, so that a missing, unknown
or insufficient one is an HTTP 401/403 with R-2.3's body (what MCP clients expect), before the
protocol runs. The event loop, its thread and the SDK's session manager start with the first
MCP request of each worker process (never at import: a forked worker would not inherit the
thread).
"""
from __future__ import annotations

import asyncio
import json
import threading

from a2wsgi import ASGIMiddleware
from django.conf import settings
from django.db import close_old_connections
from mcp.server.transport_security import TransportSecuritySettings

from core_memory.api.exceptions import error_body
from core_memory.base.errors import ApplicationError
from core_memory.mcp.server import mcp_caller, server

MCP_PATH = "/mcp"
STARTUP_TIMEOUT_SECONDS = 10


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

    def __init__(self, django_application):
        self.django_application = django_application
        self._mcp = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path != MCP_PATH and not path.startswith(MCP_PATH + "/"):
            return self.django_application(environ, start_response)
        refusal = self._refusal(environ)
        if refusal is not None:
            return refusal(start_response)
        return self._mcp_application()(environ, start_response)

    def _refusal(self, environ):
        close_old_connections()
        try:
            mcp_caller(authorization=environ.get("HTTP_AUTHORIZATION"), subject_header=environ.get("HTTP_X_CORE_SUBJECT"))
        except ApplicationError as error:
            return _json_answer(error.status_code, error_body(status_code=error.status_code, message=error.message, param=error.param, error_type=error.error_type))
        finally:
            close_old_connections()
        return None

    def _mcp_application(self):
        with self._lock:
            if self._mcp is None:
                self._mcp = _start_mcp()
        return self._mcp


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


def _json_answer(status_code: int, body: dict):
    payload = json.dumps(body).encode()
    reason = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden"}.get(status_code, "Error")
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
    if status_code == 401:
        headers.append(("WWW-Authenticate", 'Bearer realm="core"'))

    def answer(start_response):
        start_response(f"{status_code} {reason}", headers)
        return [payload]

    return answer
