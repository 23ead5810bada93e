"""Writing vectors: after a record's commit, by a Celery task, and by `embed_records`.

The write of a record never waits for its vector: memory.services enqueues the task when
the write's transaction commits, and search finds the record by full text meanwhile.
Embedding happens outside any transaction (it takes tens of milliseconds a record); the
vectors are then stored only for records still active with the text that was embedded,
under a row lock that a concurrent end, delete or edit waits for (or that waits for it), so
no vector outlives its text.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from core_memory.llm.embeddings import embedding_model_id, embeddings_enabled, passages_embed
from memory.embedding.passages import passage_digest, record_passage
from memory.embedding.storage import embedding_storage_ready, index_embeds
from memory.models import MemoryRecord, RecordEmbedding
from stores.models import KnowledgeIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddingOutcome:
    embedded: int = 0
    unchanged: int = 0
    skipped: int = 0


def record_vector_forget(*, index: KnowledgeIndex, record_ids: Sequence[str]) -> None:
    """The records ended, were deleted or have a new text: their vectors go, in the caller's
    transaction (nothing happens for an index that does not embed)."""
    if record_ids and index_embeds(index):
        RecordEmbedding.objects.for_organisation(index.organisation_id).filter(record_id__in=list(record_ids)).delete()


def _embeddable(record_ids: Sequence[str]) -> QuerySet[MemoryRecord]:
    # A task names only record ids, across organisations: each record brings its own scope.
    return (
        MemoryRecord.objects.unscoped()
        .filter(
            pk__in=list(record_ids),
            status=MemoryRecord.Status.ACTIVE,
            index__embeddings=True,
            index__deleted_at__isnull=True,
        )
        .select_related("organisation")
        .only("id", "text", "created_at", "organisation_id", "index_id", "subject", "type", "organisation__timezone")
    )


def record_embeddings_refresh(*, record_ids: Sequence[str]) -> EmbeddingOutcome:
    """Give each record its current vector: embed those whose text (or the model) changed
    since, store them, skip the rest. Records no longer active, or in an index that does not
    embed (any more), are skipped. Safe to run twice, and concurrently with any write."""
    if not record_ids or not embeddings_enabled() or not embedding_storage_ready():
        return EmbeddingOutcome(skipped=len(record_ids))
    model_id = embedding_model_id()
    records = list(_embeddable(record_ids))
    passages = {
        record.id: record_passage(
            text=record.text, type=record.type, created_at=record.created_at, zone=record.organisation.timezone
        )
        for record in records
    }
    digests = {record_id: passage_digest(model_id=model_id, passage=passage) for record_id, passage in passages.items()}
    stored = dict(
        RecordEmbedding.objects.unscoped().filter(record_id__in=list(passages)).values_list("record_id", "text_digest")
    )
    stale = [record for record in records if stored.get(record.id) != digests[record.id]]
    unchanged = len(records) - len(stale)
    if not stale:
        return EmbeddingOutcome(unchanged=unchanged, skipped=len(record_ids) - len(records))
    vectors = passages_embed([passages[record.id] for record in stale])
    written = _vectors_store(records=stale, vectors=vectors, digests=digests, model_id=model_id)
    return EmbeddingOutcome(embedded=written, unchanged=unchanged, skipped=len(record_ids) - len(records) + len(stale) - written)


@transaction.atomic(durable=True)
def _vectors_store(*, records: list[MemoryRecord], vectors, digests: dict[str, str], model_id: str) -> int:
    texts = {record.id: record.text for record in records}
    current = dict(
        MemoryRecord.objects.unscoped()
        .select_for_update(no_key=True)
        .filter(pk__in=list(texts), status=MemoryRecord.Status.ACTIVE)
        .values_list("id", "text")
    )
    now = timezone.now()
    rows = [
        RecordEmbedding(
            record_id=record.id,
            organisation_id=record.organisation_id,
            index_id=record.index_id,
            subject=record.subject,
            type=record.type,
            created_at=record.created_at,
            model=model_id,
            text_digest=digests[record.id],
            vector=vector,
            embedded_at=now,
        )
        for record, vector in zip(records, vectors, strict=True)
        if current.get(record.id) == texts[record.id]
    ]
    RecordEmbedding.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["record"],
        update_fields=["model", "text_digest", "vector", "embedded_at"],
    )
    return len(rows)
