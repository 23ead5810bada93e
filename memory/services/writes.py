"""Writing a record: create, confirm or correct, for a key's caller or for Core itself.

Every change goes through `save()` so django-simple-history keeps the version, but a new record
that corrects nothing is inserted with its version in one statement, as django-simple-history
would write it (memory.services.inserting); the version's `history_change_reason` says what
happened and who did it (`change_reason`). A confirmation
changes under `select_for_update`, so a plain increment is exact."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.base.errors import Conflict, ImproperlyScoped, NotFound
from core_memory.base.storable import metadata_check
from core_memory.webhooks.services import webhook_event_emit_to
from memory.embedding.services import record_vector_forget
from memory.models import MemoryRecord
from memory.selectors import EVENT_TYPES
from memory.services.contradictions import contradictions_clear
from memory.services.inserting import CREATED, record_insert_versioned
from memory.services.rules import (
    change_reason,
    due_check,
    embedding_schedule,
    expiry_check,
    is_unique_active_violation,
    record_active_twin,
    record_confirm,
    record_event,
    record_event_emit,
    record_expiry,
    record_write_authorise,
    text_check,
    text_normalise,
    type_check,
)
from stores.models import KnowledgeIndex


@dataclass(frozen=True)
class RecordWriteResult:
    record: MemoryRecord
    status: str  # created | confirmed | corrected


def record_end(*, record: MemoryRecord, replaced_by: MemoryRecord, actor: str, what: str = "ended") -> None:
    """The locked record is ended, replaced by `replaced_by` (a correction, a merge): versioned as
    `what`, its contradiction links gone, told to webhooks."""
    record.status = MemoryRecord.Status.ENDED
    record.replaced_by_id = replaced_by.id
    contradictions_clear(record=record, actor=actor)
    record._change_reason = change_reason(what=what, actor=actor)
    record.save(update_fields=["status", "replaced_by", "contested", "updated_at"])
    record_event_emit(record=record, kind="record.updated", change="ended", replaced_by=replaced_by.id)


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
    expires_at: datetime | None = None


def record_write(
    *, caller: Caller, index: KnowledgeIndex, draft: RecordDraft, now: datetime | None = None
) -> RecordWriteResult:
    """Create, confirm or correct a record for the caller's person, in its own transaction.

    The key's write right is checked first, outside it, so that a denial's
    `memory.write_denied` event is kept although the write fails. A caller that
    owns a transaction of its own (an extraction window) calls `record_write_within`.
    """
    record_write_authorise(caller=caller, index=index)
    return record_write_authorised(index=index, subject=caller.subject, draft=draft, actor=caller.actor, now=now, durable=True)


def record_write_within(
    *, caller: Caller, index: KnowledgeIndex, draft: RecordDraft, now: datetime | None = None
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
    record_write_authorise(caller=caller, index=index)
    return record_write_authorised(index=index, subject=caller.subject, draft=draft, actor=caller.actor, now=now, durable=False)


def record_write_authorised(
    *, index: KnowledgeIndex, subject: str | None, draft: RecordDraft, actor: str, now: datetime | None, durable: bool
) -> RecordWriteResult:
    """A key's write once its right to the index is checked: the type rules bind the API and the
    tool. `durable`: the write is a transaction of its own, which it commits."""
    if draft.source in (MemoryRecord.Source.API, MemoryRecord.Source.TOOL):
        type_check(index=index, type_name=draft.type)
    return _record_write_checked(index=index, subject=subject, draft=draft, actor=actor, now=now, durable=durable)


def record_write_by_core_within(
    *, caller: Caller, index_id: str, subject: str | None, draft: RecordDraft, now: datetime | None = None
) -> RecordWriteResult:
    """A record Core writes on no key's behalf — maintenance's store lessons, a
    proposal applied by an administrator — with the rules of `record_write_within`
    (confirm, constraints, history) inside the caller's transaction. The index is the
    organisation's live one (404 otherwise); whoever calls this has checked the rights of
    whoever asked (a key's write right, an administrator's organisation)."""
    if draft.source in (MemoryRecord.Source.API, MemoryRecord.Source.TOOL):
        raise ImproperlyScoped("API and tool writes go through a key (record_write)")
    index = KnowledgeIndex.objects.for_organisation(caller.organisation_id).live().filter(pk=index_id).first()
    if index is None:
        raise NotFound("No such index.", param="index_id")
    return _record_write_checked(index=index, subject=subject, draft=draft, actor=caller.actor, now=now)


def _record_write_checked(
    *, index: KnowledgeIndex, subject: str | None, draft: RecordDraft, actor: str, now: datetime | None, durable: bool = False
) -> RecordWriteResult:
    """`record_write_within` once the writer's right is settled; `durable`: its own transaction, no savepoint."""
    now = now or timezone.now()
    normalised, expires_at = draft_checked(index=index, draft=draft, now=now)

    with transaction.atomic(durable=durable):
        if draft.replaces is None:
            return _record_create(index=index, subject=subject, draft=draft, normalised=normalised, expires_at=expires_at, actor=actor, now=now)
        replaced, subject, twin = _write_target(
            index=index, replaces=draft.replaces, subject=subject, type_name=draft.type, normalised_text=normalised
        )
        if twin is not None:
            record, status = twin, "confirmed"
        else:
            record = record_new(index=index, subject=subject, draft=draft, normalised_text=normalised, replaced=replaced, now=now)
            record.expires_at = expires_at
            status = "corrected"
        if replaced is not None:
            # Ended before the insert, which may reuse its text; the foreign key to the
            # new id is checked at commit (Django's PostgreSQL FKs are deferred).
            record_end(record=replaced, replaced_by=record, actor=actor)
            record_vector_forget(index=index, record_ids=[replaced.id])
        if twin is not None:
            _twin_confirm(twin=twin, draft=draft, expires_at=expires_at, actor=actor, now=now)
        else:
            record, status = _record_insert(record=record, status=status, replaced=replaced, actor=actor, now=now)
    return RecordWriteResult(record=record, status=status)


def _record_create(
    *, index: KnowledgeIndex, subject: str | None, draft: RecordDraft, normalised: str, expires_at: datetime | None, actor: str, now: datetime
) -> RecordWriteResult:
    """A write that corrects nothing: the new record and its version in one statement, unless her
    active record in the same words exists (a concurrent write's too, once it commits), which is
    confirmed instead."""
    record = record_new(index=index, subject=subject, draft=draft, normalised_text=normalised, replaced=None, now=now)
    record.expires_at = expires_at
    subscribers = record_insert_versioned(record=record, reason=change_reason(what="created", actor=actor))
    if subscribers is not None:
        webhook_event_emit_to(event=record_event(record=record, kind=CREATED, change="created", replaces=None), subscription_ids=subscribers)
        embedding_schedule(index=index, record_id=record.id)
        return RecordWriteResult(record=record, status="created")
    twin = record_active_twin(index=index, subject=subject, type_name=draft.type, normalised_text=normalised)
    if twin is None:  # the one that held the words was ended or deleted meanwhile
        raise Conflict("A concurrent change touched the same record; retry.", param="text")
    _twin_confirm(twin=twin, draft=draft, expires_at=expires_at, actor=actor, now=now)
    return RecordWriteResult(record=twin, status="confirmed")


def _twin_confirm(*, twin: MemoryRecord, draft: RecordDraft, expires_at: datetime | None, actor: str, now: datetime) -> None:
    """Her active record in the draft's words is confirmed. A repeat renews an expiring record by
    its type's lifetime; only its own `expires_at` makes a lasting one expire."""
    renewed = draft.expires_at or (expires_at if twin.expires_at is not None else None)
    record_confirm(record=twin, actor=actor, now=now, expires_at=renewed)


def draft_checked(
    *, index: KnowledgeIndex, draft: RecordDraft, now: datetime, lifetimes: dict[str, float] | None = None
) -> tuple[str, datetime | None]:
    """A draft's due date, text, metadata and expiry checked (the first wrong one's error
    raised); answers its text as compared with others and when the record will expire
    (`lifetimes`: the store's, when the caller has read them)."""
    due_check(type_name=draft.type, due_at=draft.due_at)
    text_check(draft.text)
    metadata_check(draft.metadata or {}, param="metadata")
    expiry_check(expires_at=draft.expires_at, now=now)
    expires_at = record_expiry(index=index, type_name=draft.type, expires_at=draft.expires_at, now=now, lifetimes=lifetimes)
    return text_normalise(draft.text), expires_at


def record_new(
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
        **provenance_fields(draft.provenance or {}),
        structured=draft.structured,
        changed_at=now,
    )


def provenance_fields(provenance: dict) -> dict:
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
        twin = record_active_twin(index=index, subject=subject, type_name=type_name, normalised_text=normalised_text, excluding=replaced)
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
        if not is_unique_active_violation(error):
            raise
        winner = record_active_twin(
            index=record.index, subject=record.subject, type_name=record.type, normalised_text=record.normalised_text, excluding=replaced
        )
        if winner is None:  # the winner was ended or deleted meanwhile
            raise Conflict("A concurrent change touched the same record; retry.", param="text") from error
        record_confirm(record=winner, actor=actor, now=now)
        if replaced is not None:
            record_end(record=replaced, replaced_by=winner, actor=actor)
        return winner, "confirmed"
    record_event_emit(record=record, kind="record.created", change=status, replaces=replaced.id if replaced else None)
    embedding_schedule(index=record.index, record_id=record.id)
    return record, status
