"""Promotion analyses: proposals to copy a person's fact into a shared
record, never made twice for the same record.

Of the personal records changed since the last run, only those that may be shared at all are
looked at (`maintenance.promotable`: never a fact about a person, never an address, telephone
number, link or other personal data, never a lesson, never a contested record), and only when
no shared record of the store says the same already.

- Several persons (no model call): when the memories of two or more persons hold the fact in
  the same way — the same type and the same normalised text a write compares — one proposal rests on
  all their records. Made while the run is planned.
- General knowledge (`core_promotion`): the rest, one job per person, asks the helper model
  which of her facts are general knowledge of the organisation; each one it names becomes a
  proposal resting on her record. Every record it was shown is remembered as judged
  (`PromotionReview`) until it changes. Nothing is sent for a person whose rules forbid the
  helper model to read her.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from datetime import datetime

from django.db.models.functions import MD5
from django.utils import timezone

from core_memory.base.callers import Caller
from maintenance.asking import PROMOTION, PROMOTION_SCHEMA, promotion_messages, promotion_read
from maintenance.callers import maintenance_caller
from maintenance.models import MaintenanceJob, PromotionReview, Proposal, ProposalSource
from maintenance.promotable import about_a_person, promotable
from maintenance.selectors import (
    ChangedRecord,
    records_proposed,
    reviews_current,
    shared_texts,
    texts_proposed,
    planned_job_payloads,
)
from maintenance.services.work import Asking, Prepared, chunks, job_queued, stamp
from core_memory.webhooks.services import webhook_event_emit
from memory.models import MemoryRecord

KIND = MaintenanceJob.Kind.PROMOTION
MAX_RECORDS_PER_JOB = 40


def _digest(normalised_text: str) -> str:
    return hashlib.md5(normalised_text.encode(), usedforsecurity=False).hexdigest()


def _proposal_make(*, caller: Caller, index_id: str, records: list, reason: str, now: datetime) -> Proposal:
    """A proposal resting on `records` (rows with id, type, text and confidence), its text the first one's."""
    first = records[0]
    proposal = Proposal.objects.create(
        organisation_id=caller.organisation_id,
        index_id=index_id,
        type=first.type,
        text=first.text,
        confidence=max(record.confidence for record in records),
        reason=reason,
        created_at=now,
    )
    ProposalSource.objects.bulk_create([ProposalSource(record_id=record.id, proposal=proposal) for record in records])
    webhook_event_emit(
        caller=caller,
        kind="proposal.created",
        data={"proposal_id": proposal.id, "index_id": index_id, "type": proposal.type, "reason": reason, "record_ids": [record.id for record in records]},
    )
    return proposal


def _holders(*, caller: Caller, index_id: str, candidates: list[ChangedRecord]) -> dict[tuple[str, str], list[ChangedRecord]]:
    """Every active personal record of the store with the type and normalised text of a
    candidate, grouped by them (one query, by the digest index `memory_personal_same_text`)."""
    rows = (
        MemoryRecord.objects.for_organisation(caller.organisation_id)
        .annotate(digest=MD5("normalised_text"))
        .filter(
            index_id=index_id,
            status=MemoryRecord.Status.ACTIVE,
            subject__isnull=False,
            digest__in={_digest(record.normalised_text) for record in candidates},
            type__in={record.type for record in candidates},
        )
        .order_by("id")
        .values_list("id", "subject", "type", "text", "normalised_text", "confidence", "contested", "updated_at")
    )
    groups: dict[tuple[str, str], list[ChangedRecord]] = defaultdict(list)
    for row in rows:
        record = ChangedRecord(*row)
        groups[(record.type, record.normalised_text)].append(record)
    return groups


def _candidates(*, caller: Caller, index_id: str, changed: list[ChangedRecord]) -> list[ChangedRecord]:
    """The changed personal records that may be shared at all, and that no shared record or
    earlier proposal of the store says already."""
    candidates = [
        record
        for record in changed
        if record.subject is not None
        and promotable(type_name=record.type, text=record.text, contested=record.contested, subjects=[record.subject])
    ]
    texts = {(record.type, record.normalised_text) for record in candidates}
    settled = shared_texts(caller=caller, index_id=index_id, texts=texts) | texts_proposed(
        caller=caller, index_id=index_id, texts=texts
    )
    return [record for record in candidates if (record.type, record.normalised_text) not in settled]


def _several_persons_proposed(*, caller: Caller, index_id: str, candidates: list[ChangedRecord], now: datetime) -> tuple[int, list[ChangedRecord]]:
    """Proposals for the facts two or more persons hold in the same way, each resting on all
    their records. Returns (proposals made, the candidates left for the model to judge)."""
    made = 0
    in_proposals: set[str] = set()
    holders = _holders(caller=caller, index_id=index_id, candidates=candidates)
    # A text that names any of the persons who hold it is about a person, whoever holds it.
    about_a_holder = {
        text_key for text_key, group in holders.items() if about_a_person(group[0].text, subjects={record.subject for record in group})
    }
    candidates = [record for record in candidates if (record.type, record.normalised_text) not in about_a_holder]
    for text_key in sorted({(record.type, record.normalised_text) for record in candidates}):
        sources = [
            record
            for record in holders.get(text_key, [])
            if promotable(type_name=record.type, text=record.text, contested=record.contested, subjects=[record.subject])
        ]
        if len({record.subject for record in sources}) >= 2:
            _proposal_make(
                caller=caller, index_id=index_id, records=sources, reason=Proposal.Reason.SEVERAL_PERSONS, now=now
            )
            made += 1
            in_proposals.update(record.id for record in sources)
    return made, [record for record in candidates if record.id not in in_proposals]


def promotion_plan(
    *, caller: Caller, index_id: str, changed: list[ChangedRecord], closed: set[str], since: datetime | None, clock: datetime, now: datetime
) -> tuple[int, list[MaintenanceJob]]:
    """Inside the run's planning transaction: the several-persons proposals (made here) and the
    jobs that ask the analysis model about the rest. Returns (proposals made, jobs)."""
    candidates = _candidates(caller=caller, index_id=index_id, changed=changed)
    if not candidates:
        return 0, []
    made, rest = _several_persons_proposed(caller=caller, index_id=index_id, candidates=candidates, now=now)
    rest = [record for record in rest if record.subject not in closed]
    judged = reviews_current(caller=caller, stamps={record.id: record.updated_at for record in rest})
    planned = {
        (record_id, record_stamp)
        for payload in planned_job_payloads(index_id=index_id, caller=caller, kind=KIND, since=since)
        for record_id, record_stamp in payload["records"].items()
    }
    per_person: dict[str, list[ChangedRecord]] = defaultdict(list)
    for record in rest:
        if record.id not in judged and (record.id, stamp(record.updated_at)) not in planned:
            per_person[record.subject].append(record)
    jobs = [
        job_queued(
            caller=caller,
            index_id=index_id,
            kind=KIND,
            subject=subject,
            payload={"records": {record.id: stamp(record.updated_at) for record in chunk}},
            clock=clock,
        )
        for subject in sorted(per_person)
        for chunk in chunks(per_person[subject], MAX_RECORDS_PER_JOB)
    ]
    return made, jobs


def _current(*, job: MaintenanceJob, lock: bool = False) -> list[MemoryRecord]:
    """The job's records still active, unchanged, not yet proposed, and still fit to propose."""
    records = MemoryRecord.objects.for_organisation(job.organisation_id).filter(
        pk__in=job.payload["records"], subject=job.subject, status=MemoryRecord.Status.ACTIVE
    )
    if lock:
        records = records.select_for_update()
    records = list(records.order_by("pk"))
    proposed = records_proposed(caller=maintenance_caller(job.organisation_id), record_ids=[record.pk for record in records])
    return [
        record
        for record in records
        if record.pk not in proposed
        and stamp(record.updated_at) == job.payload["records"][record.pk]
        and promotable(type_name=record.type, text=record.text, contested=record.contested, subjects=[record.subject])
    ]


def promotion_prepare(*, job: MaintenanceJob) -> Prepared:
    records = _current(job=job)
    if not records:
        return Prepared(asking=None)
    return Prepared(
        asking=Asking(
            name=PROMOTION,
            schema=PROMOTION_SCHEMA,
            messages=promotion_messages(records=[{"id": record.pk, "type": record.type, "text": record.text} for record in records]),
            read=promotion_read,
        ),
        context={"shown": [record.pk for record in records]},
    )


def promotion_write(*, job: MaintenanceJob, prepared: Prepared, answer: list[str], now: datetime) -> int:
    """Inside the job's transaction: a proposal for each record the model judged general
    knowledge (of those it was shown and that are still as they were), a review for every
    record judged. Returns the proposals made."""
    shown = set(prepared.context["shown"])
    general = set(answer) & shown
    current = [record for record in _current(job=job, lock=True) if record.pk in shown]
    reviewed_at = timezone.now()
    PromotionReview.objects.bulk_create(
        [
            PromotionReview(record_id=record.pk, organisation_id=job.organisation_id, general=record.pk in general, reviewed_at=reviewed_at)
            for record in current
        ],
        update_conflicts=True,
        unique_fields=["record"],
        update_fields=["general", "reviewed_at"],
    )
    chosen = [record for record in current if record.pk in general]
    texts = {(record.type, record.normalised_text) for record in chosen}
    caller = maintenance_caller(job.organisation_id)
    settled = shared_texts(caller=caller, index_id=job.index_id, texts=texts) | texts_proposed(caller=caller, index_id=job.index_id, texts=texts)
    made = 0
    for record in chosen:
        if (record.type, record.normalised_text) in settled:
            continue
        settled.add((record.type, record.normalised_text))
        _proposal_make(caller=caller, index_id=job.index_id, records=[record], reason=Proposal.Reason.GENERAL_KNOWLEDGE, now=now)
        made += 1
    return made
