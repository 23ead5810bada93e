"""What a search, the block and the lists may read: the records (and their vectors) of an index
that the caller's person may see, narrowed by a search's types and times."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef, Q, QuerySet
from django.utils import timezone

from core_memory.base.errors import ImproperlyScoped
from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from core_memory.llm.embedding_models import EmbeddingModel
from memory.models import MemoryRecord, ModelEmbedding, RecordEmbedding, unexpired
from stores.models import KnowledgeIndex

SEARCH_DEFAULT_LIMIT = 10
SEARCH_MAX_LIMIT = 50


@dataclass(frozen=True)
class SearchFilters:
    """What a search asks for besides its question: the types and times of the records, how many
    hits, and whose records. With no person, `all_subjects` searches every person's records (an
    organisation-level API request) rather than only the shared ones; for a person, `shared=False`
    leaves the shared ones out."""

    types: Sequence[str] | None = None
    after: datetime | None = None
    before: datetime | None = None
    limit: int = SEARCH_DEFAULT_LIMIT
    all_subjects: bool = False
    shared: bool = True


def records_in_scope(
    *, caller: Caller, index: KnowledgeIndex, all_subjects: bool = False, shared: bool = True
) -> QuerySet[MemoryRecord]:
    """Not-deleted records of the index the caller may see.

    `index` must have been read for the caller's key (`KnowledgeIndex.objects.for_key`); anything
    else is a bug. A person sees hers and the shared ones (only hers with `shared=False`,
    for a part that is hers alone, such as her past sessions); with no person, `all_subjects`
    decides between every record (an organisation-level API request) and only the shared ones.
    """
    key, subject = caller.key, caller.subject
    index_scoped(caller=caller, index=index)
    records = (
        MemoryRecord.objects.for_organisation(key.organisation_id)
        .filter(index_id=index.pk)
        .exclude(status=MemoryRecord.Status.DELETED)
    )
    if subject is not None:
        return records.filter(Q(subject=subject) | Q(subject__isnull=True)) if shared else records.filter(subject=subject)
    if all_subjects:
        return records
    return records.filter(subject__isnull=True)


def index_scoped(*, caller: Caller, index: KnowledgeIndex) -> None:
    """`index` must have been read for the caller's key (`KnowledgeIndex.objects.for_key`);
    anything else is a bug."""
    if not index.resolved_for(caller.key):
        raise ImproperlyScoped(f"index {index.pk} was not read for key {caller.key.pk}")


def records_visible(*, caller: Caller, index: KnowledgeIndex, shared: bool = True, now: datetime | None = None) -> QuerySet[MemoryRecord]:
    """Active records the caller's person may see at `now` (not expired): hers and the shared
    ones (only hers with `shared=False`; only shared when the caller is for nobody)."""
    records = records_in_scope(caller=caller, index=index, shared=shared)
    return records.filter(unexpired(now or timezone.now()), status=MemoryRecord.Status.ACTIVE)


def search_parts(*, caller: Caller, index: KnowledgeIndex, shared: bool, filters: dict, now: datetime) -> list[QuerySet[MemoryRecord]]:
    """For a person with the shared records, the two parts a search takes its candidates from
    apart: hers and the shared ones, each read by its own indexes (memory.models). Otherwise
    none: the candidates come from the whole."""
    if caller.subject is None or not shared:
        return []
    return [
        search_filtered(records_in_scope(caller=caller, index=index, shared=False), now=now, **filters),
        search_filtered(records_in_scope(caller=replace(caller, subject=None), index=index), now=now, **filters),
    ]


def search_filtered(
    records: QuerySet[MemoryRecord], *, types: list[str] | None, after: datetime | None, before: datetime | None, now: datetime
) -> QuerySet[MemoryRecord]:
    """The active records a search may find at `now` (not expired): of the asked types, made
    within the asked times."""
    active = records.filter(unexpired(now), status=MemoryRecord.Status.ACTIVE)
    return narrowed(active, types=types, after=after, before=before)


def narrowed(queryset: QuerySet, *, types: list[str] | None, after: datetime | None, before: datetime | None) -> QuerySet:
    """Records, or their vectors: of the asked types, made within the asked times."""
    if types:
        queryset = queryset.filter(type__in=types)
    if after is not None:
        queryset = queryset.filter(created_at__gt=after)
    if before is not None:
        queryset = queryset.filter(created_at__lt=before)
    return queryset


def vectors_in_scope(
    *,
    key: ApiKey,
    index: KnowledgeIndex,
    subject: str | None,
    all_subjects: bool,
    shared: bool,
    types: list[str] | None,
    after: datetime | None,
    before: datetime | None,
    model: EmbeddingModel,
    now: datetime | None = None,
) -> QuerySet[RecordEmbedding] | QuerySet[ModelEmbedding]:
    """The vectors by `model` of the records a search may find at `now` (active only: only active
    records have one; not expired), with the same filters; scoped by organisation, index and person in SQL."""
    if model.in_process:
        vectors = RecordEmbedding.objects.for_organisation(key.organisation_id).filter(index_id=index.pk)
    else:
        vectors = ModelEmbedding.objects.for_organisation(key.organisation_id).filter(index_id=index.pk, space=model.space)
    # An expired record keeps its vector until maintenance ends it (the grace period): those few,
    # found by the index of expiring records, take no candidate's place.
    expired = MemoryRecord.objects.for_organisation(key.organisation_id).filter(
        index_id=index.pk, status=MemoryRecord.Status.ACTIVE, expires_at__lte=now or timezone.now()
    )
    vectors = vectors.exclude(record_id__in=expired.values("pk"))
    if subject is not None:
        vectors = vectors.filter(Q(subject=subject) | Q(subject__isnull=True)) if shared else vectors.filter(subject=subject)
    elif not all_subjects:
        vectors = vectors.filter(subject__isnull=True)
    return narrowed(vectors, types=types, after=after, before=before)


def said_around(*, key: ApiKey, index: KnowledgeIndex, turns: int) -> dict:
    """Annotations of a record with the ids of the `turns` active records of its person and type
    said just before it (`said_before`) and just after it (`said_after`): a conversation's
    neighbours in the order its turns were said (an import's own times, else the order of the
    writes), whenever they reached Core. Each is one short walk of the person's newest-records index."""
    same = MemoryRecord.objects.for_organisation(key.organisation_id).filter(
        index_id=index.pk, subject=OuterRef("subject"), type=OuterRef("type"), status=MemoryRecord.Status.ACTIVE
    )
    return {
        "said_before": ArraySubquery(same.filter(created_at__lt=OuterRef("created_at")).order_by("-created_at").values("id")[:turns]),
        "said_after": ArraySubquery(same.filter(created_at__gt=OuterRef("created_at")).order_by("created_at").values("id")[:turns]),
    }
