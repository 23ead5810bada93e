"""Reading maintenance: which stores are due and what each analysis may do, the
candidates a run looks at, proposals for the API and the console, and a store's maintenance as
the console shows it. Nothing here writes."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet

from core_memory.base.callers import Caller
from core_memory.base.errors import NotFound
from core_memory.organisations.models import Organisation
from core_memory.persons.models import Person
from maintenance.models import (
    ContradictionCheck,
    EpisodeUse,
    MaintenanceJob,
    MaintenanceRun,
    MaintenanceState,
    PromotionReview,
    Proposal,
    ProposalSource,
)
from memory.embedding.selectors import cosine_for_model
from memory.embedding.storage import index_embedding_model, index_embeds
from memory.models import MemoryRecord
from stores.models import KnowledgeIndex, MemoryStore

# Textually close (pg_trgm's similarity of the two texts): a pair worth asking about.
SIMILARITY_THRESHOLD = 0.25
# The closest few of her records (or the shared ones) per changed record; never all pairs.
CANDIDATES_PER_RECORD = 5
# Close in meaning: cosine of the stored vectors (e5 passages with their day). Contradictions in
# other words measured 0.91–0.96 and unrelated facts of one person 0.90–0.96, so meaning only
# nominates — the few nearest, never all pairs — and the helper model judges.
MEANING_THRESHOLD = 0.90
CANDIDATES_BY_MEANING_PER_RECORD = 3
UNFINISHED = (MaintenanceJob.Status.QUEUED, MaintenanceJob.Status.RUNNING, MaintenanceJob.Status.PARKED)


@dataclass(frozen=True)
class Analyses:
    """Which analyses run on a store now: contested marking while maintenance is
    on; store lessons also needs the `lessons` section; promotion the `promotion` section and an
    organisation with the `improvements` capability and its settings on."""

    contested: bool
    lessons: bool
    promotion: bool
    min_episodes: int
    labels: dict


def store_analyses(*, store: MemoryStore, organisation: Organisation) -> Analyses:
    maintenance = bool((store.maintenance or {}).get("enabled", True))
    lessons = store.lessons or {}
    promotion = store.promotion or {}
    improvements = organisation.has_capability("improvements") and bool((organisation.improvements or {}).get("enabled"))
    return Analyses(
        contested=maintenance,
        lessons=maintenance and bool(lessons.get("enabled")),
        promotion=maintenance and bool(promotion.get("enabled")) and improvements,
        min_episodes=int(lessons.get("min_episodes") or 3),
        labels=dict(promotion.get("labels") or {}),
    )


def stores_due(*, now: datetime) -> list[str]:
    """Index ids of the live stores whose maintenance is on and due: never run, or
    their next run has come."""
    return list(
        MemoryStore.objects.unscoped()
        .filter(index__deleted_at__isnull=True, maintenance__enabled=True)
        .exclude(index__maintenance_state__next_run_at__gt=now)
        .order_by("index_id")
        .values_list("index_id", flat=True)
    )


def stores_existing(*, index_ids: Sequence[str]) -> list[str]:
    """Which of `index_ids` are live stores (for `run_maintenance --store`)."""
    return list(
        MemoryStore.objects.unscoped().filter(index_id__in=index_ids, index__deleted_at__isnull=True).values_list("index_id", flat=True)
    )


def persons_closed_to_helper(*, caller: Caller, subjects: Iterable[str]) -> set[str]:
    """Those of `subjects` whose rules forbid the helper model to read them: nothing of theirs is sent to it."""
    subjects = {subject for subject in subjects if subject is not None}
    if not subjects:
        return set()
    return set(
        Person.objects.for_organisation(caller.organisation_id)
        .filter(subject__in=subjects, helper_model_may_read=False)
        .values_list("subject", flat=True)
    )


def person_may_be_read(*, caller: Caller, subject: str | None) -> bool:
    return subject is None or not persons_closed_to_helper(caller=caller, subjects=[subject])


@dataclass(frozen=True)
class ChangedRecord:
    id: str
    subject: str | None
    type: str
    text: str
    normalised_text: str
    confidence: float
    contested: bool
    updated_at: datetime


def records_changed(*, caller: Caller, index_id: str, since: datetime | None) -> list[ChangedRecord]:
    """The store's active records changed after `since` (all of them when None): what a run
    reads, so the work grows with what changed, not with the store."""
    records = MemoryRecord.objects.for_organisation(caller.organisation_id).filter(index_id=index_id, status=MemoryRecord.Status.ACTIVE)
    if since is not None:
        records = records.filter(updated_at__gt=since)
    fields = ("id", "subject", "type", "text", "normalised_text", "confidence", "contested", "updated_at")
    return [ChangedRecord(*row) for row in records.order_by("id").values_list(*fields)]


# For each changed record, the few closest of the same person (or shared set) and type: a
# LATERAL join, each reading only its own person's rows. Filled in by `_CLOSENESS`.
_CANDIDATES_SQL = """
SELECT changed.{id}, other.{id}
FROM {table} AS changed
CROSS JOIN LATERAL (
    SELECT candidate.{id}
    FROM {table} AS candidate
    WHERE candidate.organisation_id = changed.organisation_id
      AND candidate.index_id = changed.index_id
      AND {{same_person}}
      AND candidate.type = changed.type
      AND candidate.{id} <> changed.{id}{space}
      AND {close}
    ORDER BY {closest}, candidate.{id}
    LIMIT %(per_record)s
) AS other
WHERE changed.organisation_id = %(organisation_id)s AND changed.{id} = ANY(%(record_ids)s){changed_space}
"""


def _by_meaning(*, table: str, in_space: bool) -> str:
    # `+ 0` keeps the ordering off the HNSW index, whose approximate scan would drop most of a
    # person's rows after filtering: her scope is scanned exactly, as search does.
    return _CANDIDATES_SQL.format(
        id="record_id",
        table=table,
        space="\n      AND candidate.space = %(space)s" if in_space else "",
        changed_space=" AND changed.space = %(space)s" if in_space else "",
        close="(candidate.vector <#> changed.vector) <= -%(threshold)s",
        closest="(candidate.vector <#> changed.vector) + 0",
    )


_CLOSENESS = {
    # Textually (pg_trgm), among active records.
    "text": _CANDIDATES_SQL.format(
        id="id",
        table="memory_memoryrecord",
        space="",
        changed_space="",
        close="candidate.status = 'active' AND similarity(candidate.text, changed.text) >= %(threshold)s",
        closest="similarity(candidate.text, changed.text) DESC",
    ),
    # In meaning, over the vectors of an index that embeds (only active records have one), by
    # the model inside Core; and by a model served elsewhere, its space's vectors only.
    "meaning": _by_meaning(table="memory_recordembedding", in_space=False),
    "meaning_served": _by_meaning(table="memory_modelembedding", in_space=True),
}


def contradiction_candidates(
    *, caller: Caller, index: KnowledgeIndex | None, record_ids: Sequence[str], shared: bool
) -> list[tuple[str, str]]:
    """Pairs (changed record, candidate) worth asking about: for each changed record,
    the few active records of the same person — or, with `shared`, of the shared set — and
    the same type whose text is closest to its own (pg_trgm), above a threshold; and, where
    `index` embeds, the few whose vectors are nearest, which finds a contradiction told in
    other words ("Anna drinkt geen koffie." / "… begint elke ochtend met een espresso."). One
    query per signal for any number of changed records, each reading only its own person's
    records."""
    if not record_ids:
        return []
    same_person = "candidate.subject IS NULL AND changed.subject IS NULL" if shared else "candidate.subject = changed.subject"
    queries = [(_CLOSENESS["text"], SIMILARITY_THRESHOLD, CANDIDATES_PER_RECORD, None)]
    if index is not None and index_embeds(index):
        # The vectors of the model the index's searches compare (its former one while it switches).
        model = index_embedding_model(index)
        sql = _CLOSENESS["meaning"] if model.in_process else _CLOSENESS["meaning_served"]
        queries.append((sql, cosine_for_model(model, MEANING_THRESHOLD), CANDIDATES_BY_MEANING_PER_RECORD, model.space))
    pairs: list[tuple[str, str]] = []
    with connection.cursor() as cursor:
        for sql, threshold, per_record, space in queries:
            cursor.execute(
                sql.format(same_person=same_person),
                {
                    "threshold": threshold, "per_record": per_record, "organisation_id": caller.organisation_id,
                    "record_ids": list(record_ids), "space": space,
                },
            )
            pairs += [(first, second) for first, second in cursor.fetchall()]
    return pairs


def records_stamps(*, caller: Caller, record_ids: Iterable[str]) -> dict[str, tuple[str | None, datetime]]:
    """Active records' person and `updated_at`, by id."""
    rows = (
        MemoryRecord.objects.for_organisation(caller.organisation_id)
        .filter(pk__in=set(record_ids), status=MemoryRecord.Status.ACTIVE)
        .values_list("id", "subject", "updated_at")
    )
    return {record_id: (subject, updated_at) for record_id, subject, updated_at in rows}


def pairs_settled(*, caller: Caller, pairs: Iterable[tuple[str, str]], stamps: dict) -> set[tuple[str, str]]:
    """Of `pairs` (each in id order), those needing no question: already linked as contradicting,
    or judged after both records last changed."""
    pairs = set(pairs)
    if not pairs:
        return set()
    ids = {record_id for pair in pairs for record_id in pair}
    through = MemoryRecord.contradicts.through
    linked = set(
        through.objects.filter(from_memoryrecord_id__in=ids, to_memoryrecord_id__in=ids).values_list(
            "from_memoryrecord_id", "to_memoryrecord_id"
        )
    )
    checks = (
        ContradictionCheck.objects.for_organisation(caller.organisation_id)
        .filter(first_id__in=ids, second_id__in=ids)
        .values_list("first_id", "second_id", "checked_at")
    )
    settled = {pair for pair in pairs if pair in linked}
    for first, second, checked_at in checks:
        if (first, second) in pairs and checked_at >= max(stamps[first][1], stamps[second][1]):
            settled.add((first, second))
    return settled


def planned_job_payloads(*, index_id: str, caller: Caller, kind: str, since: datetime | None) -> list[dict]:
    """What the store's jobs of `kind` not yet done, or planned after `since`, are about: a run
    plans nothing again for records that stand as they stood when such a job was planned (the
    payload keeps their `updated_at`), whatever became of the job. A job that failed for a
    lasting reason waits for its records to change."""
    planned = Q(status__in=UNFINISHED) if since is None else Q(status__in=UNFINISHED) | Q(created_at__gt=since)
    return list(
        MaintenanceJob.objects.for_organisation(caller.organisation_id).filter(planned, index_id=index_id, kind=kind).values_list("payload", flat=True)
    )


def episodes_unused(*, caller: Caller, index_id: str, subjects: Iterable[str]) -> list[tuple[str, str, str | None, datetime]]:
    """(id, person, result, updated_at) of the persons' active episodes no store lesson used yet
    (an episode teaches one lesson only), oldest first."""
    used = EpisodeUse.objects.for_organisation(caller.organisation_id).filter(episode_id=OuterRef("pk"))
    return list(
        MemoryRecord.objects.for_organisation(caller.organisation_id)
        .filter(index_id=index_id, subject__in=set(subjects), type="episode", status=MemoryRecord.Status.ACTIVE)
        .filter(~Exists(used))
        .order_by("created_at", "id")
        .values_list("id", "subject", "structured__result", "updated_at")
    )


def records_proposed(*, caller: Caller, record_ids: Iterable[str]) -> set[str]:
    """Which of the records a proposal already rests on: a record is never proposed twice."""
    return set(
        ProposalSource.objects.for_organisation(caller.organisation_id).filter(record_id__in=set(record_ids)).values_list("record_id", flat=True)
    )


def texts_proposed(*, caller: Caller, index_id: str, texts: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """Of (type, normalised text), those a proposal of the store already rests on: the fact was
    proposed once, whoever else comes to hold it."""
    texts = set(texts)
    if not texts:
        return set()
    rows = (
        ProposalSource.objects.for_organisation(caller.organisation_id)
        .filter(
            proposal__index_id=index_id,
            record__type__in={type_name for type_name, _ in texts},
            record__normalised_text__in={text for _, text in texts},
        )
        .values_list("record__type", "record__normalised_text")
    )
    return set(rows) & texts


def reviews_current(*, caller: Caller, stamps: dict[str, datetime]) -> set[str]:
    """Of the records (id → updated_at), those the analysis model judged since they last changed."""
    reviews = PromotionReview.objects.for_organisation(caller.organisation_id).filter(record_id__in=stamps).values_list("record_id", "reviewed_at")
    return {record_id for record_id, reviewed_at in reviews if reviewed_at >= stamps[record_id]}


def shared_texts(*, caller: Caller, index_id: str, texts: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """Of (type, normalised text), those an active shared record of the store already says."""
    texts = set(texts)
    if not texts:
        return set()
    rows = (
        MemoryRecord.objects.for_organisation(caller.organisation_id)
        .filter(
            index_id=index_id,
            subject__isnull=True,
            status=MemoryRecord.Status.ACTIVE,
            type__in={type_name for type_name, _ in texts},
            normalised_text__in={text for _, text in texts},
        )
        .values_list("type", "normalised_text")
    )
    return set(rows) & texts


# --- proposals ---

def _proposals_shown(proposals: QuerySet[Proposal]) -> QuerySet[Proposal]:
    sources = ProposalSource.objects.unscoped().select_related("record").order_by("record_id")
    return proposals.prefetch_related(Prefetch("sources", queryset=sources))


def proposal_list(*, caller: Caller, index: KnowledgeIndex | None = None, status: str | None = None) -> QuerySet[Proposal]:
    """Proposals of the indexes the caller's key may read (the one given, read for this key), newest first."""
    proposals = Proposal.objects.for_key(caller.key)
    readable = caller.key.named_index_ids(right="read")
    if index is not None:
        proposals = proposals.filter(index_id=index.pk)
    elif readable is not None:
        proposals = proposals.filter(index_id__in=readable)
    if status is not None:
        proposals = proposals.filter(status=status)
    return _proposals_shown(proposals)


def proposal_get_available(*, caller: Caller, proposal_id: str) -> Proposal:
    """A proposal of an index available to the caller's key; else 404, as for any object the key may not see."""
    proposal = _proposals_shown(Proposal.objects.for_key(caller.key)).filter(pk=proposal_id).first()
    if proposal is None:
        raise NotFound("No such proposal.")
    return proposal


def proposal_list_for_organisation(
    *, caller: Caller, status: str | None = None, index_id: str | None = None
) -> QuerySet[Proposal]:
    """The console's queue: proposals of the organisation's live indexes, newest first."""
    proposals = Proposal.objects.for_organisation(caller.organisation_id).live()
    if status is not None:
        proposals = proposals.filter(status=status)
    if index_id is not None:
        proposals = proposals.filter(index_id=index_id)
    return _proposals_shown(proposals.select_related("index")).order_by("-id")


def proposal_get_for_organisation(*, caller: Caller, proposal_id: str) -> Proposal:
    proposal = proposal_list_for_organisation(caller=caller).filter(pk=proposal_id).first()
    if proposal is None:
        raise NotFound("No such proposal.")
    return proposal


def proposals_resting_only_on(*, caller: Caller, subject: str) -> QuerySet[Proposal]:
    """The proposals whose every source is a record of hers: erasing her erases them."""
    sources = ProposalSource.objects.for_organisation(caller.organisation_id)
    hers = sources.filter(record__subject=subject).values("proposal_id")
    others = sources.filter(proposal_id__in=hers).exclude(record__subject=subject).values("proposal_id")
    return Proposal.objects.for_organisation(caller.organisation_id).filter(pk__in=hers).exclude(pk__in=others)


def person_jobs_counted(*, caller: Caller, subject: str) -> int:
    """How many maintenance jobs are about her records (what erasing her removes)."""
    return MaintenanceJob.objects.for_organisation(caller.organisation_id).filter(subject=subject).count()


def person_proposals(*, caller: Caller, subject: str) -> QuerySet[Proposal]:
    """The proposals resting on her records (any of them), for her export."""
    resting = ProposalSource.objects.for_organisation(caller.organisation_id).filter(record__subject=subject).values("proposal_id")
    return _proposals_shown(Proposal.objects.for_organisation(caller.organisation_id).filter(pk__in=resting)).order_by("id")


# --- a store's maintenance, as the console shows it ---

@dataclass(frozen=True)
class MaintenanceStatus:
    state: MaintenanceState | None
    last_run: MaintenanceRun | None
    jobs: dict[str, int]


def store_maintenance_status(*, index: KnowledgeIndex) -> MaintenanceStatus:
    """The store's clock, its last run and its jobs per status."""
    state = MaintenanceState.objects.for_organisation(index.organisation_id).filter(index_id=index.pk).first()
    last_run = MaintenanceRun.objects.for_organisation(index.organisation_id).filter(index_id=index.pk).order_by("-started_at").first()
    counts = dict(
        MaintenanceJob.objects.for_organisation(index.organisation_id)
        .filter(index_id=index.pk)
        .order_by()
        .values_list("status")
        .annotate(count=Count("id"))
    )
    return MaintenanceStatus(
        state=state, last_run=last_run, jobs={status: counts.get(status, 0) for status in MaintenanceJob.Status.values}
    )
