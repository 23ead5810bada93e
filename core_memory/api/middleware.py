from django.conf import settings
from django.http import JsonResponse
from django.utils import translation

from core_memory.api.exceptions import error_body, is_api_request


class ApiInEnglishMiddleware:
    """The API speaks English whatever the browser asks; the console is Dutch by default (R-10.4).

    Error messages are part of the API contract that clients log and match on, so
    they do not change with `Accept-Language`.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.startswith("/v1/"):
            translation.activate("en")
            request.LANGUAGE_CODE = "en"
        return self.get_response(request)


class ApiRequestSizeMiddleware:
    """An API body over `CORE_MAX_REQUEST_BYTES` is a 413 with R-2.3's JSON body before anything
    reads it (Django's own check would answer its HTML 400)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_api_request(request) and _content_length(request) > settings.CORE_MAX_REQUEST_BYTES:
            message = f"The request body is larger than {settings.CORE_MAX_REQUEST_BYTES} bytes."
            return JsonResponse(error_body(status_code=413, message=message, param=None), status=413)
        return self.get_response(request)


def _content_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0
