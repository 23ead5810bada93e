"""The search: a question's best records among those the caller's person may see.

The pipeline, in the order a search runs it: the scope (memory.search.scope: her records and
the shared ones, as parts), the full-text candidates (memory.search.candidates, the shared
part's bounded by memory.search.shared), the candidates by meaning (memory.search.vectors),
read together with their decayed confidence (memory.search.decay), then fused into one ranking
(memory.search.ranking, with memory.search.rerank's second look)."""
from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from django.db.models import FloatField, Value
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.base.telemetry.metrics import search_seconds
from core_memory.base.telemetry.tracing import span, span_set
from core_memory.keys.models import ApiKey
from memory.embedding.storage import index_embedding_model, index_embeds
from memory.models import MemoryRecord
from memory.search.candidates import bounded_exact, shared_bounded, shared_version, text_candidates
from memory.search.decay import key_half_lives, records_with_decay
from memory.search.hot import FIELDS, person_text_rows, rows_ranked
from memory.search.hybrid import person_hybrid_rows, person_text_found
from memory.search.ranking import NEIGHBOUR_TURNS, Candidate, candidates_rank
from memory.search.scope import (
    SearchFilters,
    index_scoped,
    records_in_scope,
    said_around,
    search_filtered,
    search_parts,
    vectors_in_scope,
)
from memory.search.text import query_terms
from memory.search.reranking import ranking_reranked
from memory.search.question import SearchTrace, question_vector, question_vector_begin, search_deadline, similarity_on_scale
from memory.search.vectors import vector_candidates
from memory.search.when import time_windows
from stores.models import KnowledgeIndex

# Candidates taken from each signal (full text, vectors) before fusing; at least `limit`.
SEARCH_DEPTH = 50
# A person's full-text search without decay reads its candidates by memory.search.hot's
# statement, written once, rather than the ORM's built anew (the same statement; tests compare);
# her hybrid search by the in-process model's vectors by memory.search.hybrid's two.
HOT_STATEMENT = True
# Bounding the shared set's matches costs the written statement next to nothing: it bounds them
# from this many on (the ORM's statement from memory.search.shared.RANKED_WHOLE on).
HOT_RANKED_WHOLE = SEARCH_DEPTH


def record_search(
    *,
    caller: Caller,
    index: KnowledgeIndex,
    query: str,
    filters: SearchFilters = SearchFilters(),
    now: datetime | None = None,
    exhaustive: bool = False,
    trace: SearchTrace | None = None,
) -> list[tuple[MemoryRecord, float]]:
    """Active records most relevant to `query`, best first, each with its score 0..1, among those
    the caller's person may see (`filters` narrows them).

    Candidates are the best `SEARCH_DEPTH` by full text and, when the index embeds
    (memory.embedding.storage.index_embeds), the `SEARCH_DEPTH` nearest by meaning, of her own
    records and of the shared ones apart (the best of each part: at least the best of the
    whole), all in the request's scope; the shared set's full-text candidates are worked out
    from its words' matches kept by the process (memory.search.shared) and ranked among those
    few. memory.search.ranking fuses them. A fixed number of queries whatever the store's size
    or `limit`: the query's lexemes, then one query that reads the candidates with both their
    scores — when the index embeds, the full-text candidates first, while the question is being
    embedded on the engine's thread. One query embedding. A read only: memory.retrieval counts the
    retrieval.

    `exhaustive` ranks every shared record that matches and compares every vector of the scope
    (no HNSW graph): the answer the faster candidates must give, which the speed bench compares
    them with.

    An index whose embedding model is served elsewhere asks it for the question's vector (the
    key's PII redaction applied) within the search's time for models; when it fails the search
    runs on full text alone. `trace`, when given, is told which model's vectors were compared, or
    why none were.
    """
    trace = trace if trace is not None else SearchTrace()
    started = time.perf_counter()
    arguments = dict(
        caller=caller, index=index, query=query, filters=filters, now=now or timezone.now(), exhaustive=exhaustive, trace=trace,
    )
    mode = "hybrid" if index_embeds(index) else "text"
    with span("search", **{"core.organisation": index.organisation_id, "core.index": index.id, "core.search.mode": mode}):
        found = _search(**arguments, bound=not exhaustive)
        if found is None:
            # Two words of the question stood in one place of a shared record: ranked whole again.
            found = _search(**arguments, bound=False)
        span_set(**{"core.search.results": len(found)})
    search_seconds.labels(mode=mode).observe(time.perf_counter() - started)
    return found


def _search(
    *,
    caller: Caller,
    index: KnowledgeIndex,
    query: str,
    filters: SearchFilters,
    now: datetime,
    exhaustive: bool,
    bound: bool,
    trace: SearchTrace,
) -> list[tuple[MemoryRecord, float]] | None:
    """record_search; None when the shared set's bounded candidates turn out not to be the best."""
    key, subject, limit, all_subjects, shared = caller.key, caller.subject, filters.limit, filters.all_subjects, filters.shared
    index_scoped(caller=caller, index=index)
    narrowing = {"types": filters.types, "after": filters.after, "before": filters.before}
    model = index_embedding_model(index) if index_embeds(index) else None
    embeds = model is not None
    deadline = search_deadline()
    if embeds:
        # The model embeds the question on a thread of its own while the full-text candidates are read.
        question = question_vector_begin(caller=caller, model=model, query=query)
    with span("search.lexemes"):
        terms = query_terms(query)
    if not terms and not embeds:
        return []
    depth = max(SEARCH_DEPTH, limit)
    two_parts = subject is not None and shared  # hers and the shared ones apart (search_parts)
    written = HOT_STATEMENT and subject is not None and not index.conversation and not key_half_lives(key=key)
    # Full text: hers and the shared ones, or hers alone (`shared=False`: the block's past sessions and lessons).
    hot, hybrid = written and not embeds, written and two_parts and embeds and model.in_process
    bounded = (
        shared_bounded(
            key=key, index=index, terms=terms, filters=narrowing, depth=depth, ranked_whole=HOT_RANKED_WHOLE if hot or hybrid else None
        )
        if bound and two_parts else None
    )
    if hybrid:
        rows = _hybrid_rows(
            caller=caller, index=index, model=model, question=question, terms=terms, depth=depth, now=now, bounded=bounded,
            exhaustive=exhaustive, deadline=deadline, trace=trace, narrowing=narrowing,
        )
        if rows is None:
            return None
        return _ranked(caller=caller, index=index, query=query, limit=limit, now=now, deadline=deadline, trace=trace, **rows_ranked(rows))
    if hot:
        with span("search.candidates_read"):
            rows = person_text_rows(
                columns=FIELDS, caller=caller, index=index, terms=terms, depth=depth, now=now, bounded=bounded, shared=shared,
                **narrowing,
            )
        if rows is None:
            return None
        return _ranked(caller=caller, index=index, query=query, limit=limit, now=now, deadline=deadline, trace=trace, **rows_ranked(rows))
    records = search_filtered(records_in_scope(caller=caller, index=index, all_subjects=all_subjects, shared=shared), now=now, **narrowing)
    parts = search_parts(caller=caller, index=index, shared=shared, filters=narrowing, now=now) or [records]
    with span("search.text_candidates"):
        text = text_candidates(parts, terms=terms, depth=depth, embeds=embeds, key=key, index=index, bounded=bounded)
    if text is None:
        return None
    pools, text_score = text
    similarity = Value(None, output_field=FloatField())
    with span("search.vectors"):
        query_vector = question_vector(model=model, question=question, deadline=deadline, trace=trace) if embeds else None
    if query_vector is not None:
        vectors = vectors_in_scope(
            key=key, index=index, subject=subject, all_subjects=all_subjects, shared=shared, model=model, now=now, **narrowing
        )
        vector_pools, similarity = vector_candidates(
            vectors, query_vector=query_vector, space_dimensions=None if model.in_process else model.dimensions,
            subject=subject, shared=shared, depth=depth, exhaustive=exhaustive,
        )
        pools += vector_pools
    if not pools:
        return []
    first, *others = pools
    candidates = (
        records_with_decay(records.filter(pk__in=first.union(*others, all=True) if others else first), key=key, now=now)
        .defer("search_vector", "normalised_text")
        .annotate(text_score=text_score, similarity=similarity)
    )
    if index.conversation:
        candidates = candidates.annotate(**said_around(key=key, index=index, turns=NEIGHBOUR_TURNS))
    with span("search.candidates_read"):
        found = list(candidates.annotate(shared_version=shared_version(key=key, index=index)) if bounded is not None and not embeds else candidates)
    if bounded is not None and not embeds and not bounded_exact(bounded, found):
        return None
    if query_vector is not None and not model.in_process:
        similarity_on_scale(found, model=model)
    candidates = [_candidate(record, conversation=index.conversation) for record in found]
    hit = {record.id: record for record in found}.__getitem__
    return _ranked(caller=caller, index=index, query=query, limit=limit, now=now, deadline=deadline, trace=trace, candidates=candidates, hit=hit)


def _hybrid_rows(
    *, caller: Caller, index: KnowledgeIndex, model, question, terms: list[str], depth: int, now: datetime, bounded, exhaustive: bool,
    deadline: float, trace: SearchTrace, narrowing: dict,
) -> list[tuple] | None:
    """A person's hybrid search's candidates by memory.search.hybrid's statements: her full-text
    ones first, while the question is being embedded, then all of them with both scores. None when
    the shared set's bounded candidates turn out not to be the best."""
    with span("search.text_candidates"):
        found = person_text_found(caller=caller, index=index, terms=terms, depth=depth, now=now, bounded=bounded, **narrowing)
    if found is None:
        return None
    with span("search.vectors"):
        query_vector = question_vector(model=model, question=question, deadline=deadline, trace=trace)
    if query_vector is None and not found:
        return []
    with span("search.candidates_read"):
        return person_hybrid_rows(
            caller=caller, index=index, terms=terms, found=found, query_vector=query_vector, depth=depth, now=now, exhaustive=exhaustive,
            **narrowing,
        )


def _ranked(
    *, caller: Caller, index: KnowledgeIndex, query: str, limit: int, now: datetime, deadline, trace: SearchTrace,
    candidates: list[Candidate], hit: Callable[[str], MemoryRecord],
) -> list[tuple[MemoryRecord, float]]:
    """The candidates fused into one ranking (memory.search.ranking), the best of it reranked by
    the index's rerank model where it names one; `hit` makes a record of a candidate's id."""
    with span("search.fusion"):
        ranked = _search_ranked(candidates, hit, query=query, key=caller.key, index=index, now=now, limit=max(limit, _rerank_depth(index)))
    if index.rerank_model:
        with span("search.rerank", **{"core.rerank_model": index.rerank_model}):
            ranked = ranking_reranked(ranked, caller=caller, index=index, query=query, deadline=deadline, trace=trace)
    return ranked[:limit]


def _rerank_depth(index: KnowledgeIndex) -> int:
    return index.rerank_depth if index.rerank_model else 0


def _candidate(record: MemoryRecord, *, conversation: bool) -> Candidate:
    return Candidate(
        record_id=record.id,
        text_score=record.text_score,
        similarity=record.similarity,
        created_at=record.created_at,
        effective_confidence=record.effective_confidence,
        retrieval_count=record.retrieval_count,
        text=record.text,
        type=record.type,
        subject=record.subject,
        said_near=frozenset(record.said_before + record.said_after) if conversation else None,
    )


def _search_ranked(
    candidates: list[Candidate], hit: Callable[[str], MemoryRecord], *, query: str, key: ApiKey, index: KnowledgeIndex, now: datetime,
    limit: int,
) -> list[tuple[MemoryRecord, float]]:
    """The candidates read with both scores, fused into one ranking (memory.search.ranking)."""
    ranking = candidates_rank(
        candidates,
        query=query,
        conversation=index.conversation,
        windows=time_windows(query, now=timezone.localtime(now, ZoneInfo(key.organisation.timezone))),
        now=now,
        limit=limit,
    )
    return [(hit(record_id), score) for record_id, score in ranking]
