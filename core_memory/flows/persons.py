"""The persons Core knows, read across the layers that name them: the console's person
list. Reads only. (What erasing one would remove is `core_memory.flows.erasure.person_erasure_preview`.)"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from core_memory.base.callers import Caller
from core_memory.persons.models import Person
from core_memory.persons.selectors import person_rules, person_subjects, platform_person_subjects
from core_memory.threads.selectors import person_thread_figures, platform_thread_subjects, thread_subjects
from memory.models import MemoryRecord
from memory.selectors import person_record_figures, platform_record_subjects, record_subjects


@dataclass
class PersonSummary:
    organisation_id: str
    subject: str
    records_per_type: dict[str, int] = field(default_factory=dict)
    threads: int = 0
    last_activity_at: datetime | None = None
    helper_model_may_read: bool = True
    has_rules: bool = False


def persons_page(*, caller: Caller, search: str = "", offset: int = 0, limit: int = 50) -> tuple[list[PersonSummary], bool]:
    """One page of the persons the organisation knows — named by a record, a thread or stored
    rules — by subject, with her active records per type, her threads, her last activity (a
    record changed or a thread item) and her rules; and whether another page follows. A fixed
    number of queries per page."""
    named = record_subjects(caller=caller, search=search).union(
        thread_subjects(caller=caller, search=search),
        person_subjects(caller=caller, search=search),
    )
    return _page(named, caller_in=lambda organisation_id: caller, offset=offset, limit=limit)


def platform_persons_page(*, actor: str, search: str = "", offset: int = 0, limit: int = 50) -> tuple[list[PersonSummary], bool]:
    """`persons_page` across every organisation (a console superuser's person list): in each
    organisation she asks as its administrator would (`actor`)."""
    named = platform_record_subjects(search=search).union(platform_thread_subjects(search=search), platform_person_subjects(search=search))
    return _page(named, caller_in=lambda organisation_id: Caller.console(organisation_id=organisation_id, actor=actor), offset=offset, limit=limit)


def _page(named, *, caller_in: Callable[[str], Caller], offset: int, limit: int) -> tuple[list[PersonSummary], bool]:
    rows = list(named.order_by("subject", "organisation_id")[offset : offset + limit + 1])
    has_more = len(rows) > limit
    summaries = [PersonSummary(organisation_id=row[0], subject=row[1]) for row in rows[:limit]]
    by_organisation: dict[str, list[PersonSummary]] = {}
    for summary in summaries:
        by_organisation.setdefault(summary.organisation_id, []).append(summary)
    for each_organisation_id, group in by_organisation.items():
        subjects = [summary.subject for summary in group]
        caller = caller_in(each_organisation_id)
        records = person_record_figures(caller=caller, subjects=subjects)
        threads = person_thread_figures(caller=caller, subjects=subjects)
        rules = person_rules(caller=caller, subjects=subjects)
        for summary in group:
            record_figures = records.get(summary.subject, {})
            thread_figures = threads.get(summary.subject, {})
            summary.records_per_type = record_figures.get("types", {})
            summary.threads = thread_figures.get("threads", 0)
            moments = [moment for moment in (record_figures.get("last_changed_at"), thread_figures.get("last_item_at")) if moment]
            summary.last_activity_at = max(moments, default=None)
            person = rules.get(summary.subject)
            summary.has_rules = person is not None
            summary.helper_model_may_read = person.helper_model_may_read if person else Person._meta.get_field("helper_model_may_read").default
    return summaries, has_more


def person_known(*, caller: Caller) -> bool:
    """Whether Core holds anything about the person the caller asks for, in its organisation: a
    record (of any status, a deleted one keeps its history), a thread or stored rules name her."""
    return caller.subject is not None and any(
        named.filter(subject=caller.subject).exists()
        for named in (
            MemoryRecord.objects.for_organisation(caller.organisation_id),
            thread_subjects(caller=caller),
            person_subjects(caller=caller),
        )
    )
