"""One DRF exception handler: every error becomes the one JSON error body, `{"error": {...}}`.

`{"error": {"type": "...", "message": "...", "param": "<field path or null>"}}`
"""
from __future__ import annotations

import logging
import math

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions as drf
from rest_framework.response import Response

from core_memory.base.api.throttling import rate_limit_headers
from core_memory.base.errors import ApplicationError
from core_memory.base.validation import first_error

logger = logging.getLogger(__name__)

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    406: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    503: "service_unavailable",
}


def error_body(*, status_code: int, message: str, param: str | None, error_type: str | None = None) -> dict:
    return {"error": {"type": error_type or _TYPES.get(status_code, "api_error"), "message": message, "param": param}}


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, ApplicationError):
        return Response(
            error_body(status_code=exc.status_code, message=exc.message, param=exc.param, error_type=exc.error_type),
            status=exc.status_code,
        )
    if isinstance(exc, Http404):
        exc = drf.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    if not isinstance(exc, drf.APIException):
        return None  # a real bug: Django's 500 handling and logging take it
    headers = {}
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        headers["WWW-Authenticate"] = 'Bearer realm="core"'
        exc.status_code = 401
    if isinstance(exc, drf.Throttled):
        headers["Retry-After"] = str(math.ceil(exc.wait or 1))
        who = "without a valid credential from this address" if getattr(exc, "scope", "key") == "address" else "for this key"
        exc.detail = f"Too many requests {who}; retry in {headers['Retry-After']} seconds."
        # Every 429 says where its bucket stands, whichever bucket refused it.
        state = getattr(context.get("request"), "rate_limit_state", None)
        if state is not None:
            headers = {**rate_limit_headers(state), **headers}
    if isinstance(exc, drf.ValidationError):
        param, message = first_error(exc.detail)
        if param and message.startswith("This field"):
            message = f"{param}: {message}"
    elif isinstance(exc, drf.ParseError):
        param, message = None, str(exc.detail)
    else:
        param, message = None, str(exc.detail)
    return Response(error_body(status_code=exc.status_code, message=message, param=param), status=exc.status_code, headers=headers)


# OpenAI's error codes for the statuses that have one; the others answer `code: null` as OpenAI does.
_OPENAI_CODES = {401: "invalid_api_key", 404: "not_found", 413: "request_too_large", 429: "rate_limit_exceeded"}


def openai_error_body(*, status_code: int, message: str, param: str | None, error_type: str | None = None) -> tuple[int, dict]:
    """The status and body of an error on the OpenAI-compatible surface: OpenAI's shape
    (`{"error": {"message", "type", "param", "code"}}`), and a 400 where Core answers 422, since the
    OpenAI SDKs know no 422."""
    error_type = error_type or _TYPES.get(status_code, "api_error")
    code = _OPENAI_CODES.get(status_code)
    if status_code == 422:
        status_code, code = 400, "invalid_value"
    if param == "model" and status_code in (400, 404):
        code = "model_not_found"
    return status_code, {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def openai_exception_handler(exc: Exception, context: dict) -> Response | None:
    """`exception_handler`, answered in OpenAI's error shape (headers such as `Retry-After` kept)."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data["error"]
    response.status_code, response.data = openai_error_body(
        status_code=response.status_code, message=detail["message"], param=detail["param"], error_type=detail["type"]
    )
    return response


def is_openai_request(request) -> bool:
    return request.path_info == "/openai/v1" or request.path_info.startswith("/openai/v1/")


def is_api_request(request) -> bool:
    return request.path_info == "/v1" or request.path_info.startswith("/v1/") or is_openai_request(request)


def api_error_response(request, *, status_code: int, message: str, param: str | None = None, error_type: str | None = None) -> JsonResponse:
    """An error answered outside a view (middleware, Django's handlers), in the body of the
    surface the request came to."""
    if is_openai_request(request):
        status_code, body = openai_error_body(status_code=status_code, message=message, param=param, error_type=error_type)
    else:
        body = error_body(status_code=status_code, message=message, param=param, error_type=error_type)
    return JsonResponse(body, status=status_code)


def bad_request(request, exception=None):
    """`handler400`: a request Django itself refuses (a body over its size limit, a malformed
    header) answers an API client in the JSON error body too."""
    if is_api_request(request):
        if isinstance(exception, RequestDataTooBig):
            return api_error_response(request, status_code=413, message="The request body is too large.")
        return api_error_response(request, status_code=400, message="Bad request.")
    return defaults.bad_request(request, exception)


def not_found(request, exception=None):
    """`handler404`: an address under /v1/ that names no route answers the JSON error body too."""
    if is_api_request(request):
        return api_error_response(request, status_code=404, message="No such route.")
    return defaults.page_not_found(request, exception)


def server_error(request):
    """`handler500`: an API client gets the JSON error body for a bug as well (the bug is logged)."""
    if is_api_request(request):
        return api_error_response(request, status_code=500, message="Internal error.")
    return defaults.server_error(request)
