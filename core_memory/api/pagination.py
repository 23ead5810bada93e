"""Cursor pagination with SPEC R-2.4's shape: `{"data": [...], "next_cursor": "…"|null}`."""
from urllib.parse import parse_qs, urlparse

from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response

from core_memory.base.errors import InvalidRequest

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def limit_from(query_params, *, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> int:
    raw = query_params.get("limit")
    if raw in (None, ""):
        return default
    try:
        limit = int(raw)
    except (TypeError, ValueError):
        raise InvalidRequest("limit must be an integer.", param="limit") from None
    if not 1 <= limit <= maximum:
        raise InvalidRequest(f"limit must be between 1 and {maximum}.", param="limit")
    return limit


class IdCursorPagination(CursorPagination):
    """Newest first by primary key (ids are time-ordered, core_memory.base.ids)."""

    ordering = "-id"
    cursor_query_param = "cursor"
    page_size = DEFAULT_LIMIT

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
        return cursor

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


def paginated_response(*, queryset, request, view, serializer_class, pagination_class=IdCursorPagination) -> Response:
    paginator = pagination_class()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)
