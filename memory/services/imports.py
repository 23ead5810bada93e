"""Writing imported records: each with the rules of a write and kept whole (its times,
confirmations, status), then the corrections and contradictions between them."""
from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction

from core_memory.base.errors import Conflict, Unprocessable
from core_memory.base.storable import metadata_check
from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.selectors import CORE_WRITTEN_TYPES, EVENT_TYPES
from memory.services.rules import (
    change_reason,
    due_check,
    embedding_schedule,
    is_unique_active_violation,
    record_active_twin,
    record_confirm,
    record_event_emit,
    record_write_authorise,
    text_check,
    text_normalise,
    type_check,
)
from memory.services.writes import RecordWriteResult, provenance_fields
from stores.models import KnowledgeIndex


def record_import_within(
    *,
    caller: Caller,
    index: KnowledgeIndex,
    values: dict,
    core_written_allowed: bool,
    now: datetime,
) -> RecordWriteResult:
    """A record as an export held it (docs/portability.md), written with the rules of
    `record_write_within` — the caller's key's write right, the type rules, a text she already has
    (active) is confirmed — and kept whole: its times, confirmations, confidence, due date,
    structured fields, provenance, status and source. Core's own types (episode, lesson) only
    when `core_written_allowed` (an import of Core's export by a key with `management`).
    `values` are the record's fields as `memory.importing` read them; `import_source` names
    where it came from. Inside the caller's transaction."""
    record_write_authorise(caller=caller, index=index)
    _import_check(index=index, values=values, core_written_allowed=core_written_allowed)
    type_name, status, source = values["type"], values["status"], values["source"]
    normalised = text_normalise(values["text"])
    if status == MemoryRecord.Status.ACTIVE and type_name not in EVENT_TYPES:
        twin = record_active_twin(index=index, subject=values["subject"], type_name=type_name, normalised_text=normalised)
        if twin is not None:
            return RecordWriteResult(record=record_confirm(record=twin, actor=caller.actor, now=now), status="confirmed")
    record = MemoryRecord(
        organisation_id=index.organisation_id,
        index=index,
        subject=values["subject"],
        type=type_name,
        text=values["text"],
        normalised_text=normalised,
        metadata=values["metadata"],
        confidence=values["confidence"],
        status=status,
        confirmations=values["confirmations"],
        last_confirmed_at=values["last_confirmed_at"],
        contested=values["contested"],
        retrieval_count=values["retrieval_count"],
        source=source,
        trusted=values["trusted"],
        **provenance_fields(values["provenance"]),
        due_at=values["due_at"], expires_at=values["expires_at"],
        done=values["done"],
        structured=values["structured"],
        changed_at=values["updated_at"] or values["created_at"] or now,
        import_source=values["import_source"],
    )
    record._change_reason = change_reason(what="imported", actor=caller.actor)
    try:
        with transaction.atomic():
            record.save(force_insert=True)
    except IntegrityError as error:
        if not is_unique_active_violation(error):
            raise
        raise Conflict("A concurrent write made the same record; retry.", param="text") from error
    _imported_times_keep(record=record, values=values)
    record_event_emit(record=record, kind="record.created", change="imported")
    if status == MemoryRecord.Status.ACTIVE:
        embedding_schedule(index=index, record_id=record.id)
    return RecordWriteResult(record=record, status="created")


def _import_check(*, index: KnowledgeIndex, values: dict, core_written_allowed: bool) -> None:
    """An imported record's type, due date, text and metadata, by the rules of a write."""
    type_name = values["type"]
    if type_name in CORE_WRITTEN_TYPES and not core_written_allowed:
        raise Unprocessable(
            f"Type {type_name!r} is written only by Core; an import of Core's export (origin core) by a key with "
            "management brings it.",
            param="type",
        )
    if type_name not in CORE_WRITTEN_TYPES and values["source"] in (MemoryRecord.Source.API, MemoryRecord.Source.TOOL):
        type_check(index=index, type_name=type_name)
    due_check(type_name=type_name, due_at=values["due_at"], done=values["done"])
    text_check(values["text"])
    metadata_check(values["metadata"], param="metadata")


def _imported_times_keep(*, record: MemoryRecord, values: dict) -> None:
    """An imported record keeps its own times, not the import's (decay, "last month" and
    recency read them): set after the insert, which stamps both as now."""
    times = {name: values[name] for name in ("created_at", "updated_at") if values[name] is not None}
    if times:
        MemoryRecord.objects.for_organisation(record.organisation_id).filter(pk=record.pk).update(**times)
        record.history.filter(id=record.pk).update(**times)
        for name, value in times.items():
            setattr(record, name, value)


def records_import_link(
    *, caller: Caller, links: dict[str, dict[str, str | None]], contradictions: dict[str, list[str]]
) -> None:
    """Corrections and contradictions between imported records, once all are written: `links`
    maps a new record's id to the new ids of the records it replaces and was replaced by;
    `contradictions` to the new ids of the records it contradicts (a link goes both ways, as
    maintenance makes it; the records came in marked `contested` as they were exported)."""
    records = MemoryRecord.objects.for_organisation(caller.organisation_id)
    for record_id, link in links.items():
        records.filter(pk=record_id).update(replaces_id=link.get("replaces"), replaced_by_id=link.get("replaced_by"))
    for record in records.filter(pk__in=[record_id for record_id, others in contradictions.items() if others]).order_by("pk"):
        record.contradicts.add(*contradictions[record.id])
