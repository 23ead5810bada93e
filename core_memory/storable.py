"""What PostgreSQL cannot store (R-12.3), found before it reaches a query.

PostgreSQL refuses a NUL character in `text` and `jsonb`, a lone surrogate cannot be
encoded at all, and `jsonb` has no infinity; each would be a 500. The API's parser
refuses them in every body (core_memory.api.parsers); services that take text from
elsewhere can ask the same question.
"""
from __future__ import annotations

import math
import re

UNSTORABLE_CHARACTERS = re.compile("[\x00\ud800-\udfff]")
UNSTORABLE_TEXT_MESSAGE = "Text may not contain NUL characters or lone surrogates."
UNSTORABLE_NUMBER_MESSAGE = "Numbers must be finite."


def unstorable_value(value, path: str = "") -> tuple[str, str] | None:
    """(path, message) of the first value that cannot be stored, else None.

    The path reads `a.b` and `tools[1]` from the root "" down; a bad field name is
    reported at the object that holds it.
    """
    if isinstance(value, str):
        return (path, UNSTORABLE_TEXT_MESSAGE) if UNSTORABLE_CHARACTERS.search(value) else None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, UNSTORABLE_NUMBER_MESSAGE)
    if isinstance(value, dict):
        for name, item in value.items():
            if not isinstance(name, str) or UNSTORABLE_CHARACTERS.search(name):
                return path, UNSTORABLE_TEXT_MESSAGE
            found = unstorable_value(item, f"{path}.{name}" if path else name)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for position, item in enumerate(value):
            found = unstorable_value(item, f"{path}[{position}]")
            if found is not None:
                return found
    return None
