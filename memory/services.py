"""Writing records: write (create, confirm, correct), update, delete, count retrievals,
erase.

Every change goes through `save()` so django-simple-history keeps the version; the
version's `history_change_reason` says what happened and who did it
(`change_reason`). Counters on a row whose state decides (confirmations) change
under `select_for_update`, so a plain increment is exact; the retrieval count,
which no version records, rises with `F()` (`records_retrieved`).

Each service checks its own scope: it takes the caller (`keys.callers.Caller`: the key and
its person), or in the console the administrator's organisation, and reads what it changes
through the matching scoped entry (core_memory.base.tenancy), never trusting a row it is handed.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from audit.services import audit_event_record
from core_memory.base.errors import (
    Conflict,
    ImproperlyScoped,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    Unprocessable,
)
from core_memory.base.storable import metadata_check, storable_check, time_is_storable
from core_memory.base.transactions import lazily_committed
from core_memory.keys.callers import Caller
from memory.embedding.services import record_vector_forget
from memory.exporting import records_export_with_history
from memory.embedding.storage import index_embeds
from memory.models import MemoryRecord
from memory.selectors import CORE_WRITTEN_TYPES, EVENT_TYPES, record_get_available, store_known_types
from memory.tasks import record_embed_task
from stores.models import KnowledgeIndex

UNIQUE_ACTIVE_TEXT = "memory_one_active_per_text"
UPDATABLE_FIELDS = ("text", "metadata", "confidence", "due_at", "done")
COMMITMENT = "commitment"
# Folded at the end of a text when comparing: "Likes tea." confirms "likes tea".
_FINAL_PUNCTUATION = ".,;:!?…。"
_WHITESPACE = re.compile(r"\s+")


def text_normalise(text: str) -> str:
    """Case, whitespace and final punctuation folded."""
    folded = _WHITESPACE.sub(" ", text.casefold()).strip()
    return folded.rstrip(_FINAL_PUNCTUATION + " ")


def change_reason(*, what: str, actor: str) -> str:
    return f"{what} by {actor}"[:100]


def _embedding_schedule(*, index: KnowledgeIndex, record_id: str) -> None:
    """The record's vector is made after the write commits: its latency never pays for
    it. `robust`: a broker that is down loses the vector (search falls back to full text for
    that record until `manage.py embed_records` runs), never the write."""
    if index_embeds(index):
        transaction.on_commit(lambda: record_embed_task.delay(record_id), robust=True)


@dataclass(frozen=True)
class RecordWriteResult:
    record: MemoryRecord
    status: str  # created | confirmed | corrected


def record_write_authorise(*, caller: Caller, index: KnowledgeIndex, actor: str, param: str | None = "index_id") -> None:
    """403 and a committed `memory.write_denied` audit event when the caller's key's policy does
    not allow writing the index. `index` was read for this key (its availability
    is `KnowledgeIndex.objects.for_key`); anything else is a bug."""
    key = caller.key
    if not index.resolved_for(key):
        raise ImproperlyScoped(f"index {index.pk} was not read for key {key.pk}")
    _write_right_check(caller=caller, index_id=index.id, actor=actor, param=param)


def _write_right_check(*, caller: Caller, index_id: str, actor: str, param: str | None) -> None:
    """The write right, for an index already known to be available to the caller's key."""
    if caller.may_write(index_id):
        return
    # Its own transaction: the denial is recorded although the request fails (unless a
    # caller's own transaction, around this one, rolls back).
    with transaction.atomic():
        audit_event_record(
            organisation_id=caller.organisation_id,
            actor=actor,
            action="memory.write_denied",
            target=index_id,
            details={"key_id": caller.key.id},
        )
    raise PermissionDenied("This key's policy does not allow writing this index.", param=param)


def _type_check(*, index: KnowledgeIndex, type_name: str) -> None:
    allowed = store_known_types(index=index)
    if type_name in CORE_WRITTEN_TYPES:
        raise Unprocessable(
            f"Type {type_name!r} is written only by Core. Allowed types: {', '.join(allowed)}.", param="type"
        )
    if type_name not in allowed:
        raise Unprocessable(f"Unknown type {type_name!r}. Allowed types: {', '.join(allowed)}.", param="type")


def _due_check(*, type_name: str, due_at, done=None) -> None:
    if type_name != COMMITMENT and due_at is not None:
        raise InvalidRequest("due_at is only for commitments.", param="due_at")
    if due_at is not None and not time_is_storable(due_at):
        raise InvalidRequest("due_at must lie between the years 1 and 9999.", param="due_at")
    if type_name != COMMITMENT and done:
        raise InvalidRequest("done is only for commitments.", param="done")


def _text_check(text: str) -> None:
    if not text or not text.strip():
        raise InvalidRequest("text may not be empty.", param="text")
    storable_check(text, param="text")


def _active_twin(
    *, index: KnowledgeIndex, subject: str | None, type_name: str, normalised_text: str, excluding: MemoryRecord | None = None
) -> MemoryRecord | None:
    twins = MemoryRecord.objects.for_organisation(index.organisation_id).select_for_update().filter(
        index=index, subject=subject, type=type_name, normalised_text=normalised_text, status=MemoryRecord.Status.ACTIVE
    )
    if excluding is not None:
        twins = twins.exclude(pk=excluding.pk)
    return twins.first()


def _end(*, record: MemoryRecord, replaced_by: MemoryRecord, actor: str) -> None:
    record.status = MemoryRecord.Status.ENDED
    record.replaced_by_id = replaced_by.id
    _contradictions_clear(record=record, actor=actor)
    record._change_reason = change_reason(what="ended", actor=actor)
    record.save(update_fields=["status", "replaced_by", "contested", "updated_at"])


def _contradictions_clear(*, record: MemoryRecord, actor: str) -> None:
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


def records_contradiction_mark_within(*, organisation_id: str, pairs: Sequence[tuple[str, str]], actor: str) -> int:
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
        for record in MemoryRecord.objects.for_organisation(organisation_id)
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
                record._change_reason = change_reason(what="contested", actor=actor)
                record.save(update_fields=["contested"])
    return marked


def _confirm(*, record: MemoryRecord, actor: str, now: datetime) -> MemoryRecord:
    record.confirmations += 1
    record.last_confirmed_at = now
    record.changed_at = now
    record._change_reason = change_reason(what="confirmed", actor=actor)
    record.save(update_fields=["confirmations", "last_confirmed_at", "changed_at", "updated_at"])
    return record


def _is_unique_active_violation(error: IntegrityError) -> bool:
    diagnostics = getattr(error.__cause__, "diag", None)
    return getattr(diagnostics, "constraint_name", None) == UNIQUE_ACTIVE_TEXT


def _replaced_lock(*, index: KnowledgeIndex, record_id: str, subject: str | None) -> MemoryRecord:
    """The record a correction ends: in the same index, and the person's own when she is named."""
    replaced = (
        MemoryRecord.objects.for_organisation(index.organisation_id)
        .select_for_update()
        .filter(pk=record_id, index=index)
        .exclude(status=MemoryRecord.Status.DELETED)
        .first()
    )
    if replaced is None or (subject is not None and replaced.subject != subject):
        raise NotFound("No such record.", param="replaces")
    if replaced.status != MemoryRecord.Status.ACTIVE:
        raise Conflict("That record was already ended by another correction.", param="replaces")
    return replaced


@dataclass(frozen=True)
class RecordDraft:
    """What a writer asks to remember, as one value every write entry point takes: the API, the
    write tool, extraction, an import's confirmation, maintenance and promotion. Who it is for
    (`subject`), who writes it (`actor`) and when travel beside it."""

    type: str
    text: str
    metadata: dict | None = None
    confidence: float = 1.0
    due_at: datetime | None = None
    replaces: str | None = None
    source: str = MemoryRecord.Source.API
    provenance: dict | None = None
    trusted: bool = True
    structured: dict | None = None


def record_write(
    *, caller: Caller, index: KnowledgeIndex, draft: RecordDraft, actor: str, now: datetime | None = None
) -> RecordWriteResult:
    """Create, confirm or correct a record for the caller's person, in its own transaction.

    The key's write right is checked first, outside it, so that a denial's
    `memory.write_denied` event is kept although the write fails. A caller that
    owns a transaction of its own (an extraction window) calls `record_write_within`.
    """
    record_write_authorise(caller=caller, index=index, actor=actor)
    return _record_write_authorised(index=index, subject=caller.subject, draft=draft, actor=actor, now=now, durable=True)


def record_write_within(
    *, caller: Caller, index: KnowledgeIndex, draft: RecordDraft, actor: str, now: datetime | None = None
) -> RecordWriteResult:
    """Create, confirm or correct a record.

    Same normalised text as an active record of the same index, person and type →
    that record is confirmed (200); an episode never is (`EVENT_TYPES`). With `replaces` →
    the named record ends and the new one is created (status "corrected"). Race-free: a concurrent identical write
    hits the partial unique constraint and confirms the record that won.
    The type rules (a store's known types, none that only Core writes) bind the API and the
    write tool; extraction, promotion and maintenance write Core's own types (episode, lesson) and their switch's types.
    Confirming leaves the stored confidence and metadata as they were.
    Inside the caller's transaction: everything it writes commits or rolls back with it (its own
    part in a savepoint).
    """
    record_write_authorise(caller=caller, index=index, actor=actor)
    return _record_write_authorised(index=index, subject=caller.subject, draft=draft, actor=actor, now=now, durable=False)


def _record_write_authorised(
    *, index: KnowledgeIndex, subject: str | None, draft: RecordDraft, actor: str, now: datetime | None, durable: bool
) -> RecordWriteResult:
    """A key's write once its right to the index is checked: the type rules bind the API and the
    tool. `durable`: the write is a transaction of its own, which it commits."""
    if draft.source in (MemoryRecord.Source.API, MemoryRecord.Source.TOOL):
        _type_check(index=index, type_name=draft.type)
    return _record_write_checked(index=index, subject=subject, draft=draft, actor=actor, now=now, durable=durable)


def record_import_within(
    *,
    caller: Caller,
    index: KnowledgeIndex,
    values: dict,
    core_written_allowed: bool,
    actor: str,
    now: datetime,
) -> RecordWriteResult:
    """A record as an export held it (docs/portability.md), written with the rules of
    `record_write_within` — the caller's key's write right, the type rules, a text she already has
    (active) is confirmed — and kept whole: its times, confirmations, confidence, due date,
    structured fields, provenance, status and source. Core's own types (episode, lesson) only
    when `core_written_allowed` (an import of Core's export by a key with `management`).
    `values` are the record's fields as `memory.importing` read them; `import_source` names
    where it came from. Inside the caller's transaction."""
    record_write_authorise(caller=caller, index=index, actor=actor)
    _import_check(index=index, values=values, core_written_allowed=core_written_allowed)
    type_name, status, source = values["type"], values["status"], values["source"]
    normalised = text_normalise(values["text"])
    if status == MemoryRecord.Status.ACTIVE and type_name not in EVENT_TYPES:
        twin = _active_twin(index=index, subject=values["subject"], type_name=type_name, normalised_text=normalised)
        if twin is not None:
            return RecordWriteResult(record=_confirm(record=twin, actor=actor, now=now), status="confirmed")
    provenance = values["provenance"]
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
        **_provenance_fields(provenance),
        due_at=values["due_at"],
        done=values["done"],
        structured=values["structured"],
        changed_at=values["updated_at"] or values["created_at"] or now,
        import_source=values["import_source"],
    )
    record._change_reason = change_reason(what="imported", actor=actor)
    try:
        with transaction.atomic():
            record.save(force_insert=True)
    except IntegrityError as error:
        if not _is_unique_active_violation(error):
            raise
        raise Conflict("A concurrent write made the same record; retry.", param="text") from error
    _imported_times_keep(record=record, values=values)
    if status == MemoryRecord.Status.ACTIVE:
        _embedding_schedule(index=index, record_id=record.id)
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
        _type_check(index=index, type_name=type_name)
    _due_check(type_name=type_name, due_at=values["due_at"], done=values["done"])
    _text_check(values["text"])
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
    *, organisation_id: str, links: dict[str, dict[str, str | None]], contradictions: dict[str, list[str]]
) -> None:
    """Corrections and contradictions between imported records, once all are written: `links`
    maps a new record's id to the new ids of the records it replaces and was replaced by;
    `contradictions` to the new ids of the records it contradicts (a link goes both ways, as
    maintenance makes it; the records came in marked `contested` as they were exported)."""
    records = MemoryRecord.objects.for_organisation(organisation_id)
    for record_id, link in links.items():
        records.filter(pk=record_id).update(replaces_id=link.get("replaces"), replaced_by_id=link.get("replaced_by"))
    for record in records.filter(pk__in=[record_id for record_id, others in contradictions.items() if others]).order_by("pk"):
        record.contradicts.add(*contradictions[record.id])


def record_write_by_core_within(
    *, organisation_id: str, index_id: str, subject: str | None, draft: RecordDraft, actor: str, now: datetime | None = None
) -> RecordWriteResult:
    """A record Core writes on no key's behalf — maintenance's store lessons, a
    proposal applied by an administrator — with the rules of `record_write_within`
    (confirm, constraints, history) inside the caller's transaction. The index is the
    organisation's live one (404 otherwise); whoever calls this has checked the rights of
    whoever asked (a key's write right, an administrator's organisation)."""
    if draft.source in (MemoryRecord.Source.API, MemoryRecord.Source.TOOL):
        raise ImproperlyScoped("API and tool writes go through a key (record_write)")
    index = KnowledgeIndex.objects.for_organisation(organisation_id).live().filter(pk=index_id).first()
    if index is None:
        raise NotFound("No such index.", param="index_id")
    return _record_write_checked(index=index, subject=subject, draft=draft, actor=actor, now=now)


def _record_write_checked(
    *, index: KnowledgeIndex, subject: str | None, draft: RecordDraft, actor: str, now: datetime | None, durable: bool = False
) -> RecordWriteResult:
    """`record_write_within` once the writer's right is settled; `durable`: its own transaction, no savepoint."""
    _due_check(type_name=draft.type, due_at=draft.due_at)
    _text_check(draft.text)
    metadata_check(draft.metadata or {}, param="metadata")
    now = now or timezone.now()
    normalised = text_normalise(draft.text)

    with transaction.atomic(durable=durable):
        replaced, subject, twin = _write_target(
            index=index, replaces=draft.replaces, subject=subject, type_name=draft.type, normalised_text=normalised
        )
        if twin is not None:
            record, status = twin, "confirmed"
        else:
            record = _record_new(index=index, subject=subject, draft=draft, normalised_text=normalised, replaced=replaced, now=now)
            status = "corrected" if replaced is not None else "created"
        if replaced is not None:
            # Ended before the insert, which may reuse its text; the foreign key to the
            # new id is checked at commit (Django's PostgreSQL FKs are deferred).
            _end(record=replaced, replaced_by=record, actor=actor)
            record_vector_forget(index=index, record_ids=[replaced.id])
        if twin is not None:
            _confirm(record=twin, actor=actor, now=now)
        else:
            record, status = _record_insert(record=record, status=status, replaced=replaced, actor=actor, now=now)
    return RecordWriteResult(record=record, status=status)


def _record_new(
    *, index: KnowledgeIndex, subject: str | None, draft: RecordDraft, normalised_text: str, replaced: MemoryRecord | None, now: datetime
) -> MemoryRecord:
    """The unsaved record a draft becomes."""
    return MemoryRecord(
        organisation_id=index.organisation_id,
        index=index,
        subject=subject,
        type=draft.type,
        text=draft.text,
        normalised_text=normalised_text,
        metadata=draft.metadata or {},
        confidence=draft.confidence,
        due_at=draft.due_at,
        replaces=replaced,
        source=draft.source,
        trusted=draft.trusted,
        **_provenance_fields(draft.provenance or {}),
        structured=draft.structured,
        changed_at=now,
    )


def _provenance_fields(provenance: dict) -> dict:
    """A record's fields for where it came from: its thread, the items and the response."""
    return {
        "thread_id": provenance.get("thread_id"),
        "item_ids": list(provenance.get("item_ids") or []),
        "response_id": provenance.get("response_id"),
    }


def _write_target(
    *, index: KnowledgeIndex, replaces: str | None, subject: str | None, type_name: str, normalised_text: str
) -> tuple[MemoryRecord | None, str | None, MemoryRecord | None]:
    """The record a write corrects (locked), the person the write is for, and her active record
    in the same words that the write confirms instead of writing, if any."""
    replaced = _replaced_lock(index=index, record_id=replaces, subject=subject) if replaces else None
    if replaced is not None and subject is None:
        # A correction made for nobody in particular (an operator fixing Anna's record)
        # stays hers: it must not turn her fact into a shared one every colleague gets.
        subject = replaced.subject
    twin = None
    if type_name not in EVENT_TYPES:
        twin = _active_twin(index=index, subject=subject, type_name=type_name, normalised_text=normalised_text, excluding=replaced)
    return replaced, subject, twin


def _record_insert(
    *, record: MemoryRecord, status: str, replaced: MemoryRecord | None, actor: str, now: datetime
) -> tuple[MemoryRecord, str]:
    """Inserts a new record (created, or a correction), which gets its own vector; when a
    concurrent identical write won the race, confirms the winner's record instead."""
    try:
        with transaction.atomic():
            record._change_reason = change_reason(what=status, actor=actor)
            record.save(force_insert=True)
    except IntegrityError as error:
        if not _is_unique_active_violation(error):
            raise
        winner = _active_twin(
            index=record.index, subject=record.subject, type_name=record.type, normalised_text=record.normalised_text, excluding=replaced
        )
        if winner is None:  # the winner was ended or deleted meanwhile
            raise Conflict("A concurrent change touched the same record; retry.", param="text") from error
        _confirm(record=winner, actor=actor, now=now)
        if replaced is not None:
            _end(record=replaced, replaced_by=winner, actor=actor)
        return winner, "confirmed"
    _embedding_schedule(index=record.index, record_id=record.id)
    return record, status


def record_update(*, caller: Caller, record_id: str, actor: str, changes: dict, now: datetime | None = None) -> MemoryRecord:
    """PATCH by a key: a record it may address (404 otherwise; for a request naming a
    person only her own), in an index it may write (403 and `memory.write_denied`).
    Whitelisted fields; any change restarts the decay age. Audited."""
    key = caller.key
    record = record_get_available(caller=caller, record_id=record_id, own_only=True)
    _write_right_check(caller=caller, index_id=record.index_id, actor=actor, param=None)
    return _record_change(records=MemoryRecord.objects.for_key(key), record_id=record.pk, actor=actor, changes=changes, now=now)


def record_update_by_administrator(
    *, organisation_id: str, record_id: str, actor: str, changes: dict, now: datetime | None = None
) -> MemoryRecord:
    """A console administrator's correction of a record of her organisation."""
    records = MemoryRecord.objects.for_organisation(organisation_id).exclude(status=MemoryRecord.Status.DELETED)
    return _record_change(records=records, record_id=record_id, actor=actor, changes=changes, now=now)


@transaction.atomic(durable=True)
def _record_change(*, records: QuerySet[MemoryRecord], record_id: str, actor: str, changes: dict, now: datetime | None) -> MemoryRecord:
    locked = records.select_for_update(of=("self",)).select_related("index").filter(pk=record_id).first()
    if locked is None:
        raise NotFound("No such record.")
    if locked.status != MemoryRecord.Status.ACTIVE:
        raise Conflict(gettext("Only an active record can change."), param=None)
    fields = [field for field in UPDATABLE_FIELDS if field in changes]
    _due_check(type_name=locked.type, due_at=changes.get("due_at"), done=changes.get("done"))
    if "metadata" in fields:
        metadata_check(changes["metadata"], param="metadata")
    if "text" in fields:
        _text_check(changes["text"])
        locked.normalised_text = text_normalise(changes["text"])
        fields.append("normalised_text")
        if locked.contested and changes["text"] != locked.text:
            # Re-worded, it is a correction in place: what it contradicted is for the next run to judge.
            _contradictions_clear(record=locked, actor=actor)
            fields.append("contested")
    for field in UPDATABLE_FIELDS:
        if field in changes:
            setattr(locked, field, changes[field])
    if not fields:
        return locked
    locked.changed_at = now or timezone.now()
    locked._change_reason = change_reason(what="updated", actor=actor)
    try:
        with transaction.atomic():
            locked.save(update_fields=[*fields, "changed_at", "updated_at"])
    except IntegrityError as error:
        if _is_unique_active_violation(error):
            raise Conflict(gettext("An active record of this person and type already has that text."), param="text") from error
        raise
    if "text" in fields:
        # The old text's vector goes now; the new one follows the commit.
        record_vector_forget(index=locked.index, record_ids=[locked.id])
        _embedding_schedule(index=locked.index, record_id=locked.id)
    audit_event_record(
        organisation_id=locked.organisation_id,
        actor=actor,
        action="memory.updated",
        target=locked.id,
        details={"fields": [field for field in fields if field not in ("normalised_text", "contested")]},
    )
    return locked


def record_delete(*, caller: Caller, record_id: str, actor: str) -> None:
    """DELETE by a key, with the rights of `record_update`: a soft delete, so its
    history stays readable to auditors while the record is invisible everywhere. A record
    it ended stays ended. Audited."""
    key = caller.key
    record = record_get_available(caller=caller, record_id=record_id, own_only=True)
    _write_right_check(caller=caller, index_id=record.index_id, actor=actor, param=None)
    _record_soft_delete(records=MemoryRecord.objects.for_key(key), record_id=record.pk, actor=actor)


def record_delete_by_administrator(*, organisation_id: str, record_id: str, actor: str) -> None:
    """A console administrator's deletion of a record of her organisation."""
    _record_soft_delete(records=MemoryRecord.objects.for_organisation(organisation_id), record_id=record_id, actor=actor)


@transaction.atomic(durable=True)
def records_delete_by_administrator(*, organisation_id: str, record_ids: Sequence[str], actor: str) -> int:
    """A console administrator's deletion of several records at once: all of them or, on an error,
    none. Returns how many were deleted (one already deleted, or not of the organisation, is not)."""
    records = MemoryRecord.objects.for_organisation(organisation_id)
    # In a fixed order, so that two deletions of overlapping records lock them the same way round.
    return sum(_record_soft_delete_locked(records=records, record_id=record_id, actor=actor) for record_id in sorted(set(record_ids)))


@transaction.atomic(durable=True)
def _record_soft_delete(*, records: QuerySet[MemoryRecord], record_id: str, actor: str) -> None:
    _record_soft_delete_locked(records=records, record_id=record_id, actor=actor)


def _record_soft_delete_locked(*, records: QuerySet[MemoryRecord], record_id: str, actor: str) -> bool:
    locked = records.select_for_update(of=("self",)).select_related("index").filter(pk=record_id).first()
    if locked is None or locked.status == MemoryRecord.Status.DELETED:
        return False
    locked.status = MemoryRecord.Status.DELETED
    _contradictions_clear(record=locked, actor=actor)
    locked._change_reason = change_reason(what="deleted", actor=actor)
    locked.save(update_fields=["status", "contested", "updated_at"])
    record_vector_forget(index=locked.index, record_ids=[locked.id])
    audit_event_record(
        organisation_id=locked.organisation_id, actor=actor, action="memory.deleted", target=locked.id, details={"index_id": locked.index_id}
    )
    return True


@transaction.atomic(durable=True)
def records_export_by_administrator(*, organisation_id: str, record_ids: Sequence[str], actor: str) -> list[dict]:
    """The chosen records of the organisation as export lines with their history (memory.exporting,
    what `import_memory` reads back), audited as `memory.exported` naming them."""
    records = list(MemoryRecord.objects.for_organisation(organisation_id).filter(pk__in=list(record_ids)).order_by("index_id", "id"))
    lines = records_export_with_history(records)
    audit_event_record(
        organisation_id=organisation_id, actor=actor, action="memory.exported",
        details={"records": len(records), "record_ids": [record.id for record in records]},
    )
    return lines


def records_retrieved(*, caller: Caller, records: Sequence[MemoryRecord]) -> None:
    """The records were shown to the caller — search hits, an injection block's lines:
    each one's `retrieval_count` rises by one, in SQL with F() so that concurrent readers
    never lose a count, and on the given objects so an answer shows the raised count.
    No history version: a retrieval changes nothing a version records. A count lost in a crash of
    the database server harms nobody, so its commit does not wait for the disk."""
    if not records:
        return
    with lazily_committed():
        MemoryRecord.objects.for_organisation(caller.organisation_id).filter(id__in=[record.id for record in records]).update(
            retrieval_count=F("retrieval_count") + 1
        )
    for record in records:
        record.retrieval_count += 1


@transaction.atomic
def person_records_erase(*, organisation_id: str, subject: str) -> dict[str, int]:
    """Hard-deletes every record of the person, with every historical version, and
    whatever rests on them alone (their contradiction links; maintenance's notes about them
    go by their foreign keys).

    Returns how many went, as `{"records": n, "episodes": n, "lessons": n}` (records: those of
    every other type). Other records that pointed at hers (`replaces`/`replaced_by`) keep
    living with the pointer cleared.
    """
    records = MemoryRecord.objects.for_organisation(organisation_id).filter(subject=subject)
    per_type = dict(records.order_by().values_list("type").annotate(count=Count("id")))
    record_ids = list(records.values_list("id", flat=True))
    records.delete()
    # After the delete, which itself adds a "-" version for each record.
    MemoryRecord.history.filter(Q(id__in=record_ids) | Q(organisation_id=organisation_id, subject=subject)).delete()
    counts = {kind: per_type.pop(kind, 0) for kind in ("episode", "lesson")}
    return {"records": sum(per_type.values()), "episodes": counts["episode"], "lessons": counts["lesson"]}
