from __future__ import annotations

from django.db.models import QuerySet

from audit.filters import AuditEventFilter
from audit.models import AuditEvent
from core_memory.organisations.models import Organisation


def audit_event_list(*, organisation: Organisation, filters: dict | None = None) -> QuerySet[AuditEvent]:
    """The organisation's events, newest first, narrowed by validated `filters` (R-11.3)."""
    events = AuditEvent.objects.filter(organisation_id=organisation.id)
    return AuditEventFilter(filters or {}, queryset=events).qs
