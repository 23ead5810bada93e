"""A search's full-text candidates: the best of each part of the scope by full text, in one
statement, the shared part's bounded by what the process keeps of the shared set's words
(memory.search.shared) while that set is at their version."""
from __future__ import annotations

from django.contrib.postgres.search import SearchRank
from django.db.models import BigIntegerField, BooleanField, Case, F, FloatField, Func, QuerySet, Value, When
from django.db.models.expressions import RawSQL

from core_memory.keys.models import ApiKey
from memory.models import MemoryRecord, SharedSetVersion
from memory.search.shared import Bounded, bounded_candidates, bounded_settled
from memory.search.text import terms_query
from stores.models import KnowledgeIndex


def shared_bounded(
    *, key: ApiKey, index: KnowledgeIndex, terms: list[str], filters: dict, depth: int, ranked_whole: int | None = None
) -> Bounded | None:
    if not terms:
        return None
    return bounded_candidates(
        organisation_id=key.organisation_id, index_id=index.pk, terms=terms, depth=depth, ranked_whole=ranked_whole, **filters
    )


def shared_version(*, key: ApiKey, index: KnowledgeIndex) -> RawSQL:
    """The shared set's version (memory.models.SharedSetVersion) as the statement reads it: a
    subquery PostgreSQL runs once per statement."""
    return RawSQL(
        f"COALESCE((SELECT version FROM {SharedSetVersion._meta.db_table} WHERE index_id = %s AND organisation_id = %s), 0)",
        (index.pk, key.organisation_id),
        output_field=BigIntegerField(),
    )


class _IdAmong(Func):
    """`id = ANY(ids)`: the ids as one array parameter, however many."""

    arg_joiner = " = ANY("
    template = "%(expressions)s)"
    output_field = BooleanField()


def bounded_exact(bounded: Bounded, found: list) -> bool:
    """Whether the statement that read `found` (records or (id, rank, version) rows) answered
    exactly with the shared set's bounded candidates (memory.search.shared)."""
    wanted = set(bounded.ids)
    if found and isinstance(found[0], MemoryRecord):
        rows = [(record.id, record.text_score, record.shared_version) for record in found]
    else:
        rows = found
    version = rows[0][2] if rows else None
    return bounded_settled(bounded, version=version, ranked=[(rank, record_id) for record_id, rank, _v in rows if record_id in wanted])


def text_candidates(
    parts: list[QuerySet[MemoryRecord]], *, terms: list[str], depth: int, embeds: bool, key: ApiKey, index: KnowledgeIndex,
    bounded: Bounded | None,
) -> tuple[list[QuerySet], Case | Value] | None:
    """The full-text candidates' ids, as queries, and the annotation that scores a record by full text.

    One union over the parts: PostgreSQL reads them by primary key (pools OR-ed together had it
    read every record of the scope and test each against each pool). With `bounded`, the shared
    part (the last) ranks only those candidates while the shared set is at their version, and
    every shared match when it has changed since. When the index embeds they are read now, in
    one query, while the question is being embedded; the vectors' part needs it. None when the
    bounded candidates turned out not to hold the best (memory.search.shared).
    """
    if not terms:
        return [], Value(0.0)
    search_query = terms_query(terms)
    rank = SearchRank(F("search_vector"), search_query, cover_density=True, normalization=Value(32))
    matching = [part.filter(search_vector=search_query) for part in parts]
    if bounded is not None:
        version = shared_version(key=key, index=index)
        # Those few by primary key alone, or every shared match when the shared set has changed
        # since. At their version each is an active shared record of the index in the asked
        # types and times that holds a word of the question: no other condition, which the
        # planner would answer by reading the shared set's whole full-text index entry.
        records = MemoryRecord.objects.for_organisation(key.organisation_id)
        few = records.alias(shared_version=version).filter(_IdAmong(F("id"), Value(bounded.ids)), shared_version=bounded.version)
        matching[-1:] = [few, matching[-1].alias(shared_version=version).exclude(shared_version=bounded.version)]
    ranked = [part.order_by(rank.desc(), "id") for part in matching]
    if embeds:
        rows = [part.annotate(text_rank=rank, shared_version=shared_version(key=key, index=index)) for part in ranked]
        first, *others = [part.values_list("id", "text_rank", "shared_version")[:depth] for part in rows]
        found = list(first.union(*others, all=True)) if others else list(first)
        if bounded is not None and not bounded_exact(bounded, found):
            return None
        pools = [MemoryRecord.objects.for_organisation(key.organisation_id).filter(pk__in=[row[0] for row in found]).values_list("id", flat=True)]
    else:
        pools = [part.values_list("id", flat=True)[:depth] for part in ranked]
    return pools, Case(When(search_vector=search_query, then=rank), default=Value(0.0), output_field=FloatField())
