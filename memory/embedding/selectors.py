"""Reading by vectors outside search: which records `embed_records` works through, and a
lesson's near duplicate."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

from django.db.models import QuerySet
from django.utils import timezone
from pgvector import HalfVector
from pgvector.django import MaxInnerProduct

import logging

from core_memory.llm.embedding_models import EmbeddingModel, passages_embed_by
from core_memory.llm.protocol import ProviderError
from memory.embedding.passages import record_passage
from memory.embedding.storage import index_embedding_model, index_embeds
from memory.models import MemoryRecord, ModelEmbedding, RecordEmbedding
from memory.search.ranking import SIMILARITY_CEILING, SIMILARITY_FLOOR

logger = logging.getLogger(__name__)
from stores.models import KnowledgeIndex

LESSON = "lesson"
LESSON_NEAR_DUPLICATE_SIMILARITY = 0.96


def embedding_indexes(*, index_ids: Sequence[str] | None = None) -> QuerySet[KnowledgeIndex]:
    """Live indexes with `embeddings: true` (of every organisation: an operator's backfill)."""
    indexes = KnowledgeIndex.objects.unscoped().live().filter(embeddings=True)
    return indexes.filter(id__in=list(index_ids)) if index_ids is not None else indexes


def embeddable_record_ids(*, indexes: QuerySet[KnowledgeIndex], batch: int) -> Iterator[list[str]]:
    """The active records of `indexes`, id-ordered, `batch` ids at a time (keyset pages: a
    record written meanwhile is either in a later page or embedded by its own task)."""
    records = MemoryRecord.objects.unscoped().filter(index__in=indexes, status=MemoryRecord.Status.ACTIVE).order_by("id")
    last = ""
    while True:
        page = list(records.filter(id__gt=last).values_list("id", flat=True)[:batch])
        if not page:
            return
        yield page
        last = page[-1]


def model_vectors(*, index: KnowledgeIndex, model: EmbeddingModel) -> QuerySet:
    """The index's vectors by `model`: the in-process model's table, or its space in the table of
    models served elsewhere."""
    if model.in_process:
        return RecordEmbedding.objects.for_organisation(index.organisation_id).filter(index_id=index.pk)
    return ModelEmbedding.objects.for_organisation(index.organisation_id).filter(index_id=index.pk, space=model.space)


def cosine_for_model(model: EmbeddingModel, cosine: float) -> float:
    """A cosine threshold measured on the in-process model's vectors, for `model`'s: moved from
    the in-process model's band (unrelated .. near the same, memory.search.ranking) onto the
    model's configured band; as it is where the model has none (or is the in-process one)."""
    band = None if model.in_process else model.similarity_band
    if band is None:
        return cosine
    floor, ceiling = band
    return floor + (cosine - SIMILARITY_FLOOR) / (SIMILARITY_CEILING - SIMILARITY_FLOOR) * (ceiling - floor)


def lesson_near_duplicate(*, index: KnowledgeIndex, subject: str, text: str) -> MemoryRecord | None:
    """Her active lesson in nearly the same words as `text`, or None.

    Only when the index embeds (memory.embedding.storage.index_embeds) and that lesson has its
    vector: `text` is embedded by the index's model as a lesson is (no date) and compared with her
    lessons' vectors by that model in the index; the nearest counts when its cosine similarity is
    at least `LESSON_NEAR_DUPLICATE_SIMILARITY` (for a model served elsewhere, moved onto its
    band: `cosine_for_model`). Called by background work only (extraction, maintenance), so a
    call to a model served elsewhere delays no write; one that fails finds no near duplicate.
    One embedding and two queries. A writer that gets a lesson back writes that lesson's own
    text, which the write then confirms (same normalised text).

    The threshold, measured on 21 hand-made Dutch and English pairs: rewordings of one lesson
    score 0.95–0.99 ("Vraag eerst naar het klantnummer." / "Vraag altijd eerst om het
    klantnummer." 0.98), different lessons on one subject 0.85–0.95 ("Check the invoice number
    …" / "Check the delivery address …" 0.94; "Vraag eerst naar het klantnummer." / "Vraag eerst
    naar de geboortedatum." 0.954). At 0.96, 9 of 10 rewordings are found and 2 of 11 other
    lessons taken for one: both differ from it in a single deciding word ("… invoice number …" /
    "… invoice amount …" 0.99), which an embedding cannot tell apart; their words are nearly the
    same, which is the measure a lesson "in nearly the same words" asks for.
    """
    if not index_embeds(index):
        return None
    model = index_embedding_model(index)
    try:
        vector = passages_embed_by(model, [record_passage(text=text, type=LESSON, created_at=timezone.now(), zone="UTC")]).vectors[0]
    except ProviderError as error:
        # A model served elsewhere that is down: the lesson is written as new.
        logger.warning("embedding.lesson_near_duplicate.failed", extra={"model": model.id, "code": error.code})
        return None
    nearest = (
        model_vectors(index=index, model=model)
        .filter(subject=subject, type=LESSON)
        .annotate(similarity=-MaxInnerProduct("vector", HalfVector(vector)))
        .order_by("-similarity")
        .values_list("record_id", "similarity")
        .first()
    )
    if nearest is None or nearest[1] < cosine_for_model(model, LESSON_NEAR_DUPLICATE_SIMILARITY):
        return None
    return (
        MemoryRecord.objects.for_organisation(index.organisation_id)
        .filter(pk=nearest[0], index_id=index.pk, subject=subject, type=LESSON, status=MemoryRecord.Status.ACTIVE)
        .first()
    )
