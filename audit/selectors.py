from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from audit.filters import AuditEventFilter
from audit.models import AuditEvent
from core_memory.base.callers import Caller


def audit_event_list(*, caller: Caller, filters: dict | None = None) -> QuerySet[AuditEvent]:
    """The organisation's events, newest first, narrowed by validated `filters`."""
    events = AuditEvent.objects.for_organisation(caller.organisation_id)
    return AuditEventFilter(filters or {}, queryset=events).qs


def audit_events_counted(*, caller: Caller, action: str, since: datetime, excluding_actor: str = "") -> int:
    """How many of the organisation's `action` events since `since`, those of `excluding_actor` left out."""
    events = AuditEvent.objects.for_organisation(caller.organisation_id).filter(action=action, at__gte=since)
    return (events.exclude(actor=excluding_actor) if excluding_actor else events).count()


def platform_audit_events_counted(*, action: str, since: datetime) -> int:
    """How many `action` events since `since` in every organisation (a console superuser's dashboard)."""
    return AuditEvent.objects.unscoped().filter(action=action, at__gte=since).count()
