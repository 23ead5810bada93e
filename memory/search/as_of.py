"""Memory as it stood at a moment: the list, a record and a search "as of" a time, read from the
records' history (django-simple-history keeps every version), with today's rights.

A record stood at `at` as its newest version made by then. The records of a scope at `at` are
those whose version then was active and not yet expired — also records deleted or ended since,
which were true then. Who may see them is decided now: the index must be available to the key
today, and a person sees hers and the shared ones.

History keeps no vectors, so a search as of a time ranks by full text alone (the same Dutch and
English lexemes as the stored vector, worked out from the version's text), then by effective
confidence as it was then. A version carries no retrieval count: the answers show today's.
"""
from __future__ import annotations

from datetime import datetime

from django.contrib.postgres.search import SearchRank
from django.db.models import F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from core_memory.base.errors import ImproperlyScoped, NotFound
from core_memory.base.callers import Caller
from memory.models import MemoryRecord, search_vector_expression, unexpired
from memory.search.decay import records_with_decay
from memory.search.scope import SearchFilters, narrowed
from memory.search.text import text_query
from stores.models import KnowledgeIndex
from stores.selectors import policy_right_check

# ts_rank_cd's normalisation 32 (rank / (rank + 1)), as the search's full-text score.
RANK_NORMALISATION = 32


def _with_todays_count(versions: QuerySet, *, organisation_id: str) -> QuerySet:
    current = MemoryRecord.objects.for_organisation(organisation_id).filter(pk=OuterRef("id")).values("retrieval_count")[:1]
    return versions.annotate(retrieval_count=Coalesce(Subquery(current), Value(0)))


def versions_as_of(*, caller: Caller, index: KnowledgeIndex, at: datetime, all_subjects: bool = False, shared: bool = True) -> QuerySet:
    """The scope's records as they stood at `at` (the module's docstring): versions, each with
    `effective_confidence` then and today's `retrieval_count`. `index` must have been read for the
    caller's key."""
    key, subject = caller.key, caller.subject
    if not index.resolved_for(key):
        raise ImproperlyScoped(f"index {index.pk} was not read for key {key.pk}")
    versions = MemoryRecord.history.filter(organisation_id=key.organisation_id, index_id=index.pk, history_date__lte=at)
    if subject is not None:
        versions = versions.filter(Q(subject=subject) | Q(subject__isnull=True)) if shared else versions.filter(subject=subject)
    elif not all_subjects:
        versions = versions.filter(subject__isnull=True)
    newest = versions.order_by("id", "-history_date", "-history_id").distinct("id").values("history_id")
    standing = MemoryRecord.history.filter(history_id__in=Subquery(newest)).exclude(history_type="-")
    standing = standing.filter(unexpired(at), status=MemoryRecord.Status.ACTIVE)
    return _with_todays_count(records_with_decay(standing, key=key, now=at), organisation_id=key.organisation_id)


def record_as_of(*, caller: Caller, record_id: str, at: datetime, right: str | None = "read") -> object:
    """One record as it stood at `at`, whatever its status then (a deleted one is as missing as
    one not yet written: 404), with today's rights over its index and person."""
    key, subject = caller.key, caller.subject
    version = (
        MemoryRecord.history.filter(organisation_id=key.organisation_id, id=record_id, history_date__lte=at)
        .order_by("-history_date", "-history_id")
        .first()
    )
    available = version is not None and KnowledgeIndex.objects.for_key(key).filter(pk=version.index_id).exists()
    if not available or version.history_type == "-" or version.status == MemoryRecord.Status.DELETED:
        raise NotFound("No such record at that time.")
    if subject is not None and version.subject not in (subject, None):
        raise NotFound("No such record at that time.")
    policy_right_check(caller=caller, index_id=version.index_id, right=right, param=None)
    versions = MemoryRecord.history.filter(history_id=version.history_id)
    return _with_todays_count(records_with_decay(versions, key=key, now=at), organisation_id=key.organisation_id).get()


def record_search_as_of(*, caller: Caller, index: KnowledgeIndex, query: str, filters: SearchFilters, at: datetime) -> list[tuple[object, float]]:
    """The records most relevant to `query` among those that stood at `at`, best first, each with
    its full-text score 0..1 (the module's docstring). A read only: nothing is counted."""
    tsquery = text_query(query)
    if tsquery is None:
        return []
    versions = versions_as_of(caller=caller, index=index, at=at, all_subjects=filters.all_subjects, shared=filters.shared)
    versions = narrowed(versions, types=filters.types, after=filters.after, before=filters.before)
    ranked = (
        versions.annotate(vector=search_vector_expression())
        .filter(vector=tsquery)
        .annotate(score=SearchRank(F("vector"), tsquery, cover_density=True, normalization=Value(RANK_NORMALISATION)))
        .order_by("-score", "-effective_confidence", "id")[: filters.limit]
    )
    return [(version, float(version.score)) for version in ranked]
