from __future__ import annotations

from datetime import datetime
from unittest import mock

from audit.models import AuditEvent
from audit.services import audit_event_record


def audit_event_at(*, organisation_id: str, at: datetime, action: str = "key.updated") -> AuditEvent:
    """An event written as if the clock read `at` (the model stamps `at` itself)."""
    with mock.patch("django.utils.timezone.now", return_value=at):
        return AuditEvent.objects.create(organisation_id=organisation_id, actor="test", action=action)


def audit_event_of(tenant, target: str) -> AuditEvent:
    """An event of `tenant`'s organisation about `target`, written as the services write one."""
    return audit_event_record(organisation=tenant.organisation, actor="test", action="key.updated", target=target)
