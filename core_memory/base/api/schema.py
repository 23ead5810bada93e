"""The OpenAPI document, from our view convention (tests/core_memory/api/test_schema.py holds it
to the truth):

- each APIView's nested `InputSerializer` is the request body and its `OutputSerializer` the
  answer; a view with a `pagination_class` answers a page of them on GET, with `limit` and
  `cursor`; a `FilterSerializer` gives a GET's query parameters;
- a method's docstring is the operation's words: its first line the summary, the rest the
  description (a view's class docstring is for developers: it names the routes the view serves);
- every operation documents the error answers it can give, the `X-Core-Subject` header
  and, when it changes something, `Idempotency-Key`; the bearer credential is the security
  scheme;
- status codes and bodies other than "200 with the OutputSerializer" (a 201, a write's 200/201,
  a list envelope) are stated with `extend_schema(responses=...)` on the method.
"""
from __future__ import annotations

import re

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema_field, inline_serializer
from rest_framework import serializers

from core_memory.base.api.pagination import DEFAULT_LIMIT, MAX_LIMIT
from core_memory.base.validation import StrictSerializer

MUTATING_METHODS = ("POST", "PUT", "PATCH", "DELETE")
# "At least one character that is not whitespace", as the API trims text (Python's whitespace)
# and as a client reads the document (JSON Schema's patterns are ECMA-262, whose `\s` leaves out
# the separators U+001C–U+001F and U+0085 that Python strips): named here, so both agree.
NOT_BLANK_PATTERN = r"[^\s\x1c-\x1f\x85]"
# A person (a subject): an opaque string of 1 to 255 characters, not only whitespace.
PERSON = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": NOT_BLANK_PATTERN}
PATH_VARIABLE = re.compile(r"{[^}]+}")


@extend_schema_field(PERSON)
class PersonField(serializers.CharField):
    """A person named in a body, kept as written (her name is opaque, so it is not trimmed); the
    document gives it the rule of every person of the API, which the view checks
    (core_memory.base.api.views.validate_subject)."""

    def __init__(self, **kwargs):
        super().__init__(max_length=PERSON["maxLength"], trim_whitespace=False, **kwargs)


class ErrorDetailSerializer(serializers.Serializer):
    type = serializers.CharField(
        help_text="A stable kind: invalid_request_error, authentication_error, permission_error, "
        "not_found_error, conflict_error, idempotency_error, …"
    )
    message = serializers.CharField(help_text="What went wrong, in words.")
    param = serializers.CharField(allow_null=True, help_text="The offending field with its path (e.g. `tools[1]`), or null.")


class ErrorSerializer(serializers.Serializer):
    """The error body every API error answers: `{"error": {...}}`."""

    error = ErrorDetailSerializer()


ERROR_WORDS = {
    400: "The request is not valid: a field, a query parameter or a header is wrong or unknown; `param` names it.",
    401: "No credential, or an unknown, revoked or expired one.",
    403: "The credential may not do this: a capability or the policy's right is missing, or a subject "
    "token acts for another person than `X-Core-Subject` names.",
    404: "No such object for this key: it does not exist, belongs to another organisation, or lies in an "
    "index the key's policy does not name (all answer alike).",
    409: "A conflict: the object changed meanwhile, or a request with this `Idempotency-Key` is still running.",
    415: "The body is not JSON (`Content-Type: application/json`).",
    422: "Understood but refused: a value the rules do not allow (`param` names it), or this "
    "`Idempotency-Key` was used with another body.",
    413: "The body is larger than the server takes (`CORE_MAX_REQUEST_BYTES`).",
    429: "Too many requests for this key, or without a valid credential from this address: the bucket is empty; "
    "`Retry-After` says when to try again, `X-RateLimit-*` where the bucket stands.",
    503: "The database or the broker is unreachable for a moment; nothing was written. `Retry-After` says when to try again.",
}


SUCCESS_WORDS = {"200": "OK.", "201": "Created.", "204": "Done; no body."}


def error_responses(*codes: int, **words: str) -> dict:
    """`extend_schema(responses=...)` entries for error answers; `words` overrides a code's
    description, keyed `e404="…"`."""
    return {
        code: OpenApiResponse(ErrorSerializer, description=words.get(f"e{code}", ERROR_WORDS[code])) for code in codes
    }


def list_envelope(name: str, item: type[serializers.Serializer] | serializers.Serializer, *, cursor: bool = True):
    """The answer `{"data": [...], "next_cursor": null}` of a list that is not paginated
    (all of it fits in one answer)."""
    fields = {"data": item(many=True) if isinstance(item, type) else item}
    if cursor:
        fields["next_cursor"] = serializers.CharField(allow_null=True, help_text="The cursor of the next page (`limit`), or null.")
    return inline_serializer(name=name, fields=fields)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _doc_parts(function) -> tuple[str, str]:
    doc = (getattr(function, "__doc__", None) or "").strip()
    summary, _, rest = doc.partition("\n")
    # Dedent the rest: docstrings are indented in the source.
    lines = rest.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return summary.strip(), "\n".join(line[indent:] for line in lines).strip()


class CoreAutoSchema(AutoSchema):
    # The error body every error answer documents.
    error_serializer: type[serializers.Serializer] = ErrorSerializer

    def _map_serializer(self, serializer, direction, bypass_extensions=False):
        mapped = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and isinstance(serializer, StrictSerializer) and mapped.get("type") == "object":
            # A field the serializer does not know is a 400 (docs/decisions.md "Unknown fields").
            mapped["additionalProperties"] = False
        return mapped

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        mapped = super()._map_serializer_field(field, direction, bypass_extensions)
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and not field.allow_blank
            and field.trim_whitespace
            and mapped.get("type") == "string"
            and "pattern" not in mapped
            and not any(isinstance(validator, RegexValidator) for validator in field.validators)
        ):
            # The field is trimmed before it is read, so a value of only whitespace is blank
            # (a 400): it must hold one character that is not whitespace. A field with a pattern
            # of its own says more than this already.
            mapped["pattern"] = NOT_BLANK_PATTERN
        return mapped

    def _method_function(self):
        return getattr(self.view, self.method.lower(), None)

    def get_summary(self):
        return _doc_parts(self._method_function())[0] or None

    def get_description(self):
        return _doc_parts(self._method_function())[1]

    def get_request_serializer(self):
        if self.method in ("GET", "DELETE", "HEAD"):
            return None
        return getattr(self.view, "InputSerializer", None)

    def get_response_serializers(self):
        serializer = getattr(self.view, "OutputSerializer", None)
        if serializer is None:
            return None
        if self.method == "GET" and getattr(self.view, "pagination_class", None) is not None:
            return serializer(many=True)
        return serializer

    def _get_paginator(self):
        if self.method != "GET":
            return None
        pagination_class = getattr(self.view, "pagination_class", None)
        return pagination_class() if pagination_class is not None else None

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, response in responses.items():
            if code in SUCCESS_WORDS and not response.get("description"):
                response["description"] = SUCCESS_WORDS[code]
        for code in self._error_codes():
            if str(code) not in responses:
                responses[str(code)] = self._get_response_for_code(
                    OpenApiResponse(self.error_serializer, description=ERROR_WORDS[code]), str(code), direction=direction
                )
        return dict(sorted(responses.items()))

    def _error_codes(self) -> list[int]:
        codes = [400, 401, 403]
        if PATH_VARIABLE.search(self.path):
            codes.append(404)
        if self.method in MUTATING_METHODS:
            codes += [409, 422]
        if self.get_request_serializer() is not None:
            codes += [413, 415]
        return [*codes, 429, 503]

    def get_override_parameters(self):
        parameters: list = [
            OpenApiParameter(
                "X-Core-Subject",
                PERSON,
                OpenApiParameter.HEADER,
                description="The person this request is for, an opaque string of at most 255 characters. "
                "A subject token already names its person: another value here is a 403.",
            )
        ]
        if "{subject}" in self.path:
            parameters.append(
                OpenApiParameter("subject", PERSON, OpenApiParameter.PATH, description="The person, as the API names her elsewhere.")
            )
        if self.method in MUTATING_METHODS:
            parameters.append(
                OpenApiParameter(
                    "Idempotency-Key",
                    {"type": "string", "minLength": 1, "maxLength": 255},
                    OpenApiParameter.HEADER,
                    description="Any unique string (a UUID). A retry with the same key and body within 24 hours "
                    "answers the first answer again (header `Idempotent-Replayed: true`) and writes nothing new.",
                )
            )
        filters = getattr(self.view, "FilterSerializer", None)
        if self.method == "GET" and filters is not None:
            parameters.append(filters)
        if self._get_paginator() is not None:
            parameters += [
                OpenApiParameter(
                    "limit",
                    {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
                    OpenApiParameter.QUERY,
                    description=f"How many per page, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}).",
                ),
                OpenApiParameter(
                    "cursor",
                    str,
                    OpenApiParameter.QUERY,
                    description="The `next_cursor` of the previous page; omit it for the first page.",
                ),
            ]
        return parameters

    def get_filter_backends(self):
        return []

    def get_operation_id(self) -> str:
        view_name = type(self.view).__name__.removesuffix("Api")
        return f"{_snake(view_name)}_{self.method.lower()}"

    def get_serializer_name(self, serializer, direction) -> str:
        # Nested `InputSerializer`s of many views would all be called "Input".
        qualified = type(serializer).__qualname__.replace("Serializer", "").replace("Api.", "")
        return qualified.replace(".", "")


class KeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "core_memory.keys.authentication.KeyAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer <secret>` with a key secret `core_sk_…` or a subject token "
            "`core_st_…` (which acts as its key, for one person).",
        }
