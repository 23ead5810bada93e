"""An index switching its embedding model: its records embedded by the next model in the
background, while its searches keep comparing the vectors of the model it has; once every
active record has the next model's vector, the index takes that model in one transaction and
the old vectors go. A search therefore never finds less during a switch.

Records written meanwhile are embedded by both models (memory.embedding.services). A run that
cannot finish (the next model's server is down, or answers nonsense) leaves the index on its
model, as it was; the worker's retry and the sweep every few minutes (`embedding_switches_resume`)
carry on where it stopped, since a record already embedded by the next model is not embedded again.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Exists, OuterRef

from audit.services import audit_event_record
from core_memory.llm.embedding_models import EmbeddingModel, embedding_model_for
from memory.embedding.selectors import embeddable_record_ids, embedding_indexes
from memory.embedding.services import record_embeddings_refresh
from memory.models import MemoryRecord, ModelEmbedding, RecordEmbedding
from stores.models import KnowledgeIndex

logger = logging.getLogger(__name__)

ACTOR = "core:embeddings"
BATCH = 64


@dataclass(frozen=True)
class SwitchProgress:
    model: str
    embedded: int
    records: int


def _vectors_of(model: EmbeddingModel, index: KnowledgeIndex):
    if model.in_process:
        return RecordEmbedding.objects.for_organisation(index.organisation_id).filter(index_id=index.pk)
    return ModelEmbedding.objects.for_organisation(index.organisation_id).filter(index_id=index.pk, space=model.space)


def _active_records(index: KnowledgeIndex):
    return MemoryRecord.objects.for_organisation(index.organisation_id).filter(index_id=index.pk, status=MemoryRecord.Status.ACTIVE)


def index_switch_progress(*, index: KnowledgeIndex) -> SwitchProgress | None:
    """How far the index's switch to its next model is (None: it is not switching). Two counts."""
    if not index.embedding_model_next:
        return None
    model = embedding_model_for(index.embedding_model_next)
    records = _active_records(index).count()
    embedded = _vectors_of(model, index).filter(record__status=MemoryRecord.Status.ACTIVE).count() if model else 0
    return SwitchProgress(model=index.embedding_model_next, embedded=embedded, records=records)


def index_switch_run(*, index_id: str) -> bool:
    """Embeds the index's records by its next model and, when every active record has that
    vector, switches it (`index_switch_complete`). True when the index is on its next model now
    (or is not switching); False when records are left (the model failed for some)."""
    index = KnowledgeIndex.objects.unscoped().live().filter(pk=index_id).first()
    if index is None or not index.embedding_model_next:
        return True
    model_id = index.embedding_model_next
    with connection.cursor() as cursor:
        # One worker at a time per index (the sweep may hand it out while a run goes on).
        cursor.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [f"embedding-switch:{index_id}"])
        if not cursor.fetchone()[0]:
            return False
    try:
        for record_ids in embeddable_record_ids(indexes=embedding_indexes(index_ids=[index_id]), batch=BATCH):
            record_embeddings_refresh(record_ids=record_ids, model_ids=[model_id])
        return index_switch_complete(index_id=index_id, model_id=model_id)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [f"embedding-switch:{index_id}"])


@transaction.atomic(durable=True)
def index_switch_complete(*, index_id: str, model_id: str) -> bool:
    """The index takes `model_id` if it is still switching to it and every active record has its
    vector; its former model's vectors are deleted. Audited as `index.embedding_model_switched`."""
    index = KnowledgeIndex.objects.unscoped().live().select_for_update().filter(pk=index_id).first()
    if index is None or index.embedding_model_next != model_id:
        return True
    model = embedding_model_for(model_id)
    if model is None:
        return False
    # Under the index's lock a write may still add a record; it is embedded by both models.
    missing = _active_records(index).filter(~Exists(_vectors_of(model, index).filter(record_id=OuterRef("pk")))).count()
    if missing:
        logger.warning("embedding.switch.incomplete", extra={"index": index_id, "model": model_id, "missing": missing})
        return False
    former = embedding_model_for(index.embedding_model)
    previous = index.embedding_model
    index.embedding_model, index.embedding_model_next = model_id, None
    index.save(update_fields=["embedding_model", "embedding_model_next"])
    if former is not None and former.space != model.space:
        _vectors_of(former, index).delete()
    audit_event_record(
        organisation_id=index.organisation_id, actor=ACTOR, action="index.embedding_model_switched", target=index.pk,
        details={"from": previous, "to": model_id},
    )
    logger.info("embedding.switch.done", extra={"index": index_id, "model": model_id})
    return True


def embedding_switches_pending() -> list[str]:
    """The live indexes switching their embedding model, of every organisation."""
    return list(KnowledgeIndex.objects.unscoped().live().filter(embedding_model_next__isnull=False).values_list("id", flat=True))
