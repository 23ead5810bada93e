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

from core_memory.base.telemetry.metrics import records_embedded
from core_memory.base.telemetry.tracing import span, span_set
from core_memory.llm.embedding_models import EmbeddingModel, embedding_model_for, passages_embed_by
from core_memory.llm.protocol import ProviderError
from memory.embedding.passages import passage_digest, record_passage
from memory.embedding.storage import embedding_storage_ready, index_embeds, space_graph_ensure
from memory.models import MemoryRecord, ModelEmbedding, RecordEmbedding
from stores.models import KnowledgeIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddingOutcome:
    embedded: int = 0
    unchanged: int = 0
    skipped: int = 0
    # Records whose model served elsewhere failed (down, or a bad answer): nothing was stored for
    # them, and a later run embeds them.
    failed: int = 0

    def __add__(self, other: EmbeddingOutcome) -> EmbeddingOutcome:
        return EmbeddingOutcome(*(getattr(self, name) + getattr(other, name) for name in ("embedded", "unchanged", "skipped", "failed")))


def record_vector_forget(*, index: KnowledgeIndex, record_ids: Sequence[str]) -> None:
    """The records ended, were deleted or have a new text: their vectors go, by every model, in
    the caller's transaction (nothing happens for an index that does not embed)."""
    if record_ids and index_embeds(index):
        RecordEmbedding.objects.for_organisation(index.organisation_id).filter(record_id__in=list(record_ids)).delete()
        ModelEmbedding.objects.for_organisation(index.organisation_id).filter(record_id__in=list(record_ids)).delete()


def records_embeddable(record_ids: Sequence[str]) -> QuerySet[MemoryRecord]:
    # A task names only record ids, across organisations: each record brings its own scope.
    return (
        MemoryRecord.objects.unscoped()
        .filter(
            pk__in=list(record_ids),
            status=MemoryRecord.Status.ACTIVE,
            index__embeddings=True,
            index__deleted_at__isnull=True,
        )
        .select_related("organisation", "index")
        .only(
            "id", "text", "created_at", "organisation_id", "index_id", "subject", "type", "organisation__timezone",
            "index__embedding_model", "index__embedding_model_next",
        )
    )


def index_model_ids(index: KnowledgeIndex) -> list[str]:
    """The models an index's records need vectors of: its own and, while it switches, the next."""
    return [index.embedding_model, *([index.embedding_model_next] if index.embedding_model_next else [])]


def record_embeddings_refresh(*, record_ids: Sequence[str], model_ids: Sequence[str] | None = None) -> EmbeddingOutcome:
    """Give each record its current vector by each model its index needs (`model_ids`: only
    these): embed those whose text (or the model) changed since, store them, skip the rest.
    Records no longer active, in an index that does not embed (any more), or of a model that
    cannot embed now, are skipped; a model served elsewhere that fails stores nothing for its
    records (`failed`). Safe to run twice, and concurrently with any write."""
    with span("embedding.batch", **{"core.records": len(record_ids)}):
        outcome = _embeddings_refresh(record_ids=record_ids, model_ids=model_ids)
        span_set(**{"core.records.embedded": outcome.embedded})
    records_embedded.inc(outcome.embedded)
    return outcome


def _embeddings_refresh(*, record_ids: Sequence[str], model_ids: Sequence[str] | None) -> EmbeddingOutcome:
    if not record_ids or not embedding_storage_ready():
        return EmbeddingOutcome(skipped=len(record_ids))
    records = list(records_embeddable(record_ids))
    by_model: dict[str, list[MemoryRecord]] = {}
    for record in records:
        for model_id in index_model_ids(record.index):
            if model_ids is None or model_id in model_ids:
                by_model.setdefault(model_id, []).append(record)
    outcome = EmbeddingOutcome(skipped=len(record_ids) - len(records))
    for model_id, group in by_model.items():
        model = embedding_model_for(model_id)
        outcome += _refreshed_by(model, group) if model is not None else EmbeddingOutcome(skipped=len(group))
    return outcome


def _stored_digests(model: EmbeddingModel, record_ids: list[str]) -> dict[str, str]:
    if model.in_process:
        stored = RecordEmbedding.objects.unscoped().filter(record_id__in=record_ids)
    else:
        stored = ModelEmbedding.objects.unscoped().filter(record_id__in=record_ids, space=model.space)
    return dict(stored.values_list("record_id", "text_digest"))


@dataclass(frozen=True)
class VectorsDue:
    """Of some records, those whose vector by `model` is missing or not of their current text:
    `passages` to embed (one per record of `stale`) and the digest each vector is stored with."""

    model: EmbeddingModel
    stale: list[MemoryRecord]
    passages: list[str]
    digests: dict[str, str]
    unchanged: int


def vectors_due(model: EmbeddingModel, records: list[MemoryRecord]) -> VectorsDue:
    passages = {
        record.id: record_passage(
            text=record.text, type=record.type, created_at=record.created_at, zone=record.organisation.timezone
        )
        for record in records
    }
    digests = {record_id: passage_digest(model_id=model.fingerprint, passage=passage) for record_id, passage in passages.items()}
    stored = _stored_digests(model, list(passages))
    stale = [record for record in records if stored.get(record.id) != digests[record.id]]
    return VectorsDue(
        model=model, stale=stale, passages=[passages[record.id] for record in stale], digests=digests, unchanged=len(records) - len(stale)
    )


def vectors_embed(due: VectorsDue):
    """The vectors of `due`'s passages, outside any transaction; raises ProviderError when a
    model served elsewhere fails. Its space's graph is made first (memory.embedding.storage)."""
    vectors = passages_embed_by(due.model, due.passages).vectors
    if not due.model.in_process:
        space_graph_ensure(space=due.model.space, dimensions=due.model.dimensions)
    return vectors


def _refreshed_by(model: EmbeddingModel, records: list[MemoryRecord]) -> EmbeddingOutcome:
    due = vectors_due(model, records)
    if not due.stale:
        return EmbeddingOutcome(unchanged=due.unchanged)
    try:
        vectors = vectors_embed(due)
    except ProviderError as error:
        # The write stands; its vector is made by a later run (the task's retry, embed_records).
        logger.warning("embedding.model.failed", extra={"model": model.id, "code": error.code, "records": len(due.stale)})
        return EmbeddingOutcome(unchanged=due.unchanged, failed=len(due.stale))
    with transaction.atomic(durable=True):
        written = vectors_store(due, vectors)
    return EmbeddingOutcome(embedded=written, unchanged=due.unchanged, skipped=len(due.stale) - written)


def vectors_store(due: VectorsDue, vectors) -> int:
    """Inside the caller's transaction: `due`'s vectors, stored for the records still active with
    the text that was embedded (locked, so an end or an edit waits or is waited for); answers
    how many were stored."""
    model, records, digests = due.model, due.stale, due.digests
    texts = {record.id: record.text for record in records}
    current = dict(
        MemoryRecord.objects.unscoped()
        .select_for_update(no_key=True)
        .filter(pk__in=list(texts), status=MemoryRecord.Status.ACTIVE)
        .values_list("id", "text")
    )
    now = timezone.now()
    kept = [
        (record, vector) for record, vector in zip(records, vectors, strict=True) if current.get(record.id) == texts[record.id]
    ]
    if model.in_process:
        rows = [RecordEmbedding(**_row(record, now=now, digest=digests[record.id]), model=model.fingerprint, vector=vector) for record, vector in kept]
        RecordEmbedding.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["record"], update_fields=["model", "text_digest", "vector", "embedded_at"]
        )
    else:
        rows = [ModelEmbedding(**_row(record, now=now, digest=digests[record.id]), space=model.space, vector=vector) for record, vector in kept]
        ModelEmbedding.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["record", "space"], update_fields=["text_digest", "vector", "embedded_at"]
        )
    return len(rows)


def _row(record: MemoryRecord, *, now, digest: str) -> dict:
    return {
        "record_id": record.id, "organisation_id": record.organisation_id, "index_id": record.index_id, "subject": record.subject,
        "type": record.type, "created_at": record.created_at, "text_digest": digest, "embedded_at": now,
    }
