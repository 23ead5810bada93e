"""The search: a question's best records among those the caller's person may see.

The pipeline, in the order a search runs it: the scope (memory.search.scope: her records and
the shared ones, as parts), the full-text candidates (memory.search.candidates, the shared
part's bounded by memory.search.shared), the candidates by meaning (memory.search.vectors),
read together with their decayed confidence (memory.search.decay), then fused into one ranking
(memory.search.ranking, with memory.search.rerank's second look)."""
from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from django.db.models import FloatField, Value
from django.utils import timezone

from core_memory.keys.callers import Caller
from core_memory.keys.models import ApiKey
from core_memory.llm.embeddings import query_embed_begin
from memory.embedding.storage import index_embeds
from memory.models import MemoryRecord
from memory.search.candidates import bounded_exact, shared_bounded, shared_version, text_candidates
from memory.search.decay import records_with_decay
from memory.search.ranking import Candidate, candidates_rank
from memory.search.scope import SearchFilters, records_in_scope, search_filtered, search_parts, vectors_in_scope
from memory.search.text import query_terms
from memory.search.vectors import vector_candidates
from memory.search.when import time_windows
from stores.models import KnowledgeIndex

# Candidates taken from each signal (full text, vectors) before fusing; at least `limit`.
SEARCH_DEPTH = 50


def record_search(
    *,
    caller: Caller,
    index: KnowledgeIndex,
    query: str,
    filters: SearchFilters = SearchFilters(),
    now: datetime | None = None,
    exhaustive: bool = False,
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
    """
    arguments = dict(caller=caller, index=index, query=query, filters=filters, now=now or timezone.now(), exhaustive=exhaustive)
    found = _search(**arguments, bound=not exhaustive)
    if found is None:
        # Two words of the question stood in one place of a shared record: ranked whole again.
        found = _search(**arguments, bound=False)
    return found


def _search(
    *, caller: Caller, index: KnowledgeIndex, query: str, filters: SearchFilters, now: datetime, exhaustive: bool, bound: bool
) -> list[tuple[MemoryRecord, float]] | None:
    """record_search; None when the shared set's bounded candidates turn out not to be the best."""
    key, subject, limit, all_subjects, shared = caller.key, caller.subject, filters.limit, filters.all_subjects, filters.shared
    scope = records_in_scope(caller=caller, index=index, all_subjects=all_subjects, shared=shared)
    narrowing = {"types": filters.types, "after": filters.after, "before": filters.before}
    records = search_filtered(scope, now=now, **narrowing)
    parts = search_parts(caller=caller, index=index, shared=shared, filters=narrowing, now=now) or [records]
    embeds = index_embeds(index)
    if embeds:
        # The engine embeds the question on its own thread while the full-text candidates are read.
        query_embed_begin(query)
    terms = query_terms(query)
    if not terms and not embeds:
        return []
    depth = max(SEARCH_DEPTH, limit)
    bounded = shared_bounded(key=key, index=index, terms=terms, filters=narrowing, depth=depth) if bound and len(parts) > 1 else None
    text = text_candidates(parts, terms=terms, depth=depth, embeds=embeds, key=key, index=index, bounded=bounded)
    if text is None:
        return None
    pools, text_score = text
    similarity = Value(None, output_field=FloatField())
    if embeds:
        vectors = vectors_in_scope(
            key=key, index=index, subject=subject, all_subjects=all_subjects, shared=shared, now=now, **narrowing
        )
        vector_pools, similarity = vector_candidates(
            vectors, query=query, subject=subject, shared=shared, depth=depth, exhaustive=exhaustive
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
    if bounded is not None and not embeds:
        found = list(candidates.annotate(shared_version=shared_version(key=key, index=index)))
        if not bounded_exact(bounded, found):
            return None
    else:
        found = list(candidates)
    return _search_ranked(found, query=query, key=key, index=index, now=now, limit=limit)


def _search_ranked(
    found: list[MemoryRecord], *, query: str, key: ApiKey, index: KnowledgeIndex, now: datetime, limit: int
) -> list[tuple[MemoryRecord, float]]:
    """The candidates read with both scores, fused into one ranking (memory.search.ranking)."""
    by_id = {record.id: record for record in found}
    ranking = candidates_rank(
        [
            Candidate(
                record_id=record.id,
                text_score=record.text_score,
                similarity=record.similarity,
                created_at=record.created_at,
                effective_confidence=record.effective_confidence,
                retrieval_count=record.retrieval_count,
                text=record.text,
                type=record.type,
                subject=record.subject,
            )
            for record in found
        ],
        query=query,
        conversation=index.conversation,
        windows=time_windows(query, now=timezone.localtime(now, ZoneInfo(key.organisation.timezone))),
        now=now,
        limit=limit,
    )
    return [(by_id[record_id], score) for record_id, score in ranking]
