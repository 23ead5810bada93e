"""Builders for extraction tests: switches, threads with items at given times, model answers."""
from __future__ import annotations

import json
from datetime import datetime, timedelta

from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.threads.models import Item, Thread
from core_memory.threads.services import ItemDraft, thread_create, thread_items_append
from tests.fake_model import completion

QUIET = timedelta(minutes=30)


def switch_put(client, index_id: str, **body):
    """PUT the switch; `enabled` and `model` default to an enabled switch on the fake model.
    Arguments in capitals are request headers (`HTTP_IDEMPOTENCY_KEY`)."""
    headers = {name: body.pop(name) for name in list(body) if name.isupper()}
    return client.put(
        f"/v1/memory/stores/{index_id}/extraction", {"enabled": True, "model": "fake-chat", **body}, format="json", **headers
    )


def conversation(
    *, organisation, key, subject: str | None = "anna", messages: list, at: datetime | None = None, gap: timedelta = timedelta(minutes=1)
) -> tuple[Thread, list[Item]]:
    """A thread whose items are `messages` — text (alternating user/assistant) or ItemDraft —
    the first at `at` (default: two hours ago), each `gap` after the one before."""
    at = at or timezone.now() - timedelta(hours=2)
    thread = thread_create(caller=Caller(key=key, subject=subject))
    return thread, items_add(thread=thread, key=key, messages=messages, at=at, gap=gap)


def items_add(*, thread: Thread, key, messages: list, at: datetime, gap: timedelta = timedelta(minutes=1), response_id=None) -> list[Item]:
    drafts = []
    for position, message in enumerate(messages):
        created_at = at + gap * position
        if isinstance(message, ItemDraft):
            drafts.append(ItemDraft(**{**message.__dict__, "created_at": message.created_at or created_at}))
        else:
            drafts.append(ItemDraft(role="user" if position % 2 == 0 else "assistant", content=message, created_at=created_at))
    return thread_items_append(thread=thread, caller=Caller(key=key), drafts=drafts, response_id=response_id)


def extraction_answer(records=(), episodes=None, lessons=None, usage=(100, 20)) -> dict:
    """A chat completion whose content is a `core_extraction` answer (R-13.1)."""
    content: dict = {"records": list(records)}
    if episodes is not None:
        content["episodes"] = list(episodes)
    if lessons is not None:
        content["lessons"] = list(lessons)
    return completion(json.dumps(content), usage=usage)


def add(text: str, *, type: str = "fact", confidence: float = 0.9, item_ids=()) -> dict:
    return {"op": "add", "type": type, "text": text, "confidence": confidence, "item_ids": list(item_ids)}


def shown(request) -> dict:
    """The data document a window's request showed the model (its user message)."""
    return json.loads(request.body["messages"][-1]["content"])
