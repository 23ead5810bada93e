"""The sections ranked by closeness to the turn's topic: the topic's search among the section's
records, and the section's records in that order (the hits first, then the rest in the section's
fallback order)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Case, IntegerField, QuerySet, Value, When

from core_memory.base.callers import Caller
from memory.injection.pages import Budget, pages
from memory.injection.settings import BlockSettings
from memory.models import MemoryRecord
from memory.search import SearchFilters, record_search
from memory.search.question import SearchTrace
from stores.models import KnowledgeIndex


def topic_hits(
    *,
    caller: Caller,
    index: KnowledgeIndex,
    topic: str,
    types: list[str] | None,
    limit: int,
    now: datetime,
    shared: bool = True,
    trace: SearchTrace | None = None,
) -> tuple[dict[str, float], list[MemoryRecord]]:
    """Record id -> closeness to the topic, 0..1 relative to the best hit (the records engineer's search),
    among the records the section shows: hers and the shared ones, or hers only (`shared=False`);
    and the hits' records as the search read them."""
    if not topic.strip():
        return {}, []
    found = record_search(
        caller=caller, index=index, query=topic, filters=SearchFilters(types=types, limit=limit, shared=shared), now=now, trace=trace
    )
    best = max((hit_score for _, hit_score in found), default=0.0) or 1.0
    return {record.id: hit_score / best for record, hit_score in found}, [record for record, _ in found]


@dataclass(frozen=True)
class TopicRead:
    """What a section ranked by the topic has read already: the hits' records, when the search
    read them under the section's own conditions (`hits_are_rows`), and its first rows in
    fallback order (enough for the pool whatever the number of hits)."""

    hit_records: list[MemoryRecord]
    fallback_first: list[MemoryRecord]


def hits_are_rows(settings: BlockSettings) -> bool:
    """Whether a search of her records of a section's type reads exactly the rows the section may
    show: it does, but for the block's own filters (metadata, a least confidence)."""
    return not settings.metadata and settings.min_confidence <= 0


def ranked_by_topic(
    *,
    section_queryset: QuerySet,
    hits: dict[str, float],
    fallback_order: tuple,
    page_size: int,
    block: Budget,
    score: Callable[[MemoryRecord, float], float],
    read: TopicRead | None = None,
) -> Iterator[MemoryRecord]:
    """Records close to the topic first (ordered by `score(record, relevance 0..1)`), then the rest.

    The search only proposes ids; the section's queryset decides what may be shown, so
    scoping and the block's filters hold exactly as in the confidence order. The pool is the
    section's hits and its first page in fallback order: read by one query, or (`read`) made of
    the hits' records and the first rows read with the block's other first pages.
    """
    hit_ids = list(hits)
    if read is not None:
        wanted = page_size + len(hit_ids)
        others = [record for record in read.fallback_first if record.id not in hits]
        pool = read.hit_records + others[: wanted - len(read.hit_records)]
    else:
        first = section_queryset.order_by(*fallback_order)
        if hit_ids:
            first = section_queryset.alias(
                is_hit=Case(When(id__in=hit_ids, then=Value(1)), default=Value(0), output_field=IntegerField())
            ).order_by("-is_hit", *fallback_order)
        pool = list(first[: page_size + len(hit_ids)])
    ordered = sorted(
        pool,
        key=lambda record: (-score(record, hits.get(record.id, 0.0)), -record.effective_confidence, -record.retrieval_count, record.id),
    )
    yield from ordered
    if len(pool) < page_size + len(hit_ids):
        return
    rest = section_queryset.exclude(id__in=[record.id for record in pool]).order_by(*fallback_order)
    yield from pages(rest, page_size=page_size, block=block)


def relevance_score(record: MemoryRecord, relevance: float) -> float:
    return relevance


def blend_score(record: MemoryRecord, relevance: float) -> float:
    """Half closeness to the topic (relative to the best hit), half effective confidence."""
    return 0.5 * relevance + 0.5 * record.effective_confidence


RANK_SCORES: dict[str, Callable[[MemoryRecord, float], float]] = {"relevance": relevance_score, "blend": blend_score}
