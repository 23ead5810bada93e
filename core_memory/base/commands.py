"""What the background commands share: `run_extraction` and `run_maintenance` run as if the
clock read `--now`."""
from __future__ import annotations

from datetime import datetime

from django.core.management.base import CommandError
from django.utils import timezone


def now_option(value: str | None) -> datetime:
    """A command's `--now`: ISO 8601 with an offset; the clock when it is not given."""
    if value is None:
        return timezone.now()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--now {value!r} is not ISO 8601.") from None
    if moment.tzinfo is None:
        raise CommandError("--now needs an offset, e.g. 2026-11-30T09:00:00+01:00.")
    return moment
