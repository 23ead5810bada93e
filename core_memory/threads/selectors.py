"""Scoped reads of threads: another organisation's thread, and for a request that
names a person another person's thread, is the same 404 as a missing one (R-2.5, R-12.1)."""
from __future__ import annotations

from django.db.models import QuerySet

from core_memory.base.errors import NotFound
from core_memory.organisations.models import Organisation
from core_memory.threads.models import Item, Response, Thread

HISTORY_LIMIT = 200


def thread_get_available(
    *, organisation: Organisation, thread_id: str, subject: str | None, param: str | None = None
) -> Thread:
    threads = Thread.objects.for_organisation(organisation).filter(id=thread_id)
    if subject is not None:
        threads = threads.filter(subject=subject)
    thread = threads.prefetch_related("agents").first() if isinstance(thread_id, str) else None
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


def thread_responses(*, thread: Thread) -> QuerySet[Response]:
    """The thread's responses (turns), oldest first, with the agent version each ran."""
    return (
        Response.objects.for_organisation(thread.organisation_id)
        .filter(thread_id=thread.id)
        .select_related("agent_version__agent")
        .order_by("id")
    )
