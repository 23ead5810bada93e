"""What Core, not the model, says about a session's episode: its times,
items, responses, agent and tools, and what decided its result."""
from __future__ import annotations

import json
from collections.abc import Sequence

from core_memory.threads.models import Item, Response
from extraction.answer import EpisodeNote

FAILED_RESPONSES = (Response.Status.FAILED, Response.Status.INCOMPLETE)


def _tool_status(item: Item) -> str:
    """`error` for a result that is an error object (a refused or failed tool), else `ok`."""
    content = item.content
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except (ValueError, RecursionError):
            return "ok"
    return "error" if isinstance(content, dict) and "error" in content else "ok"


def episode_structured(*, thread_id: str, items: Sequence[Item], responses: Sequence[Response], note: EpisodeNote) -> dict:
    """The episode's `structured` part for the session made of `items` (in order) whose
    turns were `responses`. The result basis: the person's reaction when she showed one;
    else the records, when a response of the session failed or stopped early (the result
    is then `failed`); else the model's judgement."""
    by_id = {response.id: response for response in responses}
    response_ids = list(dict.fromkeys(item.response_id for item in items if item.response_id))
    ran = [by_id[response_id] for response_id in response_ids if response_id in by_id]
    agent_version = next((response.agent_version for response in reversed(ran) if response.agent_version_id), None)
    result = note.result
    if note.reaction != "none":
        basis = "reaction"
    elif any(response.status in FAILED_RESPONSES for response in ran):
        basis, result = "records", "failed"
    else:
        basis = "judge"
    structured = {
        "from": items[0].created_at.isoformat(),
        "to": items[-1].created_at.isoformat(),
        "thread_id": thread_id,
        "first_item_id": items[0].id,
        "last_item_id": items[-1].id,
        "intent": note.intent,
        "result": result,
        "result_basis": basis,
        "response_ids": response_ids,
        "agent_id": agent_version.agent_id if agent_version else None,
        "agent_version": agent_version.version if agent_version else None,
        "tools": [
            {"name": item.name, "status": _tool_status(item)}
            for item in items
            if item.kind == Item.Kind.TOOL_RESULT and not item.sealed  # a sealed item is never read
        ],
    }
    if note.intent is None:
        del structured["intent"]  # Omitted when unclear
    return structured
