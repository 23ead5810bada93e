"""Contested records: records that contradict another record of the same person,
or of the shared set.

Planning finds candidate pairs cheaply — for each record changed since the last run, the few
active records of the same person (or the shared set) and type whose text is closest to it,
and where the index embeds the few nearest in meaning
(`maintenance.selectors.contradiction_candidates`) — and leaves out pairs already linked or
judged since both last changed. One job per person asks the helper model about her pairs
(`core_contradictions`); its answer marks both records of each contradicting pair `contested`
and links them (memory's `records_contradiction_mark_within`), and every pair it judged is
remembered (`ContradictionCheck`), in the job's one transaction.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.utils import timezone

from core_memory.base.callers import Caller
from maintenance.asking import CONTRADICTIONS, CONTRADICTIONS_SCHEMA, contradictions_messages, contradictions_read
from maintenance.callers import maintenance_caller
from maintenance.models import ContradictionCheck, MaintenanceJob
from maintenance.selectors import (
    ChangedRecord,
    contradiction_candidates,
    pairs_settled,
    records_stamps,
    planned_job_payloads,
)
from maintenance.services.work import Asking, Prepared, chunks, job_queued, stamp
from memory.models import MemoryRecord
from memory.selectors import EVENT_TYPES
from memory.services.contradictions import records_contradiction_mark_within
from stores.models import KnowledgeIndex

KIND = MaintenanceJob.Kind.CONTRADICTIONS
# The most pairs one request shows; a person with more gets several jobs.
MAX_PAIRS_PER_JOB = 40


def contradiction_jobs_plan(
    *, caller: Caller, index: KnowledgeIndex, changed: list[ChangedRecord], closed: set[str], since: datetime | None, clock: datetime
) -> list[MaintenanceJob]:
    """The jobs for the pairs worth asking about among `changed` (records of persons in
    `closed`, whose rules forbid the helper model, are never sent); `index` is the store's."""
    index_id = index.pk
    readable = [record for record in changed if record.type not in EVENT_TYPES and record.subject not in closed]
    candidates = contradiction_candidates(
        caller=caller, index=index, record_ids=[record.id for record in readable if record.subject is not None], shared=False
    ) + contradiction_candidates(
        caller=caller, index=index, record_ids=[record.id for record in readable if record.subject is None], shared=True
    )
    pairs = {tuple(sorted(pair)) for pair in candidates}
    stamps = records_stamps(caller=caller, record_ids={record_id for pair in pairs for record_id in pair})
    pairs = {pair for pair in pairs if pair[0] in stamps and pair[1] in stamps}
    # A pair a job was planned for while both records stood as they stand now.
    planned = {
        tuple(pair)
        for payload in planned_job_payloads(index_id=index_id, caller=caller, kind=KIND, since=since)
        for pair in payload["pairs"]
        if all(record_id in stamps and payload["records"][record_id] == stamp(stamps[record_id][1]) for record_id in pair)
    }
    pairs -= planned | pairs_settled(caller=caller, pairs=pairs, stamps=stamps)

    per_person: dict[str | None, list[tuple[str, str]]] = defaultdict(list)
    for pair in sorted(pairs):
        per_person[stamps[pair[0]][0]].append(pair)
    return [
        job_queued(
            caller=caller,
            index_id=index_id,
            kind=KIND,
            subject=subject,
            payload={
                "records": {record_id: stamp(stamps[record_id][1]) for pair in chunk for record_id in pair},
                "pairs": [list(pair) for pair in chunk],
            },
            clock=clock,
        )
        for subject in sorted(per_person, key=lambda each: (each is not None, each or ""))
        for chunk in chunks(per_person[subject], MAX_PAIRS_PER_JOB)
    ]


def _current(*, job: MaintenanceJob, lock: bool = False) -> dict[str, MemoryRecord]:
    """The job's records still active, of its person, and unchanged since it was planned."""
    records = MemoryRecord.objects.for_organisation(job.organisation_id).filter(
        pk__in=job.payload["records"], status=MemoryRecord.Status.ACTIVE, subject=job.subject
    )
    if lock:
        records = records.select_for_update().order_by("pk")
    return {record.pk: record for record in records if stamp(record.updated_at) == job.payload["records"][record.pk]}


def contradictions_prepare(*, job: MaintenanceJob) -> Prepared:
    current = _current(job=job)
    pairs = [tuple(pair) for pair in job.payload["pairs"] if pair[0] in current and pair[1] in current]
    if not pairs:
        return Prepared(asking=None)
    shown = sorted({record_id for pair in pairs for record_id in pair})
    records = [{"id": record_id, "type": current[record_id].type, "text": current[record_id].text} for record_id in shown]
    return Prepared(
        asking=Asking(
            name=CONTRADICTIONS,
            schema=CONTRADICTIONS_SCHEMA,
            messages=contradictions_messages(records=records, pairs=pairs),
            read=contradictions_read,
        ),
        context={"pairs": pairs, "shown": set(shown)},
    )


def contradictions_write(*, job: MaintenanceJob, prepared: Prepared, answer: list[tuple[str, str]]) -> int:
    """Inside the job's transaction: the pairs the model found among those shown (ids it was not
    shown are ignored: it may only cite what it saw) are marked; every pair judged is remembered. Records changed since
    the request was made are left for the next run. Returns the pairs newly marked."""
    shown = prepared.context["shown"]
    found = {tuple(sorted(pair)) for pair in answer if pair[0] in shown and pair[1] in shown and pair[0] != pair[1]}
    current = _current(job=job, lock=True)
    judged = {pair for pair in set(prepared.context["pairs"]) | found if pair[0] in current and pair[1] in current}
    now = timezone.now()
    ContradictionCheck.objects.bulk_create(
        [
            ContradictionCheck(organisation_id=job.organisation_id, first_id=first, second_id=second, contradicts=(first, second) in found, checked_at=now)
            for first, second in sorted(judged)
        ],
        update_conflicts=True,
        unique_fields=["first", "second"],
        update_fields=["contradicts", "checked_at"],
    )
    return records_contradiction_mark_within(
        caller=maintenance_caller(job.organisation_id), pairs=sorted(found & judged)
    )
