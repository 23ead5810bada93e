"""Changing a record after it was written: a key's or a console administrator's update and
delete (soft: its history stays for auditors), and the console's export of chosen records.
Each reads what it changes through the matching scoped entry, never trusting a row it is handed."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from audit.services import audit_event_record
from core_memory.base.errors import Conflict, NotFound
from core_memory.base.storable import metadata_check
from core_memory.base.callers import Caller
from memory.embedding.services import record_vector_forget
from memory.exporting import records_export_with_history
from memory.models import MemoryRecord
from memory.selectors import record_get_available
from memory.services.contradictions import contradictions_clear
from memory.services.rules import (
    UPDATABLE_FIELDS,
    change_reason,
    due_check,
    embedding_schedule,
    expiry_check,
    is_unique_active_violation,
    record_event_emit,
    text_check,
    text_normalise,
    write_right_check,
)


def record_update(*, caller: Caller, record_id: str, changes: dict, now: datetime | None = None) -> MemoryRecord:
    """PATCH by a key: a record it may address (404 otherwise; for a request naming a
    person only her own), in an index it may write (403 and `memory.write_denied`).
    Whitelisted fields; any change restarts the decay age. Audited."""
    key = caller.key
    record = record_get_available(caller=caller, record_id=record_id, own_only=True)
    write_right_check(caller=caller, index_id=record.index_id, param=None)
    return _record_change(records=MemoryRecord.objects.for_key(key), record_id=record.pk, caller=caller, changes=changes, now=now)


def record_update_by_administrator(*, caller: Caller, record_id: str, changes: dict, now: datetime | None = None) -> MemoryRecord:
    """A console administrator's (`Caller.console`) correction of a record of her organisation."""
    records = MemoryRecord.objects.for_organisation(caller.whole_organisation_id).exclude(status=MemoryRecord.Status.DELETED)
    return _record_change(records=records, record_id=record_id, caller=caller, changes=changes, now=now)


@transaction.atomic(durable=True)
def _record_change(*, records: QuerySet[MemoryRecord], record_id: str, caller: Caller, changes: dict, now: datetime | None) -> MemoryRecord:
    return record_change_within(records=records, record_id=record_id, caller=caller, changes=changes, now=now)


def record_change_within(
    *, records: QuerySet[MemoryRecord], record_id: str, caller: Caller, changes: dict, now: datetime | None, what: str = "updated"
) -> MemoryRecord:
    """`changes` to the record, inside the caller's transaction: checked, versioned as `what`, audited
    as `memory.updated` by the caller. Nothing to change: the record as it is, no version."""
    actor = caller.actor
    locked = records.select_for_update(of=("self",)).select_related("index").filter(pk=record_id).first()
    if locked is None:
        raise NotFound("No such record.")
    if locked.status != MemoryRecord.Status.ACTIVE:
        raise Conflict(gettext("Only an active record can change."), param=None)
    fields = [field for field in UPDATABLE_FIELDS if field in changes]
    due_check(type_name=locked.type, due_at=changes.get("due_at"), done=changes.get("done"))
    expiry_check(expires_at=changes.get("expires_at"), now=None)
    if "metadata" in fields:
        metadata_check(changes["metadata"], param="metadata")
    if "text" in fields:
        text_check(changes["text"])
        locked.normalised_text = text_normalise(changes["text"])
        fields.append("normalised_text")
        if locked.contested and changes["text"] != locked.text:
            # Re-worded, it is a correction in place: what it contradicted is for the next run to judge.
            contradictions_clear(record=locked, actor=actor)
            fields.append("contested")
    for field in UPDATABLE_FIELDS:
        if field in changes:
            setattr(locked, field, changes[field])
    if not fields:
        return locked
    locked.changed_at = now or timezone.now()
    locked._change_reason = change_reason(what=what, actor=actor)
    try:
        with transaction.atomic():
            locked.save(update_fields=[*fields, "changed_at", "updated_at"])
    except IntegrityError as error:
        if is_unique_active_violation(error):
            raise Conflict(gettext("An active record of this person and type already has that text."), param="text") from error
        raise
    if "text" in fields:
        # The old text's vector goes now; the new one follows the commit.
        record_vector_forget(index=locked.index, record_ids=[locked.id])
        embedding_schedule(index=locked.index, record_id=locked.id)
    audit_event_record(
        caller=caller, action="memory.updated",
        target=locked.id,
        details={"fields": [field for field in fields if field not in ("normalised_text", "contested")]},
    )
    record_event_emit(
        record=locked, kind="record.updated", change="updated",
        fields=[field for field in fields if field not in ("normalised_text", "contested")],
    )
    return locked


def record_delete(*, caller: Caller, record_id: str) -> None:
    """DELETE by a key, with the rights of `record_update`: a soft delete, so its
    history stays readable to auditors while the record is invisible everywhere. A record
    it ended stays ended. Audited."""
    key = caller.key
    record = record_get_available(caller=caller, record_id=record_id, own_only=True)
    write_right_check(caller=caller, index_id=record.index_id, param=None)
    _record_soft_delete(records=MemoryRecord.objects.for_key(key), record_id=record.pk, caller=caller)


def record_delete_by_administrator(*, caller: Caller, record_id: str) -> None:
    """A console administrator's (`Caller.console`) deletion of a record of her organisation."""
    _record_soft_delete(records=MemoryRecord.objects.for_organisation(caller.whole_organisation_id), record_id=record_id, caller=caller)


@transaction.atomic(durable=True)
def records_delete_by_administrator(*, caller: Caller, record_ids: Sequence[str]) -> int:
    """A console administrator's (`Caller.console`) deletion of several records at once: all of
    them or, on an error, none. Returns how many were deleted (one already deleted, or not of the
    organisation, is not)."""
    records = MemoryRecord.objects.for_organisation(caller.whole_organisation_id)
    # In a fixed order, so that two deletions of overlapping records lock them the same way round.
    return sum(record_soft_delete_locked(records=records, record_id=record_id, caller=caller) for record_id in sorted(set(record_ids)))


@transaction.atomic(durable=True)
def _record_soft_delete(*, records: QuerySet[MemoryRecord], record_id: str, caller: Caller) -> None:
    record_soft_delete_locked(records=records, record_id=record_id, caller=caller)


def record_soft_delete_locked(*, records: QuerySet[MemoryRecord], record_id: str, caller: Caller) -> bool:
    locked = records.select_for_update(of=("self",)).select_related("index").filter(pk=record_id).first()
    if locked is None or locked.status == MemoryRecord.Status.DELETED:
        return False
    record_retire(
        record=locked, status=MemoryRecord.Status.DELETED, caller=caller, what="deleted", action="memory.deleted", kind="record.deleted",
        details={"index_id": locked.index_id},
    )
    return True


def record_retire(*, record: MemoryRecord, status: str, caller: Caller, what: str, action: str, kind: str, details: dict) -> None:
    """The locked record leaves every read (deleted, or ended when it expired): its new status in
    a version saying `what`, its contradiction links gone, its vector gone, audited as `action`
    by the caller and told to webhooks as `kind`."""
    actor = caller.actor
    record.status = status
    contradictions_clear(record=record, actor=actor)
    record._change_reason = change_reason(what=what, actor=actor)
    record.save(update_fields=["status", "contested", "updated_at"])
    record_vector_forget(index=record.index, record_ids=[record.id])
    audit_event_record(caller=caller, action=action, target=record.id, details=details)
    record_event_emit(record=record, kind=kind, change=what)


@transaction.atomic(durable=True)
def records_export_by_administrator(*, caller: Caller, record_ids: Sequence[str]) -> list[dict]:
    """The chosen records of the administrator's (`Caller.console`) organisation as export lines
    with their history (memory.exporting, what `import_memory` reads back), audited as
    `memory.exported` naming them."""
    organisation_id = caller.whole_organisation_id
    records = list(MemoryRecord.objects.for_organisation(organisation_id).filter(pk__in=list(record_ids)).order_by("index_id", "id"))
    lines = records_export_with_history(records)
    audit_event_record(
        caller=caller, action="memory.exported",
        details={"records": len(records), "record_ids": [record.id for record in records]},
    )
    return lines
