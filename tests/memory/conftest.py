"""Builders for the record tests: age records by moving their clock (`write` is in tests/conftest.py)."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memory.models import MemoryRecord


def age(record: MemoryRecord, *, days: float, now=None) -> MemoryRecord:
    """Moves the record's decay clock `days` back from `now` (no history version: test set-up)."""
    changed_at = (now or timezone.now()) - timedelta(days=days)
    MemoryRecord.objects.unscoped().filter(pk=record.pk).update(changed_at=changed_at)
    record.changed_at = changed_at
    return record
