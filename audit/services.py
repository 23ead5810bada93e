"""Writing and purging audit events. Callers write events inside their own transaction."""
from __future__ import annotations

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
    "connector.deleted",
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
    """Delete each organisation's events older than its `audit_retention_days` (R-11.1).

    The database does it: `audit_retention_purge()` runs as the role `core_audit_purge`, the
    only one the append-only trigger lets delete, and removes only expired events at the start
    of each chain (audit/migrations/0003_hash_chain.py). `now` may lie in the past, never ahead.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT audit_retention_purge(%s)", [now or timezone.now()])
        return cursor.fetchone()[0]
