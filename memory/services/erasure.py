"""Erasing a person's records, every version with them."""
from __future__ import annotations

from django.db import transaction
from django.db.models import Count, Q

from core_memory.base.callers import Caller
from memory.models import EmbeddingBatch, MemoryRecord


@transaction.atomic
def person_records_erase(*, caller: Caller, subject: str) -> dict[str, int]:
    """Hard-deletes every record of the person, with every historical version, and
    whatever rests on them alone (their contradiction links; maintenance's notes about them
    go by their foreign keys).

    Returns how many went, as `{"records": n, "episodes": n, "lessons": n}` (records: those of
    every other type). Other records that pointed at hers (`replaces`/`replaced_by`) keep
    living with the pointer cleared.
    """
    records = MemoryRecord.objects.for_organisation(caller.organisation_id).filter(subject=subject)
    per_type = dict(records.order_by().values_list("type").annotate(count=Count("id")))
    record_ids = list(records.values_list("id", flat=True))
    records.delete()
    # After the delete, which itself adds a "-" version for each record.
    MemoryRecord.history.filter(Q(id__in=record_ids) | Q(organisation_id=caller.organisation_id, subject=subject)).delete()
    _embedding_batches_forget(caller=caller, record_ids=record_ids)
    counts = {kind: per_type.pop(kind, 0) for kind in ("episode", "lesson")}
    return {"records": sum(per_type.values()), "episodes": counts["episode"], "lessons": counts["lesson"]}


def _embedding_batches_forget(*, caller: Caller, record_ids: list[str]) -> None:
    """A model switch's batches list the records they were planned for; her ids leave those lists
    with her records (a batch left with none has nothing to embed when it runs)."""
    if not record_ids:
        return
    gone = set(record_ids)
    batches = EmbeddingBatch.objects.for_organisation(caller.organisation_id).filter(record_ids__has_any_keys=record_ids)
    for batch in batches.select_for_update():
        batch.record_ids = [record_id for record_id in batch.record_ids if record_id not in gone]
        batch.save(update_fields=["record_ids"])
