"""Times as the console shows them: in the active time zone (the organisation's, set by
core_memory.console.middleware.ConsoleTimezoneMiddleware), in the language's format (core_memory.formats)
with the zone — or, in a list's column, without it: every page's header names the zone."""
from __future__ import annotations

from datetime import datetime

from django.utils import formats, timezone

EMPTY = "—"


def shown_time(value: datetime | None, *, seconds: bool = False, short: bool = False) -> str:
    """`seconds` for versions and audit events, which often follow each other within a minute;
    `short` for a list's column."""
    if value is None:
        return EMPTY
    local = timezone.localtime(value)
    if short:
        return formats.date_format(local, "SHORT_DATETIME_FORMAT")
    if seconds:
        with_seconds = formats.get_format("DATETIME_FORMAT").replace("H:i", "H:i:s")
        return formats.date_format(local, with_seconds)
    return formats.date_format(local, "DATETIME_FORMAT")
