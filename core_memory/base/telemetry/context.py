"""The request a line of work belongs to: its id, its organisation and its route, kept in
context variables so every log line (and a Celery task queued from it) carries them.

The id is the load balancer's `X-Request-Id` when it sends a usable one (printable ASCII, no
spaces, at most `REQUEST_ID_MAX_LENGTH` characters), else a new one; the answer echoes it."""
from __future__ import annotations

import contextlib
import logging
import re
import time
import uuid
from contextvars import ContextVar

from django.core.signals import request_finished

from core_memory.base.telemetry.metrics import http_request_seconds

REQUEST_ID_HEADER = "X-Request-Id"
REQUEST_ID_META = "HTTP_X_REQUEST_ID"
REQUEST_ID_MAX_LENGTH = 128
# One line per answer (method, route, status, milliseconds), when CORE_ACCESS_LOG turns it on.
access_logger = logging.getLogger("core_memory.access")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_USABLE_ID = re.compile(rf"[\x21-\x7e]{{1,{REQUEST_ID_MAX_LENGTH}}}")

request_id_var: ContextVar[str | None] = ContextVar("core_request_id", default=None)
organisation_id_var: ContextVar[str | None] = ContextVar("core_organisation_id", default=None)
route_var: ContextVar[str | None] = ContextVar("core_route", default=None)


def request_id_from(sent: str | None) -> str:
    """The id a request is known by: the one sent when usable, else a new one."""
    if sent and _USABLE_ID.fullmatch(sent):
        return sent
    return uuid.uuid4().hex


def request_begin(*, sent_id: str | None, route: str | None = None) -> str:
    """Start a request's context (forgetting the previous request's on this thread); its id."""
    request_id = request_id_from(sent_id)
    request_id_var.set(request_id)
    organisation_id_var.set(None)
    route_var.set(route)
    return request_id


def request_end() -> None:
    request_id_var.set(None)
    organisation_id_var.set(None)
    route_var.set(None)


@contextlib.contextmanager
def request_context(*, request_id: str | None, route: str = "/mcp"):
    """The context of a request continued on another thread (`/mcp`'s server), restored after."""
    tokens = [(request_id_var, request_id_var.set(request_id_from(request_id))), (organisation_id_var, organisation_id_var.set(None)), (route_var, route_var.set(route))]
    try:
        yield
    finally:
        for variable, token in tokens:
            variable.reset(token)


def organisation_set(organisation_id: str | None) -> None:
    """The organisation the request (or task) acts for, once authentication knows it."""
    organisation_id_var.set(organisation_id)


def route_set(route: str | None) -> None:
    route_var.set(route)


def context_fields() -> dict[str, str]:
    """The request id, organisation and route known here (absent ones left out)."""
    fields = {}
    for name, variable in (("request_id", request_id_var), ("organisation", organisation_id_var), ("route", route_var)):
        value = variable.get()
        if value:
            fields[name] = value
    return fields


class RequestIdMiddleware:
    """Every answer carries `X-Request-Id`: the load balancer's, or one made here. The route is
    the URL pattern (`v1/persons/<subject>`), never the path with its values."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        request.request_id = request_begin(sent_id=request.META.get(REQUEST_ID_META))
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request.request_id
        request_answered(method=request.method, status=response.status_code, seconds=time.perf_counter() - started)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        route_set(route_of(request))


def route_of(request) -> str:
    """The request's URL pattern, bounded: `unmatched` when no pattern took it."""
    match = getattr(request, "resolver_match", None)
    if match is None or match.route is None:
        return "unmatched"
    return "/" + match.route.replace("^", "").replace("\\Z", "").replace("$", "")


def request_answered(*, method: str, status: int, seconds: float) -> None:
    """Counted by route, method and status; a line when access lines are on."""
    route = route_var.get() or "unmatched"
    http_request_seconds.labels(route=route, method=method if method in _METHODS else "other", status=str(status)).observe(seconds)
    if access_logger.isEnabledFor(logging.INFO):
        milliseconds = round(seconds * 1000, 1)
        # The message reads on its own in human lines; JSON lines have the same as fields.
        access_logger.info(
            "http.request %s %s %s %.1f ms", method, route, status, milliseconds, extra={"method": method, "status": status, "duration_ms": milliseconds}
        )


def _request_finished(**kwargs) -> None:
    # Django logs a refused request's line after the middleware returned: the context ends here.
    request_end()


request_finished.connect(_request_finished, dispatch_uid="core_memory.telemetry.request_end")
