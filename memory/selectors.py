"""Reading records: scoping, decay, filters and search."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from zoneinfo import ZoneInfo

from django.contrib.postgres.search import SearchRank
from django.db.models import BigIntegerField, BooleanField, Case, Count, DateTimeField, F, FloatField, Func, Max, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce, TruncWeek
from django.db.models.expressions import RawSQL
from django.db.models.lookups import GreaterThanOrEqual
from django.utils import timezone
from pgvector import HalfVector
from pgvector.django import MaxInnerProduct

from core_memory.base.errors import ImproperlyScoped, NotFound
from core_memory.keys.callers import Caller
from core_memory.keys.models import ApiKey
from core_memory.llm.embeddings import query_embed, query_embed_begin
from memory.embedding.storage import index_embeds
from memory.filters import MemoryRecordFilter
from memory.models import MemoryRecord, RecordEmbedding, SharedSetVersion
from memory.search import query_terms, terms_query
from memory.search.ranking import Candidate, candidates_rank
from memory.search.shared import Bounded, bounded_candidates, bounded_settled
from memory.search.when import time_windows
from stores.models import KnowledgeIndex, MemoryStore
from stores.selectors import policy_right_check

DEFAULT_TYPES = ("fact", "preference", "commitment", "behaviour")
# Written only by Core (extraction and maintenance), never through the write route or tool.
CORE_WRITTEN_TYPES = ("episode", "lesson")
# Records of one happening (a session): each stands on its own and is never confirmed
# by another in the same words (confirming is about what is true, not about what happened).
EVENT_TYPES = ("episode",)
SEARCH_DEFAULT_LIMIT = 10
SEARCH_MAX_LIMIT = 50
# Candidates taken from each signal (full text, vectors) before fusing; at least `limit`.
SEARCH_DEPTH = 50
# Ranking ties in every section: effective confidence, then retrieval count, then id.
TIE_BREAKERS = ("-effective_confidence", "-retrieval_count", "id")


def store_known_types(*, index: KnowledgeIndex) -> list[str]:
    """The types a store accepts: its extraction switch's `types` when it has
    a switch (kept on the store by extraction), otherwise the four defaults. The store read
    with the index (stores.selectors.index_find_available) answers without a query."""
    if KnowledgeIndex.store.is_cached(index):
        try:
            known = index.store.known_types
        except MemoryStore.DoesNotExist:
            known = None
    else:
        stores = MemoryStore.objects.for_organisation(index.organisation_id).filter(index_id=index.pk)
        known = stores.values_list("known_types", flat=True).first()
    return list(known) if known else list(DEFAULT_TYPES)


def key_half_lives(*, key: ApiKey) -> dict[str, float]:
    decay = (key.memory or {}).get("decay") or {}
    return dict(decay.get("half_life_days") or {})


def organisation_default_half_lives(*, organisation_id: str) -> dict[str, float]:
    """The console's default reading of effective confidence: per type, the
    shortest half-life any usable key of the organisation sets — the record as the most
    forgetful of her assistants reads it. Empty when no key sets one (no decay)."""
    shortest: dict[str, float] = {}
    for key in ApiKey.objects.for_organisation(organisation_id).usable().only("memory"):
        for type_name, half_life in key_half_lives(key=key).items():
            shortest[type_name] = min(half_life, shortest.get(type_name, half_life))
    return dict(sorted(shortest.items()))


class _AgeDays(Func):
    """Days from `changed_at` to `now`, never negative (a clock a bit behind is not youth)."""

    arg_joiner = " - "
    template = "GREATEST(EXTRACT(EPOCH FROM (%(expressions)s))::double precision / 86400.0, 0.0)"
    output_field = FloatField()


# Beyond 2 ** -1000 a double nears underflow, on which PostgreSQL raises rather than
# rounding to zero; an effective value that small is read as 0.
_LEAST_HALVINGS_TO_ZERO = 1000.0


def effective_confidence_expression(*, half_life_days: dict[str, float], now: datetime | None = None):
    """`confidence * 0.5 ^ (age_days / half_life)` for the types that have a half-life.

    A SQL expression (annotate it as `effective_confidence`), so filtering and ordering
    on the effective value happen in PostgreSQL. Age counts from `changed_at`. A value
    more than 1000 halvings below 1 (counting the stored confidence's own, log2) is 0.
    """
    if not half_life_days:
        return Func(F("confidence"), template="%(expressions)s", output_field=FloatField())
    age_days = _AgeDays(Value(now or timezone.now(), output_field=DateTimeField()), F("changed_at"))

    def decayed(half_life: float):
        halvings = age_days / Value(float(half_life))
        own_halvings = Func(F("confidence"), function="ln", output_field=FloatField()) / Value(-math.log(2))
        return Case(
            When(Q(confidence__lte=0.0), then=Value(0.0)),
            When(
                GreaterThanOrEqual(halvings + own_halvings, Value(_LEAST_HALVINGS_TO_ZERO)),
                then=Value(0.0),
            ),
            default=F("confidence") * Func(Value(0.5), halvings, function="power", output_field=FloatField()),
            output_field=FloatField(),
        )

    return Case(
        *[When(type=type_name, then=decayed(half_life)) for type_name, half_life in sorted(half_life_days.items())],
        default=F("confidence"),
        output_field=FloatField(),
    )


def records_with_decay(queryset: QuerySet[MemoryRecord], *, key: ApiKey, now: datetime | None = None) -> QuerySet[MemoryRecord]:
    return queryset.annotate(effective_confidence=effective_confidence_expression(half_life_days=key_half_lives(key=key), now=now))


@dataclass(frozen=True)
class SearchFilters:
    """What a search asks for besides its question: the types and times of the records, how many
    hits, and whose records. With no person, `all_subjects` searches every person's records (an
    organisation-level API request) rather than only the shared ones; for a person, `shared=False`
    leaves the shared ones out."""

    types: Sequence[str] | None = None
    after: datetime | None = None
    before: datetime | None = None
    limit: int = SEARCH_DEFAULT_LIMIT
    all_subjects: bool = False
    shared: bool = True


def records_in_scope(
    *, caller: Caller, index: KnowledgeIndex, all_subjects: bool = False, shared: bool = True
) -> QuerySet[MemoryRecord]:
    """Not-deleted records of the index the caller may see.

    `index` must have been read for the caller's key (`KnowledgeIndex.objects.for_key`); anything
    else is a bug. A person sees hers and the shared ones (only hers with `shared=False`,
    for a part that is hers alone, such as her past sessions); with no person, `all_subjects`
    decides between every record (an organisation-level API request) and only the shared ones.
    """
    key, subject = caller.key, caller.subject
    if not index.resolved_for(key):
        raise ImproperlyScoped(f"index {index.pk} was not read for key {key.pk}")
    records = (
        MemoryRecord.objects.for_organisation(key.organisation_id)
        .filter(index_id=index.pk)
        .exclude(status=MemoryRecord.Status.DELETED)
    )
    if subject is not None:
        return records.filter(Q(subject=subject) | Q(subject__isnull=True)) if shared else records.filter(subject=subject)
    if all_subjects:
        return records
    return records.filter(subject__isnull=True)


def records_visible(*, caller: Caller, index: KnowledgeIndex, shared: bool = True) -> QuerySet[MemoryRecord]:
    """Active records the caller's person may see: hers and the shared ones (only hers with
    `shared=False`; only shared when the caller is for nobody)."""
    return records_in_scope(caller=caller, index=index, shared=shared).filter(status=MemoryRecord.Status.ACTIVE)


def record_list(*, caller: Caller, index: KnowledgeIndex, filters: dict, now: datetime | None = None) -> QuerySet[MemoryRecord]:
    """The record list: `filters` holds the validated query parameters (memory.filters)."""
    records = records_with_decay(records_in_scope(caller=caller, index=index, all_subjects=True), key=caller.key, now=now)
    return MemoryRecordFilter({**filters, "status": filters.get("status") or MemoryRecord.Status.ACTIVE}, queryset=records).qs


def record_get_available(
    *,
    caller: Caller,
    record_id: str,
    own_only: bool = False,
    right: str | None = None,
    param: str | None = None,
    now: datetime | None = None,
) -> MemoryRecord:
    """A record the request may address, annotated with its effective confidence; else 404.

    404 when it does not exist, is deleted, belongs to another organisation, lives in an
    index unavailable to the caller's key, or — for a caller acting for a person — is another
    person's (or, with `own_only`, a shared one). `right="read"` answers 403 when
    the policy names the index for writing only.
    """
    key, subject = caller.key, caller.subject
    record = records_with_decay(MemoryRecord.objects.for_key(key).select_related("index"), key=key, now=now).filter(pk=record_id).first()
    if record is None:
        raise NotFound("No such record.", param=param)
    policy_right_check(caller=caller, index_id=record.index_id, right=right, param=param)
    if subject is not None and record.subject != subject and (own_only or record.subject is not None):
        raise NotFound("No such record.", param=param)
    return record


def record_history(*, record: MemoryRecord) -> QuerySet:
    """Every stored version of the record, newest first."""
    return record.history.all()


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
    records = _search_filtered(scope, **narrowing)
    parts = _search_parts(caller=caller, index=index, shared=shared, filters=narrowing) or [records]
    embeds = index_embeds(index)
    if embeds:
        # The engine embeds the question on its own thread while the full-text candidates are read.
        query_embed_begin(query)
    terms = query_terms(query)
    if not terms and not embeds:
        return []
    depth = max(SEARCH_DEPTH, limit)
    bounded = _shared_bounded(key=key, index=index, terms=terms, filters=narrowing, depth=depth) if bound and len(parts) > 1 else None
    text = _text_candidates(parts, terms=terms, depth=depth, embeds=embeds, key=key, index=index, bounded=bounded)
    if text is None:
        return None
    pools, text_score = text
    similarity = Value(None, output_field=FloatField())
    if embeds:
        vectors = _vectors_in_scope(key=key, index=index, subject=subject, all_subjects=all_subjects, shared=shared, **narrowing)
        vector_pools, similarity = _vector_candidates(
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
        found = list(candidates.annotate(shared_version=_shared_version(key=key, index=index)))
        if not _bounded_settled(bounded, found):
            return None
    else:
        found = list(candidates)
    return _search_ranked(found, query=query, key=key, index=index, now=now, limit=limit)


def _shared_bounded(*, key: ApiKey, index: KnowledgeIndex, terms: list[str], filters: dict, depth: int) -> Bounded | None:
    if not terms:
        return None
    return bounded_candidates(organisation_id=key.organisation_id, index_id=index.pk, terms=terms, depth=depth, **filters)


def _shared_version(*, key: ApiKey, index: KnowledgeIndex) -> RawSQL:
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


def _bounded_settled(bounded: Bounded, found: list) -> bool:
    """Whether the statement that read `found` (records or (id, rank, version) rows) answered
    exactly with the shared set's bounded candidates (memory.search.shared)."""
    wanted = set(bounded.ids)
    if found and isinstance(found[0], MemoryRecord):
        rows = [(record.id, record.text_score, record.shared_version) for record in found]
    else:
        rows = found
    version = rows[0][2] if rows else None
    return bounded_settled(bounded, version=version, ranked=[(rank, record_id) for record_id, rank, _v in rows if record_id in wanted])


def _search_parts(*, caller: Caller, index: KnowledgeIndex, shared: bool, filters: dict) -> list[QuerySet[MemoryRecord]]:
    """For a person with the shared records, the two parts a search takes its candidates from
    apart: hers and the shared ones, each read by its own indexes (memory.models). Otherwise
    none: the candidates come from the whole."""
    if caller.subject is None or not shared:
        return []
    return [
        _search_filtered(records_in_scope(caller=caller, index=index, shared=False), **filters),
        _search_filtered(records_in_scope(caller=replace(caller, subject=None), index=index), **filters),
    ]


def _search_filtered(
    records: QuerySet[MemoryRecord], *, types: list[str] | None, after: datetime | None, before: datetime | None
) -> QuerySet[MemoryRecord]:
    """The active records a search may find: of the asked types, made within the asked times."""
    return _narrowed(records.filter(status=MemoryRecord.Status.ACTIVE), types=types, after=after, before=before)


def _narrowed(queryset: QuerySet, *, types: list[str] | None, after: datetime | None, before: datetime | None) -> QuerySet:
    """Records, or their vectors: of the asked types, made within the asked times."""
    if types:
        queryset = queryset.filter(type__in=types)
    if after is not None:
        queryset = queryset.filter(created_at__gt=after)
    if before is not None:
        queryset = queryset.filter(created_at__lt=before)
    return queryset


def _text_candidates(
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
        version = _shared_version(key=key, index=index)
        # Those few by primary key alone, or every shared match when the shared set has changed
        # since. At their version each is an active shared record of the index in the asked
        # types and times that holds a word of the question: no other condition, which the
        # planner would answer by reading the shared set's whole full-text index entry.
        records = MemoryRecord.objects.for_organisation(key.organisation_id)
        few = records.alias(shared_version=version).filter(_IdAmong(F("id"), Value(bounded.ids)), shared_version=bounded.version)
        matching[-1:] = [few, matching[-1].alias(shared_version=version).exclude(shared_version=bounded.version)]
    ranked = [part.order_by(rank.desc(), "id") for part in matching]
    if embeds:
        rows = [part.annotate(text_rank=rank, shared_version=_shared_version(key=key, index=index)) for part in ranked]
        first, *others = [part.values_list("id", "text_rank", "shared_version")[:depth] for part in rows]
        found = list(first.union(*others, all=True)) if others else list(first)
        if bounded is not None and not _bounded_settled(bounded, found):
            return None
        pools = [MemoryRecord.objects.for_organisation(key.organisation_id).filter(pk__in=[row[0] for row in found]).values_list("id", flat=True)]
    else:
        pools = [part.values_list("id", flat=True)[:depth] for part in ranked]
    return pools, Case(When(search_vector=search_query, then=rank), default=Value(0.0), output_field=FloatField())


def _vector_candidates(
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


def _vectors_in_scope(
    *,
    key: ApiKey,
    index: KnowledgeIndex,
    subject: str | None,
    all_subjects: bool,
    shared: bool,
    types: list[str] | None,
    after: datetime | None,
    before: datetime | None,
) -> QuerySet[RecordEmbedding]:
    """The vectors of the records `records_in_scope` gives (active only: only active records
    have one), with the same filters; scoped by organisation, index and person in SQL."""
    vectors = RecordEmbedding.objects.for_organisation(key.organisation_id).filter(index_id=index.pk)
    if subject is not None:
        vectors = vectors.filter(Q(subject=subject) | Q(subject__isnull=True)) if shared else vectors.filter(subject=subject)
    elif not all_subjects:
        vectors = vectors.filter(subject__isnull=True)
    return _narrowed(vectors, types=types, after=after, before=before)


def change_reason_parts(reason: str | None) -> tuple[str, str | None]:
    """A version's `history_change_reason` ("<what> by <actor>", memory.services.change_reason)
    as (what, actor): what is created, confirmed, corrected, ended, updated or deleted."""
    what, _by, actor = (reason or "").rpartition(" by ")
    return what, actor or None


def records_counted(*, organisation_id: str | None) -> list[dict]:
    """Active records of live indexes counted per index and type, with how many are contested:
    `[{"index_id", "index_name", "type", "records", "contested"}]`, by index name then type.
    `organisation_id` None counts every organisation's (a console superuser's dashboard)."""
    records = MemoryRecord.objects.unscoped() if organisation_id is None else MemoryRecord.objects.for_organisation(organisation_id)
    return list(
        records.filter(status=MemoryRecord.Status.ACTIVE, index__deleted_at__isnull=True)
        .values("index_id", "type")
        .annotate(index_name=F("index__name"), records=Count("id"), contested=Count("id", filter=Q(contested=True)))
        .order_by("index_name", "index_id", "type")
    )


def records_created_per_week(*, organisation_id: str | None, since: datetime, zone) -> list[tuple[datetime, int]]:
    """Records created since `since`, counted per week (Monday, in `zone`), oldest first; weeks
    without a record are absent. `organisation_id` None counts every organisation's."""
    records = MemoryRecord.objects.unscoped() if organisation_id is None else MemoryRecord.objects.for_organisation(organisation_id)
    return list(
        records.filter(created_at__gte=since, index__deleted_at__isnull=True)
        .annotate(week=TruncWeek("created_at", tzinfo=zone))
        .values("week")
        .annotate(records=Count("id"))
        .order_by("week")
        .values_list("week", "records")
    )


def person_record_figures(*, organisation_id: str, subjects: list[str]) -> dict[str, dict]:
    """For each person: her not-deleted records per type (active ones) and when one last changed:
    `{subject: {"types": {type: n}, "last_changed_at": datetime}}`. One query for the page of persons."""
    figures: dict[str, dict] = {subject: {"types": {}, "last_changed_at": None} for subject in subjects}
    rows = (
        MemoryRecord.objects.for_organisation(organisation_id)
        .filter(subject__in=subjects)
        .exclude(status=MemoryRecord.Status.DELETED)
        .values("subject", "type")
        .annotate(active=Count("id", filter=Q(status=MemoryRecord.Status.ACTIVE)), last_changed_at=Max("updated_at"))
        .order_by("subject", "type")
    )
    for row in rows:
        entry = figures[row["subject"]]
        if row["active"]:
            entry["types"][row["type"]] = row["active"]
        if entry["last_changed_at"] is None or row["last_changed_at"] > entry["last_changed_at"]:
            entry["last_changed_at"] = row["last_changed_at"]
    return figures


def records_by_id(*, organisation_id: str, record_ids) -> dict[str, MemoryRecord]:
    """The organisation's records among `record_ids` (any status), by id; ids of records since
    erased, or of another organisation, are simply absent. One query."""
    ids = list(dict.fromkeys(record_ids))
    if not ids:
        return {}
    records = MemoryRecord.objects.for_organisation(organisation_id).filter(id__in=ids).select_related("index")
    return {record.id: record for record in records}


def records_as_of(*, organisation_id: str, record_ids, at: datetime) -> dict:
    """Each record among `record_ids` as its newest stored version at `at` said it was (text,
    status, contested), by id — what a turn at `at` saw; a record made after `at`, erased, or of
    another organisation is absent. One query."""
    ids = list(dict.fromkeys(record_ids))
    if not ids:
        return {}
    versions = (
        MemoryRecord.history.filter(organisation_id=organisation_id, id__in=ids, history_date__lte=at)
        .order_by("id", "-history_date", "-history_id")
        .distinct("id")
    )
    return {version.id: version for version in versions}


def record_subjects(*, organisation_id: str | None, search: str = ""):
    """(organisation id, subject) of every person who has a not-deleted record; a values queryset
    to combine with the other tables that name persons (core_memory.flows.persons)."""
    records = MemoryRecord.objects.unscoped() if organisation_id is None else MemoryRecord.objects.for_organisation(organisation_id)
    records = records.filter(subject__isnull=False).exclude(status=MemoryRecord.Status.DELETED)
    if search:
        records = records.filter(subject__icontains=search)
    return records.values_list("organisation_id", "subject").order_by()


# The person page's sections, in the injection block's order; lessons are injected
# under about_this_person and shown apart.
PERSON_SECTIONS = ("commitments", "behaviour", "about_this_person", "lessons", "past_sessions")


def person_records_in_sections(
    *, organisation_id: str, subject: str, half_life_days: dict[str, float], limit: int, now: datetime | None = None
) -> dict[str, list[MemoryRecord]]:
    """Her active records in live indexes, section by section in the order injection ranks them
    (commitments soonest due first; behaviour newest first; the rest by effective
    confidence, retrieval count, id; episodes newest first), at most `limit + 1` per section so a
    caller can tell there are more. One query per section."""
    mine = (
        MemoryRecord.objects.for_organisation(organisation_id)
        .filter(subject=subject, status=MemoryRecord.Status.ACTIVE, index__deleted_at__isnull=True)
        .select_related("index")
        .annotate(effective_confidence=effective_confidence_expression(half_life_days=half_life_days, now=now))
    )
    sections = {
        "commitments": mine.filter(type="commitment", done=False).order_by(F("due_at").asc(nulls_last=True), *TIE_BREAKERS),
        "behaviour": mine.filter(type="behaviour").order_by("-created_at", *TIE_BREAKERS),
        "about_this_person": mine.exclude(type__in=("commitment", "behaviour", "episode", "lesson")).order_by(*TIE_BREAKERS),
        "lessons": mine.filter(type="lesson").order_by(*TIE_BREAKERS),
        "past_sessions": mine.filter(type="episode").order_by("-created_at", *TIE_BREAKERS),
    }
    return {name: list(sections[name][: limit + 1]) for name in PERSON_SECTIONS}


def person_records_counted(*, organisation_id: str, subject: str) -> dict[str, int]:
    """Every record of hers, whatever its status, per type: what erasing her removes."""
    rows = (
        MemoryRecord.objects.for_organisation(organisation_id)
        .filter(subject=subject)
        .values("type")
        .annotate(records=Count("id"))
        .order_by("type")
    )
    return {row["type"]: row["records"] for row in rows}
