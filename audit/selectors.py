from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import QuerySet

from audit.filters import AuditEventFilter
from audit.models import AuditEvent

if TYPE_CHECKING:
    from core_memory.organisations.models import Organisation


def audit_event_list(*, organisation: Organisation, filters: dict | None = None) -> QuerySet[AuditEvent]:
    """The organisation's events, newest first, narrowed by validated `filters` (R-11.3)."""
    events = AuditEvent.objects.for_organisation(organisation)
    return AuditEventFilter(filters or {}, queryset=events).qs
