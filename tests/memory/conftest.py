"""Builders for the record tests: write through the service, age records by moving their clock."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import MemoryRecord
from memory.services import record_write
from tests.factories import resolved_for


@pytest.fixture
def write(tenant):
    """write(text, type="fact", subject=None, **fields) -> MemoryRecord, as the owner key."""

    def _write(text: str, *, type: str = "fact", subject: str | None = None, index=None, **fields) -> MemoryRecord:
        return record_write(
            key=tenant.key, index=resolved_for(tenant.key, index or tenant.index), subject=subject, type=type, text=text, actor="test", **fields
        ).record

    return _write


def age(record: MemoryRecord, *, days: float, now=None) -> MemoryRecord:
    """Moves the record's decay clock `days` back from `now` (no history version: test set-up)."""
    changed_at = (now or timezone.now()) - timedelta(days=days)
    MemoryRecord.objects.unscoped().filter(pk=record.pk).update(changed_at=changed_at)
    record.changed_at = changed_at
    return record
