"""Builders for the record tests: age records by moving their clock (`write` is in tests/conftest.py),
another organisation's records, and the console's record pages."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.utils import timezone

from audit.models import AuditEvent
from memory.models import MemoryRecord
from memory.services import record_write


def age(record: MemoryRecord, *, days: float, now=None) -> MemoryRecord:
    """Moves the record's decay clock `days` back from `now` (no history version: test set-up)."""
    changed_at = (now or timezone.now()) - timedelta(days=days)
    MemoryRecord.objects.unscoped().filter(pk=record.pk).update(changed_at=changed_at)
    record.changed_at = changed_at
    return record


RECORDS = "/console/memory/memoryrecord/"


def record_url(record: MemoryRecord, page: str = "change") -> str:
    return f"{RECORDS}{quote(record.id)}/{page}/"


def listed_ids(response) -> list[str]:
    return [record.id for record in response.context["cl"].result_list]


def read_events():
    return AuditEvent.objects.filter(action="memory.console_read").order_by("id")


@pytest.fixture
def other_write(other_tenant):
    def _write(text: str, **fields) -> MemoryRecord:
        return record_write(
            key=other_tenant.key, index=other_tenant.index, subject=fields.pop("subject", None), type="fact", text=text, actor="test", **fields
        ).record

    return _write
