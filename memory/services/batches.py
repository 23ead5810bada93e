"""Many writes or deletions in one request, each exactly as the single one (writes, changes):
one transaction, an answer per item in order.

A batch's writes are made together where that changes nothing a single write would do: the
items that correct no record are checked one by one as a single write checks them, the records
they repeat are looked up and locked in one query (a repeat of an earlier item of the batch
confirms that item's record), the new records and their versions are inserted in one statement
each, the confirmations follow in order, and the webhook events and vectors are queued at once.
An item that corrects a record (`replaces`) is written alone, as a single write, in its place in
the order. Should a concurrent write of the same text win the race for an insert, those items
are written again one by one, each in its savepoint, as single writes settle that race."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from simple_history.utils import bulk_create_with_history

from core_memory.base.errors import ApplicationError
from core_memory.base.callers import Caller
from core_memory.webhooks.services import webhook_events_emit
from memory.models import MemoryRecord
from memory.selectors import EVENT_TYPES, record_get_available, store_known_types, store_lifetime_days
from memory.services.changes import record_soft_delete_locked
from memory.services.rules import (
    change_reason,
    embeddings_schedule,
    is_unique_active_violation,
    record_confirm,
    record_event,
    record_write_authorise,
    type_check,
    write_right_check,
)
from memory.services.writes import RecordDraft, RecordWriteResult, draft_checked, record_new, record_write_authorised
from stores.models import KnowledgeIndex

# Rows a bulk insert sends in one statement.
INSERT_BATCH = 500


@dataclass(frozen=True)
class BatchFailure:
    """An item of a batch that was not written: its error, as a single request would have answered it."""

    error: ApplicationError


@dataclass(frozen=True)
class _Checked:
    """An item that passed a single write's checks, with what they worked out."""

    position: int
    draft: RecordDraft
    normalised: str
    expires_at: datetime | None


def records_write_batch(
    *, caller: Caller, index: KnowledgeIndex, drafts: Sequence[RecordDraft | ApplicationError], now: datetime | None = None
) -> list[RecordWriteResult | BatchFailure]:
    """Many writes for the caller's person in one transaction, each exactly as `record_write`
    makes it (type rules, confirmation of a text she has, corrections, contested marks cleared,
    events told), each answered in order. An item that fails — or that arrived as an error (its
    input was invalid) — is answered with its error and leaves nothing behind; the others are
    written. The write right is the index's: checked once, and a denial (403,
    `memory.write_denied`) refuses the whole batch."""
    actor = caller.actor
    record_write_authorise(caller=caller, index=index)
    now = now or timezone.now()
    results: list[RecordWriteResult | BatchFailure | None] = [None] * len(drafts)
    with transaction.atomic(durable=True):
        for run in _runs(drafts):
            if len(run) == 1 and isinstance(drafts[run[0]], RecordDraft) and drafts[run[0]].replaces:
                position = run[0]
                results[position] = _batch_item_write(index=index, subject=caller.subject, draft=drafts[position], actor=actor, now=now)
            else:
                _run_write(index=index, subject=caller.subject, drafts=drafts, run=run, actor=actor, now=now, results=results)
    return results


def _runs(drafts: Sequence[RecordDraft | ApplicationError]) -> list[list[int]]:
    """The items' positions in the order written: each correction alone, the items between them together."""
    runs: list[list[int]] = [[]]
    for position, draft in enumerate(drafts):
        if isinstance(draft, RecordDraft) and draft.replaces:
            runs += [[position], []]
        else:
            runs[-1].append(position)
    return [run for run in runs if run]


def _batch_item_write(
    *, index: KnowledgeIndex, subject: str | None, draft: RecordDraft | ApplicationError, actor: str, now: datetime | None
) -> RecordWriteResult | BatchFailure:
    """One item written as a single write, in its own savepoint."""
    if isinstance(draft, ApplicationError):
        return BatchFailure(error=draft)
    try:
        return record_write_authorised(index=index, subject=subject, draft=draft, actor=actor, now=now, durable=False)
    except ApplicationError as error:
        return BatchFailure(error=error)


def _checked(*, index: KnowledgeIndex, drafts: Sequence[RecordDraft | ApplicationError], run: list[int], now: datetime, results: list) -> list[_Checked]:
    """The run's items that pass a single write's checks; the others answered with their error.
    The store's types and lifetimes are read once."""
    allowed, lifetimes = store_known_types(index=index), store_lifetime_days(index=index)
    checked = []
    for position in run:
        draft = drafts[position]
        try:
            if isinstance(draft, ApplicationError):
                raise draft
            if draft.source in (MemoryRecord.Source.API, MemoryRecord.Source.TOOL):
                type_check(index=index, type_name=draft.type, allowed=allowed)
            normalised, expires_at = draft_checked(index=index, draft=draft, now=now, lifetimes=lifetimes)
        except ApplicationError as error:
            results[position] = BatchFailure(error=error)
            continue
        checked.append(_Checked(position=position, draft=draft, normalised=normalised, expires_at=expires_at))
    return checked


def _twins_locked(*, index: KnowledgeIndex, subject: str | None, checked: list[_Checked]) -> dict[tuple[str, str], MemoryRecord]:
    """Her active records in the same words as an item (an episode is never repeated), locked,
    by type and text: one query for the run."""
    keys = {(item.draft.type, item.normalised) for item in checked if item.draft.type not in EVENT_TYPES}
    if not keys:
        return {}
    twins = (
        MemoryRecord.objects.for_organisation(index.organisation_id)
        .select_for_update()
        .filter(
            index=index, subject=subject, status=MemoryRecord.Status.ACTIVE,
            type__in=sorted({type_name for type_name, _ in keys}), normalised_text__in=sorted({text for _, text in keys}),
        )
        .exclude(type__in=EVENT_TYPES)
        .order_by("pk")
    )
    found: dict[tuple[str, str], MemoryRecord] = {}
    for twin in twins:
        found.setdefault((twin.type, twin.normalised_text), twin)
    return found


def _run_write(
    *, index: KnowledgeIndex, subject: str | None, drafts: Sequence, run: list[int], actor: str, now: datetime, results: list
) -> None:
    """The run's items written together (the module's docstring), each answered in `results`."""
    checked = _checked(index=index, drafts=drafts, run=run, now=now, results=results)
    twins = _twins_locked(index=index, subject=subject, checked=checked)
    new: list[MemoryRecord] = []
    written: list[tuple[_Checked, MemoryRecord, str]] = []
    for item in checked:
        key = (item.draft.type, item.normalised)
        twin = twins.get(key) if item.draft.type not in EVENT_TYPES else None
        if twin is not None:
            written.append((item, twin, "confirmed"))
            continue
        record = record_new(index=index, subject=subject, draft=item.draft, normalised_text=item.normalised, replaced=None, now=now)
        record.expires_at = item.expires_at
        new.append(record)
        written.append((item, record, "created"))
        if item.draft.type not in EVENT_TYPES:
            twins[key] = record
    try:
        with transaction.atomic():
            bulk_create_with_history(new, MemoryRecord, batch_size=INSERT_BATCH, default_change_reason=change_reason(what="created", actor=actor))
    except IntegrityError as error:
        if not is_unique_active_violation(error):
            raise
        for item in checked:  # a concurrent write won a text: each settled as a single write settles it
            results[item.position] = _batch_item_write(index=index, subject=subject, draft=item.draft, actor=actor, now=now)
        return
    events = []
    for item, record, status in written:
        if status == "confirmed":
            # A repeat renews an expiring record by its type's lifetime, as a single write does.
            renewed = item.draft.expires_at or (item.expires_at if record.expires_at is not None else None)
            record_confirm(record=record, actor=actor, now=now, expires_at=renewed, tell=False)
            events.append(record_event(record=record, kind="record.updated", change="confirmed"))
        else:
            events.append(record_event(record=record, kind="record.created", change="created", replaces=None))
        results[item.position] = RecordWriteResult(record=record, status=status)
    webhook_events_emit(events=events, now=now)
    embeddings_schedule(index=index, record_ids=[record.id for record in new])


def records_delete_batch(*, caller: Caller, record_ids: Sequence[str]) -> list[str | BatchFailure]:
    """Deletes each record as `record_delete` would, in one transaction, answering each in order:
    its id when deleted, else its error (404 for one the caller may not address, 403 where the
    policy may not write its index). One named twice is deleted once and then not found."""
    records = MemoryRecord.objects.for_key(caller.key)
    with transaction.atomic(durable=True):
        return [_batch_item_delete(caller=caller, records=records, record_id=record_id) for record_id in record_ids]


def _batch_item_delete(*, caller: Caller, records: QuerySet[MemoryRecord], record_id: str) -> str | BatchFailure:
    try:
        record = record_get_available(caller=caller, record_id=record_id, own_only=True)
        # A denial's audit event is kept, as for a single delete: it is written outside the item's savepoint.
        write_right_check(caller=caller, index_id=record.index_id, param=None)
        with transaction.atomic():
            record_soft_delete_locked(records=records, record_id=record.pk, caller=caller)
    except ApplicationError as error:
        return BatchFailure(error=error)
    return record_id
