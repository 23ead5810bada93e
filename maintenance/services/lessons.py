"""Store lessons: when at least `min_episodes` of a person's episodes not yet
used went the same way — all succeeded, or all failed — the helper model is asked, in one
metered call with pseudonymised content, for one short sentence: a working method that went
well or a pitfall to avoid. It becomes a `lesson` record of hers only (untrusted, written by
Core, never proposed to be shared), and the episodes it was drawn from are used, in one transaction.
Nothing is sent for a person whose rules forbid the helper model to read her.

Only persons with an episode new since the last run are looked at; a lesson is drawn from at
most `MAX_EPISODES_PER_LESSON` episodes, oldest first (the rest wait for the next run).
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.base.work.runner import WorkFailed
from core_memory.pii.placeholders import RedactionError
from maintenance.asking import STORE_LESSON, STORE_LESSON_SCHEMA, store_lesson_messages, store_lesson_read
from maintenance.callers import maintenance_caller
from maintenance.models import EpisodeUse, MaintenanceJob
from maintenance.pseudonyms import texts_pseudonymise
from maintenance.selectors import ChangedRecord, episodes_unused, planned_job_payloads
from maintenance.services.work import Asking, Prepared, job_queued, stamp
from memory.embedding.selectors import lesson_near_duplicate
from memory.models import MemoryRecord
from memory.services.writes import RecordDraft, record_write_by_core_within
from stores.models import KnowledgeIndex

KIND = MaintenanceJob.Kind.STORE_LESSON
EPISODE = "episode"
LESSON = "lesson"
RESULTS = ("succeeded", "failed")
# How the lesson reads, by how the episodes went (the `lesson.kind` of session lessons).
LESSON_KINDS = {"succeeded": "workflow", "failed": "pitfall"}
MAX_EPISODES_PER_LESSON = 20


def lesson_jobs_plan(
    *, caller: Caller, index_id: str, changed: list[ChangedRecord], closed: set[str], since: datetime | None, min_episodes: int, clock: datetime
) -> list[MaintenanceJob]:
    """One job for each person and way her unused episodes went, when there are enough of them."""
    subjects = {record.subject for record in changed if record.type == EPISODE and record.subject is not None} - closed
    if not subjects:
        return []
    planned = {
        (episode_id, episode_stamp)
        for payload in planned_job_payloads(index_id=index_id, caller=caller, kind=KIND, since=since)
        for episode_id, episode_stamp in payload["episodes"].items()
    }
    groups: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for episode_id, subject, result, updated_at in episodes_unused(caller=caller, index_id=index_id, subjects=subjects):
        if result in RESULTS and (episode_id, stamp(updated_at)) not in planned:
            groups[(subject, result)][episode_id] = stamp(updated_at)
    jobs = []
    for (subject, result), episodes in sorted(groups.items()):
        if len(episodes) < min_episodes:
            continue
        chosen = dict(list(episodes.items())[:MAX_EPISODES_PER_LESSON])
        payload = {"result": result, "episodes": chosen}
        jobs.append(job_queued(caller=caller, index_id=index_id, kind=KIND, subject=subject, payload=payload, clock=clock))
    return jobs


def _current(*, job: MaintenanceJob, lock: bool = False) -> list[MemoryRecord]:
    """The job's episodes still active, unused and as they were when planned, oldest first."""
    episodes = MemoryRecord.objects.for_organisation(job.organisation_id).filter(
        pk__in=job.payload["episodes"], type=EPISODE, subject=job.subject, status=MemoryRecord.Status.ACTIVE
    )
    if lock:
        episodes = episodes.select_for_update()
    episodes = list(episodes.order_by("pk"))
    used = set(EpisodeUse.objects.for_organisation(job.organisation_id).filter(episode_id__in=[each.pk for each in episodes]).values_list("episode_id", flat=True))
    return sorted(
        (
            episode
            for episode in episodes
            if episode.pk not in used
            and stamp(episode.updated_at) == job.payload["episodes"][episode.pk]
            and (episode.structured or {}).get("result") == job.payload["result"]
        ),
        key=lambda episode: (episode.created_at, episode.pk),
    )


def store_lesson_prepare(*, job: MaintenanceJob, min_episodes: int) -> Prepared:
    episodes = _current(job=job)
    if len(episodes) < min_episodes:
        return Prepared(asking=None)
    texts = []
    for episode in episodes:
        texts += [(episode.structured or {}).get("intent") or "", episode.text]
    try:
        shown, placeholders = texts_pseudonymise(texts=texts, subject=job.subject)
    except RedactionError as error:
        raise WorkFailed(error.code, "Personal data could not be pseudonymised; nothing was sent.") from error
    accounts = [
        {
            "intent": shown[2 * position] or None,
            "text": shown[2 * position + 1],
            "tools": sorted({tool.get("name") for tool in (episode.structured or {}).get("tools") or [] if isinstance(tool, dict) and tool.get("name")}),
        }
        for position, episode in enumerate(episodes)
    ]
    return Prepared(
        asking=Asking(
            name=STORE_LESSON,
            schema=STORE_LESSON_SCHEMA,
            messages=store_lesson_messages(result=job.payload["result"], episodes=accounts),
            read=store_lesson_read,
            placeholders=placeholders,
        ),
        context={"episode_ids": [episode.pk for episode in episodes]},
    )


def store_lesson_write(*, job: MaintenanceJob, prepared: Prepared, answer: str, now: datetime) -> int:
    """Inside the job's transaction: her lesson and the episodes' use, or nothing when one of
    them was used, changed or removed since the request was made. Returns 1 for a new lesson
    (0 when she had it in the same or nearly the same words: it is confirmed, as a session lesson would be)."""
    asked = prepared.context["episode_ids"]
    current = [episode.pk for episode in _current(job=job, lock=True)]
    if current != asked:
        return 0
    index = KnowledgeIndex.objects.for_organisation(job.organisation_id).live().filter(pk=job.index_id).first()
    # Hers in nearly the same words (where the index embeds, as for session lessons): that one is confirmed.
    near = lesson_near_duplicate(index=index, subject=job.subject, text=answer) if index is not None else None
    result = record_write_by_core_within(
        caller=maintenance_caller(job.organisation_id),
        index_id=job.index_id,
        subject=job.subject,
        now=now,
        draft=RecordDraft(
            type=LESSON,
            text=near.text if near is not None else answer,
            metadata={"lesson.kind": LESSON_KINDS[job.payload["result"]], "lesson.basis": "episodes"},
            source=MemoryRecord.Source.MAINTENANCE,
            trusted=False,
            structured={"result": job.payload["result"], "episode_ids": asked},
        ),
    )
    used_at = timezone.now()
    EpisodeUse.objects.bulk_create(
        [EpisodeUse(episode_id=episode_id, organisation_id=job.organisation_id, lesson=result.record, used_at=used_at) for episode_id in asked]
    )
    return int(result.status != "confirmed")
