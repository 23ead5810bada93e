"""Scoped reads of threads: another organisation's thread, and for a request that
names a person another person's thread, is the same 404 as a missing one."""
from __future__ import annotations

import copy
import re

from django.db.models import Count, F, Max, Prefetch, QuerySet

from core_memory.base.callers import Caller
from core_memory.base.errors import NotFound
from core_memory.threads.models import Item, Response, Thread
from stores.selectors import index_find_available

HISTORY_LIMIT = 200


def threads_readable(*, caller: Caller) -> QuerySet[Thread]:
    """The one rule for reading or continuing a conversation, whichever way it is asked for — a
    thread's routes and its items, a turn's `thread_id`, `previous_response_id`, a turn read back,
    on `/v1` and on the OpenAI surface: the organisation's threads; without the `threads`
    capability (which reads every conversation) only those the caller's key started; for a caller
    acting for a person, only hers. The console (no key) reads its organisation's every thread."""
    threads = Thread.objects.for_organisation(caller.organisation_id)
    if caller.key is not None and not caller.may("threads"):
        threads = threads.filter(key_id=caller.key.id)
    if caller.subject is not None:
        threads = threads.filter(subject=caller.subject)
    return threads


def thread_get_available(*, caller: Caller, thread_id: str, param: str | None = None) -> Thread:
    """A thread the caller may read or continue (`threads_readable`); any other is the same 404
    as a missing one."""
    # The agents read within the organisation too (docs/scaling.md: every statement names it).
    agents = Prefetch("agents", queryset=Thread._meta.get_field("agents").related_model.objects.filter(organisation_id=caller.organisation_id))
    thread = threads_readable(caller=caller).filter(id=thread_id).prefetch_related(agents).first() if isinstance(thread_id, str) else None
    if thread is None:
        raise NotFound("No such thread.", param=param)
    return thread


def thread_items(*, thread: Thread) -> QuerySet[Item]:
    return thread.items.all()


def thread_history(*, thread: Thread, limit: int = HISTORY_LIMIT) -> list[Item]:
    """The thread's last `limit` items a model may read (no reasoning), oldest first."""
    recent = (
        thread.items.exclude(kind=Item.Kind.REASONING)
        .order_by("-position")[:limit]
    )
    return list(reversed(recent))


def items_history(items: list[Item], *, limit: int = HISTORY_LIMIT) -> list[Item]:
    """`thread_history` of a thread whose items are all `items` (in their order), read from no
    database: a thread begun by the turn that reads it."""
    return [item for item in items if item.kind != Item.Kind.REASONING][-limit:]


def thread_responses(*, thread: Thread) -> QuerySet[Response]:
    """The thread's responses (turns), oldest first, with the agent version each ran."""
    return (
        Response.objects.for_organisation(thread.organisation_id)
        .filter(thread_id=thread.id)
        .select_related("agent_version__agent")
        .order_by("id")
    )


def thread_subjects(*, caller: Caller, search: str = ""):
    """(organisation id, subject) of every person a thread of the organisation names
    (core_memory.flows.persons)."""
    return _thread_subjects(Thread.objects.for_organisation(caller.organisation_id), search=search)


def platform_thread_subjects(*, search: str = ""):
    """`thread_subjects` across every organisation (a console superuser's person list)."""
    return _thread_subjects(Thread.objects.unscoped(), search=search)


def _thread_subjects(threads, *, search: str):
    threads = threads.filter(subject__isnull=False)
    if search:
        threads = threads.filter(subject__icontains=search)
    return threads.values_list("organisation_id", "subject").order_by()


def person_thread_figures(*, caller: Caller, subjects: list[str]) -> dict[str, dict]:
    """Per person: how many threads name her and when the latest last had an item. One query."""
    rows = (
        Thread.objects.for_organisation(caller.organisation_id)
        .filter(subject__in=subjects)
        .values("subject")
        .annotate(threads=Count("id"), last_item_at=Max("last_item_at"))
        .order_by()
    )
    return {row["subject"]: {"threads": row["threads"], "last_item_at": row["last_item_at"]} for row in rows}


def person_threads(*, caller: Caller, subject: str, limit: int) -> list[Thread]:
    """Her threads, the most recently active first, at most `limit + 1`."""
    return list(
        Thread.objects.for_organisation(caller.organisation_id)
        .filter(subject=subject)
        .order_by(F("last_item_at").desc(nulls_last=True), "-id")[: limit + 1]
    )


def person_threads_counted(*, caller: Caller, subject: str) -> int:
    """How many threads name her (what erasing her removes)."""
    return Thread.objects.for_organisation(caller.organisation_id).filter(subject=subject).count()


def response_get_available(*, caller: Caller, response_id: str, param: str | None = None) -> Response:
    """A turn the caller may read or continue: one on a thread it may read (`threads_readable`).
    Anything else is the same 404 as a missing one."""
    responses = Response.objects.for_organisation(caller.organisation_id).filter(id=response_id)
    responses = responses.filter(thread__in=threads_readable(caller=caller))
    response = responses.select_related("agent_version").first() if isinstance(response_id, str) else None
    if response is None:
        raise NotFound("No such response.", param=param)
    return response


def response_output(*, response: Response) -> list[Item]:
    """The items the turn added after its input, in order."""
    items = Item.objects.for_organisation(response.organisation_id).filter(thread_id=response.thread_id, response_id=response.id)
    if response.output_position is not None:
        items = items.filter(position__gte=response.output_position)
    else:
        items = items.filter(role__in=[Item.Role.ASSISTANT, Item.Role.TOOL])
    return list(items.order_by("position"))


def tool_results_from_outside(*, thread: Thread, items: list[Item]) -> bool:
    """Whether `items` (of `thread`) hold a tool result Core did not make: one a caller sent (its app's function
    result, an imported item) rather than a result of a memory tool Core ran in a turn — an output
    item of that turn (a turn's input items come before its `output_position`)."""
    results = [item for item in items if item.kind == Item.Kind.TOOL_RESULT]
    if not results:
        return False
    responses = {item.response_id for item in results if item.response_id}
    turns = Response.objects.for_organisation(thread.organisation_id).filter(thread_id=thread.id, id__in=responses)
    outputs = dict(turns.values_list("id", "output_position")) if responses else {}
    return any(outputs.get(item.response_id) is None or item.position < outputs[item.response_id] for item in results)


def thread_tool_calls(*, thread_id: str, caller: Caller) -> dict[str, str]:
    """The tool calls on a thread, as {call id: tool name}."""
    calls = Item.objects.for_organisation(caller.organisation_id).filter(thread_id=thread_id, kind=Item.Kind.TOOL_CALL)
    return dict(calls.values_list("call_id", "name"))


# --- what a caller may read of a thread now ----------------------------------------------------

# A memory tool's name names its index; a search result holds its records' text, a write's call
# and result the text written there.
MEMORY_TOOL = re.compile(r"^memory__(?P<index_id>.+)__(?:search|write)$")


def response_output_as_caller_reads(*, caller: Caller, response: Response) -> list[Item]:
    """A turn's output read back by the caller: what `items_as_caller_reads` withholds is left out,
    as a turn continuing the thread leaves it out of what the model is sent."""
    output = response_output(response=response)
    return [item for item in items_as_caller_reads(caller=caller, items=output) if not getattr(item, "withheld", False)]


def items_as_caller_reads(*, caller: Caller, items: list[Item]) -> list[Item]:
    """`items` as the caller may read them now: a call or result of a memory tool whose index the
    caller's key may not read now (another key's thread, or a policy narrowed since) is withheld —
    its content and tool name left out (`withheld` set), as absent as that index. The items
    themselves are copies; the stored ones are unchanged. The console (`Caller.console`, no key)
    reads every index: it gets `items` as they are."""
    if caller.key is None:
        return list(items)
    names = {item.call_id: item.name for item in items if item.kind == Item.Kind.TOOL_CALL}
    unnamed = {item.call_id for item in items if item.kind == Item.Kind.TOOL_RESULT and not item.name and item.call_id not in names}
    if unnamed:
        # A result's call on an earlier page, or an imported result that named no tool.
        calls = Item.objects.for_organisation(caller.organisation_id).filter(
            thread_id__in={item.thread_id for item in items}, kind=Item.Kind.TOOL_CALL, call_id__in=unnamed
        )
        names.update(calls.values_list("call_id", "name"))
    readable: dict[str, bool] = {}

    def may_read(index_id: str) -> bool:
        if index_id not in readable:
            readable[index_id] = caller.may_read(index_id) and index_find_available(caller=caller, index_id=index_id) is not None
        return readable[index_id]

    shown = []
    for item in items:
        name = item.name or (names.get(item.call_id, "") if item.kind == Item.Kind.TOOL_RESULT else "")
        match = MEMORY_TOOL.match(name) if item.kind in (Item.Kind.TOOL_CALL, Item.Kind.TOOL_RESULT) else None
        if match is not None and not may_read(match["index_id"]):
            item = copy.copy(item)
            item.content, item.name, item.withheld = None, "", True
        shown.append(item)
    return shown
