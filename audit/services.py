"""Writing and purging audit events. Callers write events inside their own transaction."""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from django.db import connection, transaction
from django.utils import timezone

from audit.models import AuditEvent
from core_memory.base.tenancy import organisation_id_of

if TYPE_CHECKING:
    from core_memory.organisations.models import Organisation

ACTIONS = (
    "memory.write_denied",
    "memory.console_read",
    "memory.deleted",
    "memory.updated",
    "extraction.switch_set",
    "store.updated",
    "key.created",
    "key.updated",
    "key.revoked",
    "key.deleted",
    "proposal.applied",
    "proposal.rejected",
    "person.erased",
    "person.updated",
    "index.created",
    "index.deleted",
    "organisation.updated",
)


def audit_event_record(*, organisation: Organisation | str, actor: str, action: str, target: str = "", details: dict | None = None) -> AuditEvent:
    organisation_id = organisation_id_of(organisation)
    return AuditEvent.objects.create(
        organisation_id=organisation_id, actor=actor, action=action, target=target, details=details or {}
    )


@transaction.atomic(durable=True)
def audit_retention_purge(*, now=None) -> int:
    """Delete each organisation's events older than its `audit_retention_days` (R-11.1)."""
    now = now or timezone.now()
    with connection.cursor() as cursor:
        # The trigger lets a DELETE through only while this transaction-local flag is set.
        cursor.execute("SET LOCAL core.audit_purge = 'on'")
        cursor.execute(
            """
            DELETE FROM audit_auditevent AS event
            USING organisations_organisation AS organisation
            WHERE event.organisation_id = organisation.id
              AND event.at < %s - make_interval(days => organisation.audit_retention_days)
            """,
            [now],
        )
        deleted = cursor.rowcount
        cursor.execute(
            "DELETE FROM audit_auditevent WHERE organisation_id NOT IN (SELECT id FROM organisations_organisation) AND at < %s",
            [now - timedelta(days=365)],
        )
        deleted += cursor.rowcount
        cursor.execute("SET LOCAL core.audit_purge = 'off'")
    return deleted
