"""Reading records: one record for a request, a record list, a record's versions, and the
figures the console and the flows read. Searching them is memory.search's."""
from __future__ import annotations

from datetime import datetime

from django.db.models import Count, F, Max, Q, QuerySet
from django.db.models.functions import TruncWeek
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.base.errors import NotFound
from core_memory.keys.models import ApiKey
from memory.filters import MemoryRecordFilter
from memory.models import MemoryRecord, search_vector_expression, unexpired
from memory.search.as_of import versions_as_of
from memory.search.decay import TIE_BREAKERS, effective_confidence_expression, key_half_lives, records_with_decay
from memory.search.scope import records_in_scope
from stores.models import KnowledgeIndex, MemoryStore
from stores.selectors import policy_right_check

DEFAULT_TYPES = ("fact", "preference", "commitment", "behaviour")
# Written only by Core (extraction and maintenance), never through the write route or tool.
CORE_WRITTEN_TYPES = ("episode", "lesson")
# Records of one happening (a session): each stands on its own and is never confirmed
# by another in the same words (confirming is about what is true, not about what happened).
EVENT_TYPES = ("episode",)


def store_lifetime_days(*, index: KnowledgeIndex) -> dict[str, float]:
    """Per type, how many days a record of the store stays true unless its write says when
    (the store's `expiry` section); empty: nothing expires by default."""
    if KnowledgeIndex.store.is_cached(index):
        try:
            section = index.store.expiry
        except MemoryStore.DoesNotExist:
            section = None
    else:
        section = MemoryStore.objects.for_organisation(index.organisation_id).filter(index_id=index.pk).values_list("expiry", flat=True).first()
    return dict((section or {}).get("lifetime_days") or {})


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


def organisation_default_half_lives(*, caller: Caller) -> dict[str, float]:
    """The console's default reading of effective confidence: per type, the
    shortest half-life any usable key of the organisation sets — the record as the most
    forgetful of her assistants reads it. Empty when no key sets one (no decay)."""
    shortest: dict[str, float] = {}
    for key in ApiKey.objects.for_organisation(caller.organisation_id).usable().only("memory"):
        for type_name, half_life in key_half_lives(key=key).items():
            shortest[type_name] = min(half_life, shortest.get(type_name, half_life))
    return dict(sorted(shortest.items()))


def record_list(*, caller: Caller, index: KnowledgeIndex, filters: dict, now: datetime | None = None) -> QuerySet[MemoryRecord]:
    """The record list: `filters` holds the validated query parameters (memory.filters); with
    `as_of` the records as they stood then (memory.search.as_of)."""
    now = now or timezone.now()
    if filters.get("as_of") is not None:
        versions = versions_as_of(caller=caller, index=index, at=filters["as_of"], all_subjects=True)
        records = versions.annotate(search_vector=search_vector_expression())
    else:
        records = records_with_decay(records_in_scope(caller=caller, index=index, all_subjects=True), key=caller.key, now=now)
    if not filters.get("expired") and filters.get("as_of") is None:
        records = records.filter(unexpired(now))
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


def change_reason_parts(reason: str | None) -> tuple[str, str | None]:
    """A version's `history_change_reason` ("<what> by <actor>", memory.services.rules.change_reason)
    as (what, actor): what is created, confirmed, corrected, ended, updated or deleted."""
    what, _by, actor = (reason or "").rpartition(" by ")
    return what, actor or None


def records_counted(*, caller: Caller) -> list[dict]:
    """The organisation's active records of live indexes counted per index and type, with how
    many are contested: `[{"index_id", "index_name", "type", "records", "contested"}]`, by index
    name then type."""
    return _records_counted(MemoryRecord.objects.for_organisation(caller.organisation_id))


def platform_records_counted() -> list[dict]:
    """`records_counted` across every organisation (a console superuser's dashboard)."""
    return _records_counted(MemoryRecord.objects.unscoped())


def _records_counted(records) -> list[dict]:
    return list(
        records.filter(unexpired(timezone.now()), status=MemoryRecord.Status.ACTIVE, index__deleted_at__isnull=True)
        .values("index_id", "type")
        .annotate(index_name=F("index__name"), records=Count("id"), contested=Count("id", filter=Q(contested=True)))
        .order_by("index_name", "index_id", "type")
    )


def records_created_per_week(*, caller: Caller, since: datetime, zone) -> list[tuple[datetime, int]]:
    """The organisation's records created since `since`, counted per week (Monday, in `zone`),
    oldest first; weeks without a record are absent."""
    return _records_created_per_week(MemoryRecord.objects.for_organisation(caller.organisation_id), since=since, zone=zone)


def platform_records_created_per_week(*, since: datetime, zone) -> list[tuple[datetime, int]]:
    """`records_created_per_week` across every organisation (a console superuser's dashboard)."""
    return _records_created_per_week(MemoryRecord.objects.unscoped(), since=since, zone=zone)


def _records_created_per_week(records, *, since: datetime, zone) -> list[tuple[datetime, int]]:
    return list(
        records.filter(created_at__gte=since, index__deleted_at__isnull=True)
        .annotate(week=TruncWeek("created_at", tzinfo=zone))
        .values("week")
        .annotate(records=Count("id"))
        .order_by("week")
        .values_list("week", "records")
    )


def person_record_figures(*, caller: Caller, subjects: list[str]) -> dict[str, dict]:
    """For each person: her not-deleted records per type (active ones) and when one last changed:
    `{subject: {"types": {type: n}, "last_changed_at": datetime}}`. One query for the page of persons."""
    figures: dict[str, dict] = {subject: {"types": {}, "last_changed_at": None} for subject in subjects}
    rows = (
        MemoryRecord.objects.for_organisation(caller.organisation_id)
        .filter(subject__in=subjects)
        .exclude(status=MemoryRecord.Status.DELETED)
        .values("subject", "type")
        .annotate(
            active=Count("id", filter=Q(unexpired(timezone.now()), status=MemoryRecord.Status.ACTIVE)), last_changed_at=Max("updated_at")
        )
        .order_by("subject", "type")
    )
    for row in rows:
        entry = figures[row["subject"]]
        if row["active"]:
            entry["types"][row["type"]] = row["active"]
        if entry["last_changed_at"] is None or row["last_changed_at"] > entry["last_changed_at"]:
            entry["last_changed_at"] = row["last_changed_at"]
    return figures


def records_by_id(*, caller: Caller, record_ids) -> dict[str, MemoryRecord]:
    """The organisation's records among `record_ids` (any status), by id; ids of records since
    erased, or of another organisation, are simply absent. One query."""
    ids = list(dict.fromkeys(record_ids))
    if not ids:
        return {}
    records = MemoryRecord.objects.for_organisation(caller.organisation_id).filter(id__in=ids).select_related("index")
    return {record.id: record for record in records}


def records_as_of(*, caller: Caller, record_ids, at: datetime) -> dict:
    """Each record among `record_ids` as its newest stored version at `at` said it was (text,
    status, contested), by id — what a turn at `at` saw; a record made after `at`, erased, or of
    another organisation is absent. One query."""
    ids = list(dict.fromkeys(record_ids))
    if not ids:
        return {}
    versions = (
        MemoryRecord.history.filter(organisation_id=caller.organisation_id, id__in=ids, history_date__lte=at)
        .order_by("id", "-history_date", "-history_id")
        .distinct("id")
    )
    return {version.id: version for version in versions}


def record_subjects(*, caller: Caller, search: str = ""):
    """(organisation id, subject) of every person of the organisation who has a not-deleted
    record; a values queryset to combine with the other tables that name persons
    (core_memory.flows.persons)."""
    return _record_subjects(MemoryRecord.objects.for_organisation(caller.organisation_id), search=search)


def platform_record_subjects(*, search: str = ""):
    """`record_subjects` across every organisation (a console superuser's person list)."""
    return _record_subjects(MemoryRecord.objects.unscoped(), search=search)


def _record_subjects(records, *, search: str):
    records = records.filter(subject__isnull=False).exclude(status=MemoryRecord.Status.DELETED)
    if search:
        records = records.filter(subject__icontains=search)
    return records.values_list("organisation_id", "subject").order_by()


# The person page's sections, in the injection block's order; lessons are injected
# under about_this_person and shown apart.
PERSON_SECTIONS = ("commitments", "behaviour", "about_this_person", "lessons", "past_sessions")


def person_records_in_sections(
    *, caller: Caller, subject: str, half_life_days: dict[str, float], limit: int, now: datetime | None = None
) -> dict[str, list[MemoryRecord]]:
    """Her active records in live indexes, section by section in the order injection ranks them
    (commitments soonest due first; behaviour newest first; the rest by effective
    confidence, retrieval count, id; episodes newest first), at most `limit + 1` per section so a
    caller can tell there are more. One query per section."""
    mine = (
        MemoryRecord.objects.for_organisation(caller.organisation_id)
        .filter(unexpired(now or timezone.now()), subject=subject, status=MemoryRecord.Status.ACTIVE, index__deleted_at__isnull=True)
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


def person_records_counted(*, caller: Caller, subject: str) -> dict[str, int]:
    """Every record of hers, whatever its status, per type: what erasing her removes."""
    rows = (
        MemoryRecord.objects.for_organisation(caller.organisation_id)
        .filter(subject=subject)
        .values("type")
        .annotate(records=Count("id"))
        .order_by("type")
    )
    return {row["type"]: row["records"] for row in rows}
