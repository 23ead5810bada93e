from __future__ import annotations

from datetime import datetime

from django.db import connection

from audit.models import AuditEvent
from audit.services import audit_event_record
from core_memory.base.callers import Caller


def audit_event_at(*, organisation_id: str, at: datetime, action: str = "key.updated") -> AuditEvent:
    """A new newest event of the organisation, dated `at`. The database dates every event itself,
    so this re-dates it behind the append-only trigger, as only a superuser can, and chains it
    again (its hash and the chain's head): written oldest first, the chain still verifies."""
    event = AuditEvent.objects.create(organisation_id=organisation_id, actor="test", action=action)
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only")
        cursor.execute(
            "UPDATE audit_auditevent SET at = %s, hash = audit_link_digest(organisation_id, sequence, previous_hash, %s,"
            " actor, action, target_commitment, details_commitment) WHERE id = %s RETURNING hash",
            [at, at, event.pk],
        )
        cursor.execute("UPDATE audit_auditchainhead SET hash = %s, at = %s WHERE organisation_id = %s", [cursor.fetchone()[0], at, organisation_id])
        cursor.execute("ALTER TABLE audit_auditevent ENABLE ALWAYS TRIGGER audit_event_append_only")
    event.at = at
    return event


def audit_event_of(tenant, target: str) -> AuditEvent:
    """An event of `tenant`'s organisation about `target`, written as the services write one."""
    return audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="key.updated", target=target)
