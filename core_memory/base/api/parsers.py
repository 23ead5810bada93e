"""The API's JSON parser: a body holding what PostgreSQL cannot store is a 400 naming
the field, on every route, before anything is claimed or written."""
from __future__ import annotations

from rest_framework.parsers import JSONParser

from core_memory.base.errors import InvalidRequest
from core_memory.base.storable import unstorable_value


class CoreJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            # Python's decoder gives up some hundreds of levels down, how many depends on the stack.
            raise InvalidRequest("The JSON body is nested too deeply.") from None
        found = unstorable_value(data)
        if found is not None:
            path, message = found
            raise InvalidRequest(message, param=path or None)
        return data
