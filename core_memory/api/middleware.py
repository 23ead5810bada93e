from django.utils import translation


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
