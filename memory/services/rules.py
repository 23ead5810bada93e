"""The rules every write of a record keeps: its text folded for comparing, the reason its version
gives, a key's write right (a denial audited), the type, due date and text checks, the active
record in the same words that a write confirms instead, and its vector made after the commit."""
from __future__ import annotations

import re
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction

from audit.services import audit_event_record
from core_memory.base.errors import ImproperlyScoped, InvalidRequest, PermissionDenied, Unprocessable
from core_memory.base.storable import storable_check, time_is_storable
from core_memory.base.callers import Caller
from core_memory.webhooks.services import EventDraft, webhook_events_emit
from memory.embedding.storage import index_embeds
from memory.models import MemoryRecord
from memory.selectors import CORE_WRITTEN_TYPES, store_known_types, store_lifetime_days
from memory.tasks import record_embed_task, records_embed_task
from stores.models import KnowledgeIndex

UNIQUE_ACTIVE_TEXT = "memory_one_active_per_text"
UPDATABLE_FIELDS = ("text", "metadata", "confidence", "due_at", "done", "expires_at")
COMMITMENT = "commitment"
# Records embedded by one task when many are written at once (a batch).
EMBED_CHUNK = 64
# Folded at the end of a text when comparing: "Likes tea." confirms "likes tea".
_FINAL_PUNCTUATION = ".,;:!?…。"
_WHITESPACE = re.compile(r"\s+")


def text_normalise(text: str) -> str:
    """Case, whitespace and final punctuation folded."""
    folded = _WHITESPACE.sub(" ", text.casefold()).strip()
    return folded.rstrip(_FINAL_PUNCTUATION + " ")


def change_reason(*, what: str, actor: str) -> str:
    return f"{what} by {actor}"[:100]


def record_event_emit(*, record: MemoryRecord, kind: str, change: str, **details) -> None:
    """Inside the change's transaction: tells the organisation's webhook subscribers what
    happened to the record, by ids and kinds, never by what it says."""
    webhook_events_emit(events=[record_event(record=record, kind=kind, change=change, **details)])


def record_event(*, record: MemoryRecord, kind: str, change: str, **details) -> EventDraft:
    """The event `record_event_emit` tells, for telling many at once (`webhook_events_emit`)."""
    return EventDraft(
        organisation_id=record.organisation_id,
        kind=kind,
        subject=record.subject,
        data={
            "record_id": record.id, "index_id": record.index_id, "subject": record.subject, "type": record.type,
            "status": record.status, "change": change, **details,
        },
    )


def embedding_schedule(*, index: KnowledgeIndex, record_id: str) -> None:
    """The record's vector is made after the write commits: its latency never pays for
    it. `robust`: a broker that is down loses the vector (search falls back to full text for
    that record until `manage.py embed_records` runs), never the write."""
    if index_embeds(index):
        transaction.on_commit(lambda: record_embed_task.delay(record_id), robust=True)


def embeddings_schedule(*, index: KnowledgeIndex, record_ids: list[str]) -> None:
    """`embedding_schedule` for many records written at once: their vectors made after the
    commit, `EMBED_CHUNK` records a task."""
    if record_ids and index_embeds(index):
        chunks = [record_ids[start:start + EMBED_CHUNK] for start in range(0, len(record_ids), EMBED_CHUNK)]
        transaction.on_commit(lambda: [records_embed_task.delay(chunk) for chunk in chunks], robust=True)


def record_write_authorise(*, caller: Caller, index: KnowledgeIndex, param: str | None = "index_id") -> None:
    """403 and a committed `memory.write_denied` audit event when the caller's key's policy does
    not allow writing the index. `index` was read for this key (its availability
    is `KnowledgeIndex.objects.for_key`), or, for a caller without a key, is its organisation's;
    anything else is a bug."""
    key = caller.key
    if key is None:
        if index.organisation_id != caller.organisation_id:
            raise ImproperlyScoped(f"index {index.pk} is not of organisation {caller.organisation_id}")
    elif not index.resolved_for(key):
        raise ImproperlyScoped(f"index {index.pk} was not read for key {key.pk}")
    write_right_check(caller=caller, index_id=index.id, param=param)


def write_right_check(*, caller: Caller, index_id: str, param: str | None) -> None:
    """The write right, for an index already known to be available to the caller's key (a denial
    audited as the caller's actor)."""
    if caller.may_write(index_id):
        return
    # Its own transaction: the denial is recorded although the request fails (unless a
    # caller's own transaction, around this one, rolls back).
    with transaction.atomic():
        audit_event_record(
            caller=caller,
            action="memory.write_denied",
            target=index_id,
            details={"key_id": caller.key.id},
        )
    raise PermissionDenied("This key's policy does not allow writing this index.", param=param)


def type_check(*, index: KnowledgeIndex, type_name: str, allowed: list[str] | None = None) -> None:
    """`allowed`: the store's known types when the caller has read them already (many writes at once)."""
    allowed = allowed if allowed is not None else store_known_types(index=index)
    if type_name in CORE_WRITTEN_TYPES:
        raise Unprocessable(
            f"Type {type_name!r} is written only by Core. Allowed types: {', '.join(allowed)}.", param="type"
        )
    if type_name not in allowed:
        raise Unprocessable(f"Unknown type {type_name!r}. Allowed types: {', '.join(allowed)}.", param="type")


def due_check(*, type_name: str, due_at, done=None) -> None:
    if type_name != COMMITMENT and due_at is not None:
        raise InvalidRequest("due_at is only for commitments.", param="due_at")
    if due_at is not None and not time_is_storable(due_at):
        raise InvalidRequest("due_at must lie between the years 1 and 9999.", param="due_at")
    if type_name != COMMITMENT and done:
        raise InvalidRequest("done is only for commitments.", param="done")


def expiry_check(*, expires_at: datetime | None, now: datetime | None) -> None:
    """A write's `expires_at` lies ahead (`now`): a fact already over is not written. A change
    (`now` None) may set any time, a past one ending its truth at once."""
    if expires_at is None:
        return
    if not time_is_storable(expires_at):
        raise InvalidRequest("expires_at must lie between the years 1 and 9999.", param="expires_at")
    if now is not None and expires_at <= now:
        raise InvalidRequest("expires_at must lie in the future.", param="expires_at")


def record_expiry(
    *, index: KnowledgeIndex, type_name: str, expires_at: datetime | None, now: datetime, lifetimes: dict[str, float] | None = None
) -> datetime | None:
    """When a record written now stops being true: as the write says, else after its type's
    lifetime in the store's `expiry` section (`lifetimes`, when the caller has read it), else never."""
    if expires_at is not None:
        return expires_at
    days = (lifetimes if lifetimes is not None else store_lifetime_days(index=index)).get(type_name)
    return now + timedelta(days=days) if days else None


def text_check(text: str) -> None:
    if not text or not text.strip():
        raise InvalidRequest("text may not be empty.", param="text")
    storable_check(text, param="text")


def record_active_twin(
    *, index: KnowledgeIndex, subject: str | None, type_name: str, normalised_text: str, excluding: MemoryRecord | None = None
) -> MemoryRecord | None:
    twins = MemoryRecord.objects.for_organisation(index.organisation_id).select_for_update().filter(
        index=index, subject=subject, type=type_name, normalised_text=normalised_text, status=MemoryRecord.Status.ACTIVE
    )
    if excluding is not None:
        twins = twins.exclude(pk=excluding.pk)
    return twins.first()


def record_confirm(
    *, record: MemoryRecord, actor: str, now: datetime, expires_at: datetime | None = None, tell: bool = True
) -> MemoryRecord:
    """Said again: counted and its decay age restarted; `expires_at` moves its end later (or
    gives it one), never earlier. `tell=False`: the caller tells webhooks of it (a batch, all at once)."""
    record.confirmations += 1
    record.last_confirmed_at = now
    record.changed_at = now
    if expires_at is not None and (record.expires_at is None or record.expires_at < expires_at):
        record.expires_at = expires_at
    record._change_reason = change_reason(what="confirmed", actor=actor)
    record.save(update_fields=["confirmations", "last_confirmed_at", "changed_at", "expires_at", "updated_at"])
    if tell:
        record_event_emit(record=record, kind="record.updated", change="confirmed")
    return record


def is_unique_active_violation(error: IntegrityError) -> bool:
    diagnostics = getattr(error.__cause__, "diag", None)
    return getattr(diagnostics, "constraint_name", None) == UNIQUE_ACTIVE_TEXT
