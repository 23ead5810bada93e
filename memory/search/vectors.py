"""A search's candidates by meaning: the records nearest the question's vector, hers scanned
exactly and the shared set's (or every person's) through its HNSW graph."""
from __future__ import annotations

from django.db.models import FloatField, OuterRef, QuerySet, Subquery
from pgvector import HalfVector
from pgvector.django import MaxInnerProduct

from core_memory.llm.embeddings import query_embed
from memory.models import RecordEmbedding


def vector_candidates(
    vectors: QuerySet[RecordEmbedding], *, query: str, subject: str | None, shared: bool, depth: int, exhaustive: bool
) -> tuple[list[QuerySet], Subquery]:
    """The nearest records' ids by meaning, as queries (hers and the shared ones apart), and the
    annotation that gives a record its similarity to the question. Embeds the question."""
    vector = HalfVector(query_embed(query))
    pools: list[QuerySet] = []
    distance = MaxInnerProduct("vector", vector)
    if subject is not None:
        # Her own vectors, scanned exactly: `+ 0` keeps the ordering off the HNSW indexes,
        # which the planner picks from ~100k records on and which, filtered to one person
        # afterwards, found a few percent of her nearest (bench/RESULTS.md, vector scan).
        pools.append(vectors.filter(subject=subject).order_by(distance + 0).values_list("record_id", flat=True)[:depth])
    others = vectors if subject is None else vectors.filter(subject__isnull=True) if shared else None
    if others is not None:
        # The shared set (its own HNSW graph: memory.models), or every person's when none is
        # named (the whole graph, walked on past its filters: settings); exact where the
        # planner deems that cheaper, or asked to be.
        pools.append(others.order_by(distance + 0 if exhaustive else distance).values_list("record_id", flat=True)[:depth])
    similarity = Subquery(
        vectors.filter(record_id=OuterRef("id")).annotate(similarity=-MaxInnerProduct("vector", vector)).values("similarity")[:1],
        output_field=FloatField(),
    )
    return pools, similarity
