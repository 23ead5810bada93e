"""Contradictions between records: maintenance marks pairs `contested` and links them; a
correction, deletion or re-wording clears them."""
from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.base.errors import InvalidRequest, NotFound
from memory.models import MemoryRecord
from memory.services.rules import change_reason, record_event_emit


def contradictions_clear(*, record: MemoryRecord, actor: str) -> None:
    """The record is corrected, deleted or re-worded: what maintenance found it to contradict
    no longer stands against it. Its links go and its mark with them (the caller saves
    the record); a record it contradicted keeps its mark only while it contradicts another.
    The partner's version says who cleared it; its `updated_at` stays (a mark is no change of
    what it says, so the next maintenance run does not look at it again for this)."""
    if not record.contested:
        return
    partners = list(record.contradicts.select_for_update(of=("self",)).order_by("pk"))
    record.contradicts.clear()
    record.contested = False
    for partner in partners:
        if partner.contested and not partner.contradicts.exists():
            partner.contested = False
            partner._change_reason = change_reason(what="no longer contested", actor=actor)
            partner.save(update_fields=["contested"])


def records_contradiction_mark_within(*, caller: Caller, pairs: Sequence[tuple[str, str]]) -> int:
    """Maintenance found each pair to contradict each other: both records are marked
    `contested` and linked to each other, inside the caller's transaction. A pair of which a
    record is no longer active, or of two records already linked, is left alone. Returns the
    number of pairs newly linked. Each newly marked record gets a version ("contested by …");
    its `updated_at` stays (see MemoryRecord)."""
    wanted = {tuple(sorted(pair)) for pair in pairs if pair[0] != pair[1]}
    if not wanted:
        return 0
    record_ids = sorted({record_id for pair in wanted for record_id in pair})
    # In id order, as every locker of several records does, so two of them never deadlock.
    records = {
        record.pk: record
        for record in MemoryRecord.objects.for_organisation(caller.organisation_id)
        .select_for_update()
        .filter(pk__in=record_ids, status=MemoryRecord.Status.ACTIVE)
        .order_by("pk")
    }
    through = MemoryRecord.contradicts.through
    linked = set(
        through.objects.filter(from_memoryrecord_id__in=records, to_memoryrecord_id__in=records).values_list(
            "from_memoryrecord_id", "to_memoryrecord_id"
        )
    )
    marked = 0
    for first_id, second_id in sorted(wanted):
        first, second = records.get(first_id), records.get(second_id)
        if first is None or second is None or (first_id, second_id) in linked:
            continue
        first.contradicts.add(second)
        marked += 1
        for record in (first, second):
            if not record.contested:
                record.contested = True
                record._change_reason = change_reason(what="contested", actor=caller.actor)
                record.save(update_fields=["contested"])
                partner = second if record is first else first
                record_event_emit(record=record, kind="record.contested", change="contested", contradicts=partner.id)
    return marked


@transaction.atomic(durable=True)
def contradiction_resolve(*, caller: Caller, record_id: str, other_id: str, kept_id: str | None) -> None:
    """A console administrator's (`caller`'s) decision on two records marked as contradicting each other.

    `kept_id` None: they do not contradict each other — their link goes, and each keeps its mark only
    while it contradicts another record; each gets a version saying so ("not contradicting …"), the
    decision is audited as `memory.contradiction_dismissed`. Their `updated_at` stays, so maintenance
    does not look at the pair again for this. `kept_id` one of the two: it replaces the other, which
    is ended as a correction ends what it replaces (`replaced_by` the kept one), audited as
    `memory.replaced`. Raises NotFound when the two are not an active pair of the organisation."""
    organisation_id, actor = caller.organisation_id, caller.actor
    records = {
        record.pk: record
        for record in MemoryRecord.objects.for_organisation(organisation_id)
        .select_for_update()
        .filter(pk__in=sorted({record_id, other_id}), status=MemoryRecord.Status.ACTIVE)
        .order_by("pk")
    }
    first, second = records.get(record_id), records.get(other_id)
    if first is None or second is None or record_id == other_id or not first.contradicts.filter(pk=other_id).exists():
        raise NotFound("These two records are not marked as contradicting each other.")
    if kept_id is None:
        first.contradicts.remove(second)
        for record, partner in ((first, second), (second, first)):
            record.contested = record.contradicts.exists()
            record._change_reason = change_reason(what=f"not contradicting {partner.pk}", actor=actor)
            record.save(update_fields=["contested"])
            record_event_emit(record=record, kind="record.updated", change="not contradicting", contradicts=partner.pk)
        audit_event_record(
            caller=caller, action="memory.contradiction_dismissed", target=first.pk,
            details={"record_ids": [first.pk, second.pk]},
        )
        return
    if kept_id not in records:
        raise InvalidRequest("The record kept must be one of the two.", param="kept")
    kept, ended = (first, second) if kept_id == first.pk else (second, first)
    ended.status = MemoryRecord.Status.ENDED
    ended.replaced_by_id = kept.pk
    contradictions_clear(record=ended, actor=actor)
    ended._change_reason = change_reason(what="ended", actor=actor)
    ended.save(update_fields=["status", "replaced_by", "contested", "updated_at"])
    record_event_emit(record=ended, kind="record.updated", change="ended", replaced_by=kept.pk)
    audit_event_record(
        caller=caller, action="memory.replaced", target=ended.pk, details={"replaced_by": kept.pk},
    )
