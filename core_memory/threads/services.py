"""Thread writes. Items are appended under a row lock on their thread, so
positions never collide and `last_item_at` only moves forward."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.threads.models import Item, Thread


@dataclass(frozen=True)
class ItemDraft:
    """An item before it has a place on a thread."""

    role: str
    kind: str = Item.Kind.MESSAGE
    content: object = None
    name: str = ""
    call_id: str = ""
    sealed: bool = False
    created_at: datetime | None = None


@transaction.atomic
def thread_create(*, caller: Caller, metadata: dict | None = None) -> Thread:
    """A new conversation of the caller's key, for the caller's person (or for nobody)."""
    key = caller.key
    return Thread.objects.create(organisation=key.organisation, key=key, subject=caller.subject, metadata=metadata or {})


def thread_start(
    *, caller: Caller, drafts: list[ItemDraft], response_id: str | None = None, now: datetime | None = None
) -> tuple[Thread, list[Item]]:
    """A new conversation of the caller's key, for the caller's person (or for nobody), with its
    first items: as `thread_create` then `thread_items_append` leave it, in two statements (a
    thread no one else sees yet needs no lock, and its counts are known before it is written)."""
    now = now or timezone.now()
    key = caller.key
    thread = Thread(organisation=key.organisation, key=key, subject=caller.subject, metadata={})
    items = _items_drafted(thread_id=thread.pk, first_position=0, drafts=drafts, response_id=response_id, now=now)
    if items:
        thread.item_count = len(items)
        thread.last_item_at = max(item.created_at for item in items)
        if key.pii_redaction:
            thread.redacting_key_wrote_at = now
    with transaction.atomic(savepoint=False):
        thread.save(force_insert=True)
        Item.objects.bulk_create(items)
    return thread, items


@transaction.atomic
def thread_items_append(
    *, thread: Thread, caller: Caller, drafts: list[ItemDraft], response_id: str | None = None, now: datetime | None = None
) -> list[Item]:
    """Adds the caller's items after the thread's last one, in the given order. A key that redacts
    personal data (`pii_redaction`) marks the thread as written by one."""
    if not drafts:
        return []
    now = now or timezone.now()
    threads = Thread.objects.for_organisation(thread.organisation_id)
    locked = threads.select_for_update().only("id", "item_count", "last_item_at", "redacting_key_wrote_at").get(pk=thread.pk)
    items = _items_drafted(thread_id=thread.pk, first_position=locked.item_count, drafts=drafts, response_id=response_id, now=now)
    Item.objects.bulk_create(items)
    newest = max(item.created_at for item in items)
    changes: dict = {"item_count": F("item_count") + len(items)}
    if locked.last_item_at is None or newest > locked.last_item_at:
        changes["last_item_at"] = newest
    if caller.key.pii_redaction and locked.redacting_key_wrote_at is None:
        changes["redacting_key_wrote_at"] = now
    threads.filter(pk=thread.pk).update(**changes)
    thread.item_count = locked.item_count + len(items)
    return items


def _items_drafted(*, thread_id: str, first_position: int, drafts: list[ItemDraft], response_id: str | None, now: datetime) -> list[Item]:
    """The drafts as the thread's items from `first_position` on, not yet saved."""
    return [
        Item(
            thread_id=thread_id,
            position=first_position + offset,
            role=draft.role,
            kind=draft.kind,
            content=draft.content,
            name=draft.name or "",
            call_id=draft.call_id or "",
            sealed=draft.sealed,
            response_id=response_id,
            created_at=draft.created_at or now,
        )
        for offset, draft in enumerate(drafts)
    ]


def thread_agent_record(*, thread: Thread, agent_id: str) -> None:
    """Notes that an agent answered on the thread (extraction's `filters.agent_ids`)."""
    thread.agents.add(agent_id)


def person_threads_erase(*, caller: Caller, subject: str) -> int:
    """Removes her threads — her conversations — with their items and their turns' responses;
    part of erasing her (core_memory.flows.erasure). Answers how many threads went. What other
    apps keep per thread (redaction values, extraction windows and cursors) goes with them;
    erasure counts those first. A thread that names nobody stays, whoever spoke in it."""
    _, deleted = Thread.objects.for_organisation(caller.organisation_id).filter(subject=subject).delete()
    return deleted.get(Thread._meta.label, 0)
