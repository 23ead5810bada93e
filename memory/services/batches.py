"""Many writes or deletions in one request, each exactly as the single one (writes, changes):
one transaction, a savepoint per item, an answer per item in order."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet

from core_memory.base.errors import ApplicationError
from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from memory.selectors import record_get_available
from memory.services.changes import record_soft_delete_locked
from memory.services.rules import record_write_authorise, write_right_check
from memory.services.writes import RecordDraft, RecordWriteResult, record_write_authorised
from stores.models import KnowledgeIndex


@dataclass(frozen=True)
class BatchFailure:
    """An item of a batch that was not written: its error, as a single request would have answered it."""

    error: ApplicationError


def records_write_batch(
    *, caller: Caller, index: KnowledgeIndex, drafts: Sequence[RecordDraft | ApplicationError], now: datetime | None = None
) -> list[RecordWriteResult | BatchFailure]:
    """Many writes for the caller's person in one transaction, each exactly as `record_write`
    makes it (type rules, confirmation of a text she has, corrections, contested marks cleared,
    events told), each answered in order. An item that fails — or that arrived as an error (its
    input was invalid) — is answered with its error and leaves nothing behind (its own
    savepoint); the others are written. The write right is the index's: checked once, and a
    denial (403, `memory.write_denied`) refuses the whole batch."""
    record_write_authorise(caller=caller, index=index, actor=caller.actor)
    with transaction.atomic(durable=True):
        return [_batch_item_write(index=index, subject=caller.subject, draft=draft, actor=caller.actor, now=now) for draft in drafts]


def _batch_item_write(
    *, index: KnowledgeIndex, subject: str | None, draft: RecordDraft | ApplicationError, actor: str, now: datetime | None
) -> RecordWriteResult | BatchFailure:
    if isinstance(draft, ApplicationError):
        return BatchFailure(error=draft)
    try:
        return record_write_authorised(index=index, subject=subject, draft=draft, actor=actor, now=now, durable=False)
    except ApplicationError as error:
        return BatchFailure(error=error)


def records_delete_batch(*, caller: Caller, record_ids: Sequence[str]) -> list[str | BatchFailure]:
    """Deletes each record as `record_delete` would, in one transaction, answering each in order:
    its id when deleted, else its error (404 for one the caller may not address, 403 where the
    policy may not write its index). One named twice is deleted once and then not found."""
    records = MemoryRecord.objects.for_key(caller.key)
    with transaction.atomic(durable=True):
        return [_batch_item_delete(caller=caller, records=records, record_id=record_id, actor=caller.actor) for record_id in record_ids]


def _batch_item_delete(*, caller: Caller, records: QuerySet[MemoryRecord], record_id: str, actor: str) -> str | BatchFailure:
    try:
        record = record_get_available(caller=caller, record_id=record_id, own_only=True)
        # A denial's audit event is kept, as for a single delete: it is written outside the item's savepoint.
        write_right_check(caller=caller, index_id=record.index_id, actor=actor, param=None)
        with transaction.atomic():
            record_soft_delete_locked(records=records, record_id=record.pk, actor=actor)
    except ApplicationError as error:
        return BatchFailure(error=error)
    return record_id
