"""Cursor pagination in the API's list shape: `{"data": [...], "next_cursor": "…"|null}`."""
import binascii
from base64 import urlsafe_b64decode, urlsafe_b64encode
from urllib.parse import parse_qs, urlparse

from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response

from rest_framework import serializers

from core_memory.base.errors import InvalidRequest
from core_memory.base.replicas import replica_read
from core_memory.base.storable import UNSTORABLE_CHARACTERS
from core_memory.base.validation import StrictSerializer

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def limit_from(query_params, *, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> int:
    raw = query_params.get("limit")
    if raw is None:
        return default
    try:
        limit = int(raw)
    except (TypeError, ValueError):
        raise InvalidRequest("limit must be an integer.", param="limit") from None
    if not 1 <= limit <= maximum:
        raise InvalidRequest(f"limit must be between 1 and {maximum}.", param="limit")
    return limit


# The largest value of PostgreSQL's `integer`, the type of positions and version numbers.
MAX_INTEGER_POSITION = 2**31 - 1


class ListQuerySerializer(StrictSerializer):
    """A list's query parameters: every one is text, unknown ones are refused, an empty value
    is checked like any other, and `limit`/`cursor` are the paginator's."""

    json_types = False
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, help_text=f"How many per page, 1 to {MAX_LIMIT}.")
    cursor = serializers.CharField(required=False, allow_blank=True)


def query_parameters_read(query_params, serializer_class: type[serializers.Serializer], *, repeatable: tuple[str, ...] = ()) -> dict:
    """The validated query parameters: one value each (the last), a list for `repeatable` names."""
    raw = {name: (query_params.getlist(name) if name in repeatable else query_params.get(name)) for name in query_params}
    serializer = serializer_class(data=raw)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class IdCursorPagination(CursorPagination):
    """Newest first by primary key (ids are time-ordered, core_memory.base.ids)."""

    ordering = "-id"
    cursor_query_param = "cursor"
    page_size = DEFAULT_LIMIT
    # True when the ordering column is an integer: a position must then be a number it holds.
    integer_position = False

    def get_page_size(self, request) -> int:
        return limit_from(request.query_params)

    def decode_cursor(self, request):
        if request.query_params.get(self.cursor_query_param) == "":
            return None  # `cursor=` asks for the first page
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is None:
            # Every cursor this API gives names a position; DRF would read any other
            # base64 as "the first page" and a client would loop for ever.
            raise NotFound(self.invalid_cursor_message)
        if cursor is not None and not self._position_is_valid(cursor.position):
            # A forged position reaches SQL: NUL in text, or a number the column cannot hold.
            raise NotFound(self.invalid_cursor_message)
        return cursor

    def _position_is_valid(self, position: str) -> bool:
        if UNSTORABLE_CHARACTERS.search(position):
            return False
        if self.integer_position:
            return position.isascii() and position.isdecimal() and int(position) <= MAX_INTEGER_POSITION
        return True

    def paginate_queryset(self, queryset, request, view=None):
        try:
            return super().paginate_queryset(queryset, request, view)
        except NotFound:
            raise InvalidRequest("The cursor is not valid.", param="cursor") from None

    def next_cursor(self) -> str | None:
        link = self.get_next_link()
        if not link:
            return None
        return parse_qs(urlparse(link).query).get(self.cursor_query_param, [None])[0]

    def get_paginated_response(self, data) -> Response:
        return Response({"data": data, "next_cursor": self.next_cursor()})

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["data", "next_cursor"],
            "properties": {"data": schema, "next_cursor": {"type": "string", "nullable": True}},
        }


def paginated_response(*, queryset, request, view, serializer_class, pagination_class=IdCursorPagination, shown=None) -> Response:
    """One page of `queryset`; `shown(page)` gives what the caller may see of it (the same objects, or copies).
    Read on a replica where one is configured and has seen the caller's writes."""
    paginator = pagination_class()

    def page_read() -> list:
        page = paginator.paginate_queryset(queryset, request, view=view)
        if shown is not None:
            page = shown(page)
        return serializer_class(page, many=True).data

    return paginator.get_paginated_response(replica_read(view.reader, page_read))


def sequence_paginated_response(*, items: list, request) -> Response:
    """The API's list shape for a short list built in memory (the models, the tools): `limit` and an
    opaque `cursor` as every list has them, the cursor holding the next item's offset."""
    limit = limit_from(request.query_params)
    offset = _sequence_offset(request.query_params.get("cursor"), length=len(items))
    end = offset + limit
    next_cursor = urlsafe_b64encode(f"o={end}".encode()).decode() if end < len(items) else None
    return Response({"data": items[offset:end], "next_cursor": next_cursor})


def _sequence_offset(cursor: str | None, *, length: int) -> int:
    if not cursor:
        return 0
    try:
        text = urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
    except (UnicodeError, binascii.Error, ValueError):
        text = ""
    digits = text.removeprefix("o=")
    if not text.startswith("o=") or not digits.isdecimal() or not 0 < int(digits) <= length:
        raise InvalidRequest("The cursor is not valid.", param="cursor")
    return int(digits)
