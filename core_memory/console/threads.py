"""Threads in the console: "why did the assistant know that?".

A thread's page shows its items in order and, for each response, its memory trace: the turn's
counts and what the response kept of the injection walk (`Response.memory_detail`) — which
records went into which section, which were skipped for the budget or the organisation's
share, how many `limit` left out — and which tools ran and what they returned, every record
linked. It reads as a conversation: the injected records are listed in full for the first response
that injected, and each later one shows only what changed from the one before (records added, records
no longer injected). Every time on it, those inside tool arguments and results included, is in the
organisation's zone. Reading it is audited like any console read. Threads are shown, never
changed here; whoever may read her organisation's records may read its threads.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib import admin
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import reverse
from django.db.models import Exists, OuterRef, Q, Subquery
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from audit.console import console_read_audit
from core_memory.base.console.pages import ReadOnlyScopedAdmin, person_url
from core_memory.base.console.times import shown_time
from core_memory.keys.actors import actor_labels
from core_memory.threads.models import Item, Response, Thread
from core_memory.threads.selectors import MEMORY_TOOL, thread_items, thread_responses
from memory.models import MemoryRecord, type_label
from memory.selectors import records_as_of, records_by_id
from stores.models import KnowledgeIndex

# A thread page shows at most this many items; a longer thread says so.
THREAD_PAGE_ITEMS = 500
RECORD_ID = re.compile(r"\bmem_[0-9a-z]+\b")
SECTION_LABELS = {
    "commitments": _("commitments"),
    "behaviour": _("behaviour"),
    "about_this_person": _("about this person"),
    "organisation": _("organisation"),
    "past_sessions": _("past sessions"),
}
DROP_REASONS = {
    "budget": _("did not fit the token budget"),
    "share": _("over the organisation's share of the budget"),
}


def section_label(section: str) -> str:
    return SECTION_LABELS.get(section, section)


@dataclass
class ToolRun:
    name: str
    arguments: object
    result: object = None
    record_ids: list[str] = field(default_factory=list)


@dataclass
class ResponseTrace:
    response: Response
    key_label: str
    counts: dict | None
    injected: list[tuple[str, list[str]]]  # (section, record ids) in section order
    dropped: list[tuple[str, str, str]]  # (record id, section, reason)
    dropped_by_count: list[tuple[str, int]]
    tools: list[ToolRun]
    items: list[Item]
    then: dict = field(default_factory=dict)  # record id → what the record was when the response ran
    # Read as a conversation: after the first response that injected, a response shows only what
    # changed from the one before it — the records it added (by section) and those no longer injected.
    previous_id: str | None = None  # the response compared with; None: the whole set is shown
    added: list[tuple[str, list[str]]] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    kept: int = 0

    def record_ids(self) -> list[str]:
        return [
            *(record_id for _section, ids in self.injected for record_id in ids),
            *self.gone,
            *(record_id for record_id, _section, _reason in self.dropped),
            *(record_id for tool in self.tools for record_id in tool.record_ids),
        ]


def _parsed(content):
    """An item's content as stored; a JSON string (tool arguments and results) read as JSON."""
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


MOMENT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$")


def _in_zone(content):
    """Tool arguments and results with their moments in the organisation's zone (the active one),
    as every other time on the page; the stored item keeps what the model saw."""
    if isinstance(content, dict):
        return {name: _in_zone(value) for name, value in content.items()}
    if isinstance(content, list):
        return [_in_zone(value) for value in content]
    if isinstance(content, str) and MOMENT.match(content):
        try:
            moment = datetime.fromisoformat(content.replace("Z", "+00:00"))
        except ValueError:
            return content
        return timezone.localtime(moment).isoformat(timespec="seconds")
    return content


def _pretty(content) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, indent=2, sort_keys=True)


def _calls_of_gone_indexes(items: list[Item], *, index_ids: set[str]) -> set[str]:
    """The call ids of memory tool calls whose index is not among `index_ids` (deleted since)."""
    return {
        item.call_id
        for item in items
        if item.kind == Item.Kind.TOOL_CALL and (match := MEMORY_TOOL.match(item.name)) is not None and match["index_id"] not in index_ids
    }


def message_text(content) -> str:
    """A message's words, whether stored as a string or as the Responses API's content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text") or "")
    if isinstance(content, list):
        return " ".join(message_text(part) for part in content if part)
    return ""


@admin.register(Thread)
class ThreadAdmin(ReadOnlyScopedAdmin):
    list_display = ("thread_id", "person", "agent_names", "preview", "item_count", "last_item")
    list_display_links = ("thread_id",)
    search_fields = ("=id",)  # shows the search box; get_search_results searches
    search_help_text = _("A thread id, a person (part of the name), or words of its messages. What is searched is audited.")
    ordering = ("-last_item_at", "-id")
    show_full_result_count = False

    def get_queryset(self, request):
        # Items of the listed threads only, which are of her organisation: the subquery is tied to them.
        last_message = Item.objects.unscoped().filter(thread=OuterRef("pk"), kind=Item.Kind.MESSAGE).order_by("-position").values("content")[:1]
        return super().get_queryset(request).annotate(last_message=Subquery(last_message)).prefetch_related("agents")

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        in_messages = Item.objects.unscoped().filter(thread=OuterRef("pk"), kind=Item.Kind.MESSAGE, content__icontains=term)
        return queryset.filter(Q(id=term) | Q(subject__icontains=term) | Exists(in_messages)), False

    @admin.display(description=_("thread"), ordering="id")
    def thread_id(self, thread: Thread) -> str:
        return thread.id

    @admin.display(description=_("agents"))
    def agent_names(self, thread: Thread) -> str:
        return ", ".join(agent.name for agent in thread.agents.all()) or "—"

    @admin.display(description=_("last message"))
    def preview(self, thread: Thread):
        text = message_text(thread.last_message)
        if not text:
            return "—"
        return format_html('<span class="truncated" title="{}">{}</span>', Truncator(text).chars(1000), Truncator(text).chars(200))

    @admin.display(description=_("last item at"), ordering="last_item_at")
    def last_item(self, thread: Thread) -> str:
        return shown_time(thread.last_item_at, short=True)

    # --- permissions: a thread is part of the memory she reads ---------------------------
    def has_view_permission(self, request, obj=None):
        return self._administers(request) and request.user.has_perm("memory.view_memoryrecord")

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    @admin.display(description=_("person"), ordering="subject")
    def person(self, thread: Thread):
        if not thread.subject:
            return "—"
        return format_html('<a href="{}">{}</a>', person_url(self.admin_site, thread.organisation_id, thread.subject), thread.subject)

    # --- the list is a read of which threads exist, audited like the record list ------------------
    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        changelist = response.context_data.get("cl") if getattr(response, "context_data", None) else None
        if changelist is not None and response.status_code == 200:
            console_read_audit(
                actor=self.actor(request),
                page="threads",
                shown=[],
                organisation_id=self.organisation_id(request),
                details={"thread_ids": [thread.id for thread in changelist.result_list], "search": changelist.query},
            )
        return response

    # --- the thread page -------------------------------------------------------------------------
    def change_view(self, request, object_id, form_url="", extra_context=None):
        thread = self.get_object(request, unquote(object_id))
        if not self.has_view_permission(request, thread):
            raise PermissionDenied
        items = list(thread_items(thread=thread)[: THREAD_PAGE_ITEMS + 1])
        more_items = len(items) > THREAD_PAGE_ITEMS
        items = items[:THREAD_PAGE_ITEMS]
        # A memory tool of an index that no longer exists shows nothing of what it read or wrote.
        index_ids = set(KnowledgeIndex.objects.for_organisation(thread.organisation_id).live().values_list("id", flat=True))
        gone = _calls_of_gone_indexes(items, index_ids=index_ids)
        for item in items:
            if item.call_id and item.call_id in gone:
                item.content_text = "—"
            else:
                item.content_text = _pretty(_in_zone(_parsed(item.content))) if item.kind != Item.Kind.MESSAGE else _pretty(item.content)
        responses = list(thread_responses(thread=thread))
        traces = self.traces(thread=thread, responses=responses, items=items, gone=gone)
        record_ids = [record_id for trace in traces for record_id in trace.record_ids()]
        administrator = self.caller(request, thread.organisation_id)
        records = records_by_id(caller=administrator, record_ids=record_ids)
        records = {record_id: record for record_id, record in records.items() if record.index_id in index_ids}
        # What the model saw: each record shown as it was when its response ran, beside today's state.
        for trace in traces:
            shown = [record_id for record_id in trace.record_ids() if record_id in records]
            versions = records_as_of(caller=administrator, record_ids=shown, at=trace.response.created_at)
            trace.then = {
                record_id: {"text": version.text, "contested": version.contested, "status": version.get_status_display()}
                for record_id, version in versions.items()
            }
        answered = {item.id for trace in traces for item in trace.items}
        context = {
            **self.admin_site.each_context(request),
            "title": _("Thread %(id)s") % {"id": thread.id},
            "subtitle": None,
            "opts": self.opts,
            "original": thread,
            "thread": thread,
            "person_url": person_url(self.admin_site, thread.organisation_id, thread.subject) if thread.subject else None,
            "key_label": actor_labels(organisation_id=thread.organisation_id, actors=[thread.key_id])[thread.key_id],
            "agents": list(thread.agents.all()),
            "loose_items": [item for item in items if item.id not in answered],
            "traces": traces,
            "records": {record_id: self.record_view(record) for record_id, record in records.items()},
            "more_items": more_items,
            "item_limit": THREAD_PAGE_ITEMS,
            **(extra_context or {}),
        }
        console_read_audit(
            actor=self.actor(request),
            page="thread",
            shown=[(record.pk, record.organisation_id) for record in records.values()],
            organisation_id=thread.organisation_id,
            target=thread.id,
            details={"item_ids": [item.id for item in items], "response_ids": [response.id for response in responses]},
        )
        return TemplateResponse(request, "admin/threads/thread/thread_page.html", context)

    def record_view(self, record: MemoryRecord) -> dict:
        return {
            "id": record.id,
            "url": self.record_url(record.id),
            "type": type_label(record.type),
            "text": record.text,
            "subject": record.subject,
            "status": record.get_status_display(),
            "active": record.status == MemoryRecord.Status.ACTIVE,
            "contested": record.contested,
        }

    def record_url(self, record_id: str) -> str:
        return reverse(f"{self.admin_site.name}:memory_memoryrecord_change", args=[quote(record_id)])

    def traces(self, *, thread: Thread, responses: list[Response], items: list[Item], gone: set[str]) -> list[ResponseTrace]:
        by_response: dict[str, list[Item]] = {}
        for item in items:
            if item.response_id:
                by_response.setdefault(item.response_id, []).append(item)
        keys = actor_labels(organisation_id=thread.organisation_id, actors=[response.key_id for response in responses])
        traces = []
        previous = None  # the last response that injected: (its id, its (record id, section) pairs)
        for response in responses:
            detail = response.memory_detail or {}
            injected: dict[str, list[str]] = {}
            for record_id, section in detail.get("injected", []):
                injected.setdefault(section, []).append(record_id)
            own_items = by_response.get(response.id, [])
            traces.append(
                ResponseTrace(
                    response=response,
                    key_label=keys[response.key_id],
                    counts=(response.trace or {}).get("memory"),
                    injected=[(section_label(section), ids) for section, ids in injected.items()],
                    dropped=[
                        (record_id, section_label(section), DROP_REASONS.get(reason, reason))
                        for record_id, section, reason in detail.get("dropped", [])
                    ],
                    dropped_by_count=[(section_label(section), count) for section, count in detail.get("dropped_by_count", {}).items()],
                    tools=self.tool_runs(own_items, gone=gone),
                    items=own_items,
                )
            )
            if "injected" in detail:
                if previous is not None:
                    self.compare(traces[-1], previous=previous)
                previous = (response.id, [(record_id, section_label(section)) for record_id, section in detail["injected"]])
        return traces

    @staticmethod
    def compare(trace: ResponseTrace, *, previous: tuple[str, list[tuple[str, str]]]) -> None:
        """`trace` as what changed from the `previous` response that injected (its id, its
        (record id, section) pairs): the records added, by section, and those no longer injected."""
        previous_id, previous_records = previous
        before = {record_id for record_id, _section in previous_records}
        now = {record_id for _section, ids in trace.injected for record_id in ids}
        trace.previous_id = previous_id
        trace.added = [(section, added) for section, ids in trace.injected if (added := [record_id for record_id in ids if record_id not in before])]
        trace.gone = [record_id for record_id, _section in previous_records if record_id not in now]
        trace.kept = len(now & before)

    @staticmethod
    def tool_runs(items: list[Item], *, gone: set[str] = frozenset()) -> list[ToolRun]:
        """Each tool call of a response with its result, and the records the result names. A
        memory tool of an index that no longer exists (`gone`, by call id) shows neither."""
        runs: dict[str, ToolRun] = {}
        for item in items:
            if item.kind == Item.Kind.TOOL_CALL and item.call_id in gone:
                runs[item.call_id] = ToolRun(name=item.name, arguments="—")
            elif item.kind == Item.Kind.TOOL_CALL:
                runs[item.call_id] = ToolRun(name=item.name, arguments=_pretty(_in_zone(_parsed(item.content))))
            elif item.kind == Item.Kind.TOOL_RESULT and item.call_id in runs and item.call_id not in gone:
                result = _pretty(_in_zone(_parsed(item.content)))
                runs[item.call_id].result = result
                runs[item.call_id].record_ids = list(dict.fromkeys(RECORD_ID.findall(result)))
        return list(runs.values())
