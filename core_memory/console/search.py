"""The console's one search box (in the side menu of every page): a person by her subject, a
record by its words (or its id), a thread or a response by its id — each kind grouped with links
to its page.

It looks through the pages' own admins, so what it finds is what those pages would show her: her
organisation's objects only (every organisation's for a superuser), and a kind only when she may
read its pages. What it showed is a console read, audited as the record list's search is: one
`memory.console_read` naming the records shown and the words searched for.
"""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from audit.console import console_read_audit
from core_memory.base.callers import Caller
from core_memory.base.console.pages import person_url, thread_url
from core_memory.base.console.selectors import EVERY_ORGANISATION, administered_organisation_id, console_actor
from core_memory.flows.persons import persons_page, platform_persons_page
from core_memory.persons.models import Person
from core_memory.threads.models import Response, Thread
from memory.models import MemoryRecord, type_label

# Each kind shows at most this many; more is said, with a link to the kind's own list.
SHOWN_PER_KIND = 20
LONGEST_TERM = 200


def _more(rows: list, limit: int = SHOWN_PER_KIND) -> tuple[list, bool]:
    return rows[:limit], len(rows) > limit


def search_view(site: admin.AdminSite, request):
    """GET `q`: what matches it, by kind; an empty `q` shows the box alone."""
    term = request.GET.get("q", "").strip()[:LONGEST_TERM]
    organisation_id = administered_organisation_id(user=request.user)
    persons, records, threads, responses = [], [], [], []
    more_persons = more_records = False
    person_admin, record_admin, thread_admin = site._registry.get(Person), site._registry.get(MemoryRecord), site._registry.get(Thread)
    if term and person_admin is not None and person_admin.has_view_permission(request):
        page = {"search": term, "offset": 0, "limit": SHOWN_PER_KIND}
        actor = console_actor(user=request.user)
        found, more_persons = [], False
        if organisation_id is EVERY_ORGANISATION:
            found, more_persons = platform_persons_page(actor=actor, **page)
        elif organisation_id:
            found, more_persons = persons_page(caller=Caller.console(organisation_id=organisation_id, actor=actor), **page)
        persons = [{"person": person, "url": person_url(site, person.organisation_id, person.subject)} for person in found]
    if term and record_admin is not None and record_admin.has_view_permission(request):
        scoped = record_admin.get_queryset(request)
        by_id = list(scoped.filter(id=term))
        by_words, _distinct = record_admin.get_search_results(request, scoped.exclude(id=term), term)
        records, more_records = _more([*by_id, *by_words.order_by("-updated_at", "id")[: SHOWN_PER_KIND + 1]])
    if term and thread_admin is not None and thread_admin.has_view_permission(request):
        threads = list(thread_admin.scope(Thread.objects.unscoped(), request).filter(id=term))
        responses = list(thread_admin.scope(Response.objects.unscoped(), request).filter(id=term))
    groups = [
        {
            "kind": "persons",
            "title": _("Persons"),
            "rows": [{"url": row["url"], "label": row["person"].subject, "note": ""} for row in persons],
            "more": more_persons,
            "list_url": f"{reverse(f'{site.name}:persons_person_changelist')}?{urlencode({'q': term})}",
        },
        {
            "kind": "records",
            "title": _("Records"),
            "rows": [
                {
                    "url": reverse(f"{site.name}:memory_memoryrecord_change", args=[quote(record.id)]),
                    "label": record.id,
                    "type": type_label(record.type),
                    "subject": record.subject,
                    "text": record.text,
                }
                for record in records
            ],
            "more": more_records,
            "list_url": f"{reverse(f'{site.name}:memory_memoryrecord_changelist')}?{urlencode({'q': term})}",
        },
        {
            "kind": "threads",
            "title": _("Threads"),
            "rows": [{"url": thread_url(site, thread.id), "label": thread.id, "subject": thread.subject} for thread in threads],
        },
        {
            "kind": "responses",
            "title": _("Responses"),
            "rows": [
                {"url": f"{thread_url(site, response.thread_id)}#{response.id}", "label": response.id, "thread": response.thread_id}
                for response in responses
            ],
        },
    ]
    if term:
        console_read_audit(
            actor=console_actor(user=request.user),
            page="search",
            shown=[(record.pk, record.organisation_id) for record in records],
            organisation_id=organisation_id,
            details={
                "search": term,
                "subjects": [row["person"].subject for row in persons],
                "thread_ids": [thread.id for thread in threads],
                "response_ids": [response.id for response in responses],
            },
        )
    context = {
        **site.each_context(request),
        "title": _("Search"),
        "subtitle": None,
        "console_search": term,
        "groups": [group for group in groups if group["rows"]],
        "searched": bool(term),
    }
    return TemplateResponse(request, "admin/console_search.html", context)
