"""A search's candidates by meaning: the records nearest the question's vector, hers scanned
exactly and the shared set's (or every person's) through its HNSW graph.

The vectors are one embedding model's: the in-process model's table, or one space of the table
of models served elsewhere, compared as vectors of that space's dimension, the cast its HNSW
graph is built over (memory.embedding.storage.space_graph_ensure)."""
from __future__ import annotations

import numpy as np
from django.db.models import F, FloatField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Cast
from pgvector import HalfVector
from pgvector.django import HalfVectorField, MaxInnerProduct

from memory.models import RecordEmbedding


def vector_candidates(
    vectors: QuerySet[RecordEmbedding],
    *,
    query_vector: np.ndarray,
    space_dimensions: int | None,
    subject: str | None,
    shared: bool,
    depth: int,
    exhaustive: bool,
) -> tuple[list[QuerySet], Subquery]:
    """The nearest records' ids by meaning, as queries (hers and the shared ones apart), and the
    annotation that gives a record its similarity to the question. `space_dimensions`: the
    dimension of a model served elsewhere's space (None: the in-process model's table)."""
    vector = HalfVector(query_vector)
    pools: list[QuerySet] = []
    column = F("vector") if space_dimensions is None else Cast("vector", HalfVectorField(dimensions=space_dimensions))
    distance = MaxInnerProduct(column, vector)
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
        vectors.filter(record_id=OuterRef("id")).annotate(similarity=-MaxInnerProduct(column, vector)).values("similarity")[:1],
        output_field=FloatField(),
    )
    return pools, similarity
