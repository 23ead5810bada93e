"""What PostgreSQL cannot store (R-12.3), found before it reaches a query.

PostgreSQL refuses a NUL character in `text` and `jsonb`, a lone surrogate cannot be
encoded at all, and `jsonb` has no infinity; each would be a 500. The API's parser
refuses them in every body (core_memory.api.parsers); services that take text from
elsewhere can ask the same question.
"""
from __future__ import annotations

import math
import re
from datetime import datetime, timezone

UNSTORABLE_CHARACTERS = re.compile("[\x00\ud800-\udfff]")
UNSTORABLE_TEXT_MESSAGE = "Text may not contain NUL characters or lone surrogates."
UNSTORABLE_NUMBER_MESSAGE = "Numbers must be finite."
# Times PostgreSQL stores but Python cannot hand back once shown in any zone (±14 h):
# one such value makes every later read of its row a 500.
EARLIEST_TIME = datetime(1, 1, 2, tzinfo=timezone.utc)
LATEST_TIME = datetime(9999, 12, 30, tzinfo=timezone.utc)


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
