"""What the console records about reading memory.

A read of records in the console is itself audited: who looked (`console:<username>`)
and what was shown. The console's admin pages (memory.admin) call this before they
render, so that a failed audit write shows nothing.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from audit.models import AuditEvent
from audit.services import audit_event_record
from core_memory.base.callers import Caller

CONSOLE_READ = "memory.console_read"


@transaction.atomic
def console_read_audit(
    *,
    actor: str,
    page: str,
    shown: Iterable[tuple[str, str]],
    organisation_id: str | None = None,
    target: str = "",
    details: dict | None = None,
) -> list[AuditEvent]:
    """One `memory.console_read` event per organisation whose records were shown.

    `shown` is (record id, organisation id) for every record on the page, in page order;
    `page` names the console page (`list`, `record`, `history`, `delete`, `dashboard`,
    `persons`, `person`, `erase`, `threads`, `thread`); `details` says what else it showed. An
    administrator reads only her own organisation, so she writes exactly one event —
    also for a list page that showed no record, given her `organisation_id`. A
    superuser's page may span organisations: each organisation's log gets the ids of
    its own records only, and a page that showed nothing of anyone writes nothing.
    """
    record_ids_by_organisation: dict[str, list[str]] = {}
    if organisation_id:
        record_ids_by_organisation[organisation_id] = []
    for record_id, record_organisation_id in shown:
        record_ids_by_organisation.setdefault(record_organisation_id, []).append(record_id)
    return [
        audit_event_record(
            caller=Caller.console(organisation_id=each_organisation_id, actor=actor),
            action=CONSOLE_READ,
            target=target,
            details={"page": page, "record_ids": record_ids, **(details or {})},
        )
        for each_organisation_id, record_ids in record_ids_by_organisation.items()
    ]
