import logging
from urllib.parse import quote, urlsplit

from django.conf import settings
from django.db import InterfaceError
from django.db import OperationalError as DatabaseUnavailable
from django.http import HttpResponse
from django.middleware.common import CommonMiddleware
from django.urls import is_valid_path
from django.utils import translation
from kombu.exceptions import OperationalError as BrokerUnavailable

from core_memory.base.addresses import client_address
from core_memory.base.api.exceptions import api_error_response, is_api_request

logger = logging.getLogger(__name__)

CONSOLE_PREFIX = "/console/"
# Seconds a client is asked to wait when a service behind us is unreachable.
RETRY_AFTER_SECONDS = 5


class ClientAddressMiddleware:
    """`REMOTE_ADDR` is the client's address, also behind the operator's load balancers
    (`CORE_TRUSTED_PROXIES`, core_memory.base.addresses): what the rate limits and the console's
    login throttle count by. First, so every later part reads the same address."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.META["REMOTE_ADDR"] = client_address(request.META)
        return self.get_response(request)


class ApiInEnglishMiddleware:
    """The API speaks English whatever the browser asks; the console is Dutch by default.

    Error messages are part of the API contract that clients log and match on, so
    they do not change with `Accept-Language`.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_api_request(request):
            translation.activate("en")
            request.LANGUAGE_CODE = "en"
        return self.get_response(request)


PERSONS_PREFIX = "/v1/persons/"
# What stays as it is when the path Django decoded is encoded again: only the characters a
# path may hold raw, and `%` of escapes the client already wrote.
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"


class PersonPathAsSentMiddleware:
    """`/v1/persons/{subject}…` is routed on the path as the client sent it.

    The server decodes `%2F` to `/` before Django sees the path, so the person "x/export" (sent
    as `x%2Fexport`) would read as x's export and could not be erased. gunicorn hands on the
    path as sent (`RAW_URI`; other servers `REQUEST_URI`); the route's converter decodes the
    subject once. Without it (Django's test client, runserver) the decoded path is encoded
    again, which reads a raw slash as it always did."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.startswith(PERSONS_PREFIX):
            request.path_info = _path_as_sent(request) or quote(request.path_info, safe=_PATH_SAFE.replace("%", ""))
        return self.get_response(request)


def _path_as_sent(request) -> str | None:
    sent = request.META.get("RAW_URI") or request.META.get("REQUEST_URI")
    if not sent:
        return None
    path = urlsplit(sent).path
    script_name = request.META.get("SCRIPT_NAME", "").rstrip("/")
    if script_name and path.startswith(script_name):
        path = path[len(script_name):]
    if not path.startswith(PERSONS_PREFIX):
        return None
    try:
        # WSGI hands on the request line's bytes as latin-1: raw non-ASCII bytes become escapes.
        return quote(path.encode("latin-1"), safe=_PATH_SAFE)
    except UnicodeEncodeError:
        return None


class ApiRequestSizeMiddleware:
    """A body over `CORE_MAX_REQUEST_BYTES` is a 413 before anything reads it, at every address
    Django serves (`/mcp` checks its own, core_memory.mcp.http): an API client gets the JSON error body
    body (Django's own check would answer its HTML 400), the console a line of text."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if _content_length(request) > settings.CORE_MAX_REQUEST_BYTES:
            message = f"The request body is larger than {settings.CORE_MAX_REQUEST_BYTES} bytes."
            if request.path_info.startswith("/console/"):
                return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
            return api_error_response(request, status_code=413, message=message)
        return self.get_response(request)


def _content_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


class ServiceUnavailableMiddleware:
    """The database or the broker unreachable (or PostgreSQL cancelling a statement) is a 503
    with `Retry-After`, for the API in the JSON error body, not a 500. Whatever the request began was
    in a transaction that did not commit, so a retry starts from nothing. Django drops a
    connection that failed and opens a new one on the next request: no restart is needed."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, (DatabaseUnavailable, InterfaceError, BrokerUnavailable)):
            return None
        service = "broker" if isinstance(exception, BrokerUnavailable) else "database"
        logger.warning("service.unavailable", extra={"service": service, "error": type(exception).__name__, "path": request.path}, exc_info=exception)
        message = f"The {service} is unreachable for a moment; nothing was written. Retry shortly."
        if is_api_request(request):
            response = api_error_response(request, status_code=503, message=message, error_type="service_unavailable")
        else:
            response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response


class ConsoleSlashMiddleware(CommonMiddleware):
    """Django's common middleware, with its slash redirect for the console's pages only:
    `/console` and `/console/memory/memoryrecord` lead to their page. `APPEND_SLASH` stays off,
    because the API's addresses have no trailing slash and a redirect would lose a POST's body."""

    def should_redirect_with_slash(self, request) -> bool:
        path = request.path_info
        if path.endswith("/") or not (path == CONSOLE_PREFIX.rstrip("/") or path.startswith(CONSOLE_PREFIX)):
            return False
        return is_valid_path(f"{path}/", getattr(request, "urlconf", None))
