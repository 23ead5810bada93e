"""What PostgreSQL cannot store, found before it reaches a query.

PostgreSQL refuses a NUL character in `text` and `jsonb`, a lone surrogate cannot be
encoded at all, and `jsonb` has no infinity; each would be a 500. The API's parser
refuses them in every body (core_memory.base.api.parsers); services that take text from
elsewhere can ask the same question.
"""
from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone

from core_memory.base.errors import InvalidRequest

UNSTORABLE_CHARACTERS = re.compile("[\x00\ud800-\udfff]")
UNSTORABLE_TEXT_MESSAGE = "Text may not contain NUL characters or lone surrogates."
UNSTORABLE_NUMBER_MESSAGE = "Numbers must be finite."
# Times PostgreSQL stores but Python cannot hand back once shown in any zone (±14 h):
# one such value makes every later read of its row a 500.
EARLIEST_TIME = datetime(1, 1, 2, tzinfo=timezone.utc)
LATEST_TIME = datetime(9999, 12, 30, tzinfo=timezone.utc)


# Metadata and item content are a label or two; far below the depth at which encoding
# them exhausts Python's stack.
MAX_JSON_DEPTH = 32
# Metadata labels a record or a thread; it is bounded like a record's text (20,000 characters)
# so that a client cannot park megabytes in it.
MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_KEYS = 100


def time_is_storable(value: datetime) -> bool:
    """An aware time that reads back in every zone."""
    return EARLIEST_TIME <= value <= LATEST_TIME


def unstorable_value(value, path: str = "") -> tuple[str, str] | None:
    """(path, message) of the first value that cannot be stored, else None.

    The path reads `a.b` and `tools[1]` from the root "" down; a bad field name is
    reported at the object that holds it. Walks with its own stack, so a deeply nested
    body costs no recursion.
    """
    pending = [(value, path)]
    while pending:
        item, at = pending.pop()
        if isinstance(item, str):
            if UNSTORABLE_CHARACTERS.search(item):
                return at, UNSTORABLE_TEXT_MESSAGE
        elif isinstance(item, float):
            if not math.isfinite(item):
                return at, UNSTORABLE_NUMBER_MESSAGE
        elif isinstance(item, dict):
            for name in item:
                if not isinstance(name, str) or UNSTORABLE_CHARACTERS.search(name):
                    return at, UNSTORABLE_TEXT_MESSAGE
            pending.extend((child, f"{at}.{name}" if at else name) for name, child in reversed(item.items()))
        elif isinstance(item, (list, tuple)):
            pending.extend((child, f"{at}[{position}]") for position, child in reversed(list(enumerate(item))))
    return None


def storable_check(value, *, param: str) -> None:
    """Refuses what PostgreSQL would refuse with a 500, for callers whose values
    did not come through the API's parser (the write tool, extraction, thread imports):
    what `unstorable_value` finds, and JSON nested deeper than MAX_JSON_DEPTH.
    `param` is the value's path; a nested value's path is `param.key` or `param[i]`."""
    found = unstorable_value(value, param)
    if found is not None:
        path, message = found
        raise InvalidRequest(message, param=path)
    pending = [(value, param, 0)]
    while pending:
        item, path, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            raise InvalidRequest(f"JSON may nest at most {MAX_JSON_DEPTH} levels deep.", param=path)
        if isinstance(item, dict):
            pending.extend((child, f"{path}.{name}", depth + 1) for name, child in item.items())
        elif isinstance(item, (list, tuple)):
            pending.extend((child, f"{path}[{position}]", depth + 1) for position, child in enumerate(item))


def metadata_check(value, *, param: str = "metadata") -> None:
    """A metadata object as records and threads keep it: storable (`storable_check`), an object
    of at most MAX_METADATA_KEYS keys, and at most MAX_METADATA_BYTES as compact UTF-8 JSON."""
    storable_check(value, param=param)
    if not isinstance(value, dict):
        raise InvalidRequest("metadata is a JSON object.", param=param)
    if len(value) > MAX_METADATA_KEYS:
        raise InvalidRequest(f"metadata holds at most {MAX_METADATA_KEYS} keys.", param=param)
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_METADATA_BYTES:
        raise InvalidRequest(f"metadata is at most {MAX_METADATA_BYTES} bytes as JSON.", param=param)
