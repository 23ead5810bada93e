"""Merging duplicates: a console administrator picks two or more active records of one person in
one index that say the same thing, keeps one — its text as she words it — and the others end,
replaced by it, as a correction ends what it replaces. Every record gets a version saying so; each
ended one is audited (`memory.merged`), and a re-worded kept one as any correction (`memory.updated`)."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.utils.translation import gettext

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.base.errors import Conflict, InvalidRequest, NotFound
from memory.answers import record_fields_checked
from memory.models import MemoryRecord
from memory.services.changes import record_change_within
from memory.services.rules import change_reason, record_event_emit
from memory.services.writes import record_end

# The kinds of version a merge writes (memory.services.rules.change_reason's "what").
MERGED_INTO = "merged into"
KEPT_IN_MERGE = "merged"


@transaction.atomic(durable=True)
def records_merge_by_administrator(
    *, caller: Caller, record_ids: Sequence[str], kept_id: str, text: str | None = None, now: datetime | None = None
) -> MemoryRecord:
    """`record_ids` (two or more of the administrator's organisation) merged into `kept_id`, one of
    them, its text then `text` when given. All of it or, on an error naming what is wrong, nothing."""
    kept, others = _merge_checked(caller=caller, record_ids=record_ids, kept_id=kept_id, text=text, lock=True)
    actor = caller.actor
    for other in others:
        record_end(record=other, replaced_by=kept, actor=actor, what=MERGED_INTO)
        audit_event_record(
            caller=caller, action="memory.merged", target=other.pk, details={"merged_into": kept.pk},
        )
    # The duplicates are ended first: the kept record may now take the words one of them had.
    if text is not None and text != kept.text:
        records = MemoryRecord.objects.for_organisation(caller.whole_organisation_id)
        return record_change_within(records=records, record_id=kept.pk, caller=caller, changes={"text": text}, now=now, what=KEPT_IN_MERGE)
    kept._change_reason = change_reason(what=KEPT_IN_MERGE, actor=actor)
    kept.save(update_fields=["updated_at"])
    record_event_emit(record=kept, kind="record.updated", change=KEPT_IN_MERGE, merged=[other.pk for other in others])
    return kept


def records_merge_check(*, caller: Caller, record_ids: Sequence[str], kept_id: str, text: str | None = None) -> tuple[MemoryRecord, list[MemoryRecord]]:
    """What merging would do, changing nothing: (the record kept, the records it ends); an
    ApplicationError naming what is wrong, as the merge itself would raise."""
    return _merge_checked(caller=caller, record_ids=record_ids, kept_id=kept_id, text=text, lock=False)


def _merge_checked(*, caller: Caller, record_ids: Sequence[str], kept_id: str, text: str | None, lock: bool):
    wanted = sorted(set(record_ids))
    if len(wanted) < 2:
        raise InvalidRequest(gettext("Choose at least two records to merge."), param="record_ids")
    if kept_id not in wanted:
        raise InvalidRequest(gettext("The record kept must be one of those merged."), param="kept")
    if text is not None:
        text = record_fields_checked({"text": text})["text"]
    records = MemoryRecord.objects.for_organisation(caller.whole_organisation_id).filter(pk__in=wanted, index__deleted_at__isnull=True)
    if lock:  # in id order, as every locker of several records does, so two of them never deadlock
        records = records.select_for_update(of=("self",))
    found = {record.pk: record for record in records.select_related("index").order_by("pk")}
    if len(found) < len(wanted) or any(record.status == MemoryRecord.Status.DELETED for record in found.values()):
        raise NotFound("No such record.", param="record_ids")
    for record in found.values():
        if record.status != MemoryRecord.Status.ACTIVE:
            raise Conflict(gettext("Only active records are merged; %(id)s is no longer active.") % {"id": record.pk}, param="record_ids")
    if len({(record.index_id, record.subject) for record in found.values()}) > 1:
        raise InvalidRequest(gettext("Only records of one person in one index are merged."), param="record_ids")
    kept = found[kept_id]
    return kept, [record for record in found.values() if record is not kept]
