"""The one domain error base. Services raise these; the API renders them."""
from __future__ import annotations


class ApplicationError(Exception):
    status_code = 400
    error_type = "invalid_request_error"

    def __init__(self, message: str, *, param: str | None = None, status_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        if status_code is not None:
            self.status_code = status_code


class InvalidRequest(ApplicationError):
    status_code = 400


class Unprocessable(ApplicationError):
    status_code = 422


class PermissionDenied(ApplicationError):
    status_code = 403
    error_type = "permission_error"


class NotFound(ApplicationError):
    status_code = 404
    error_type = "not_found_error"

    def __init__(self, message: str = "No such object.", *, param: str | None = None):
        super().__init__(message, param=param)


class Conflict(ApplicationError):
    status_code = 409
    error_type = "conflict_error"


class ImproperlyScoped(Exception):
    """A bug, not a request's fault: a function that checks tenancy was handed an object
    read outside the scope it checks (core_memory.base.tenancy). Never caught; a 500."""
