"""Thread items as Chat Completions messages.

Consecutive assistant items of one answer (its text and its tool calls) become one
assistant message; a tool result becomes a `tool` message. A tool call without its
result (a turn that stopped at its call limit) or a result without its call (an
import, or history cut at the limit) is left out, since the protocol refuses both.
Reasoning items are never sent, and neither is a system item of another turn: system text
instructs only the turn whose input carried it, never a later turn on the thread.
"""
from __future__ import annotations

import json
from collections.abc import Iterable

from core_memory.threads.models import Item
from memory.tools.catalogue import is_memory_tool_name


def _text(content) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def items_to_messages(items: Iterable[Item], *, response_id: str, tool_result_note: str | None = None) -> list[dict]:
    """The messages of turn `response_id` for `items`; `tool_result_note` opens every memory
    tool's message (the trust envelope): the result of a caller's own tool is the caller's
    to vouch for, not memory."""
    items = [
        item
        for item in items
        if item.kind != Item.Kind.REASONING and (item.role != Item.Role.SYSTEM or item.response_id == response_id)
    ]
    answered = {item.call_id for item in items if item.kind == Item.Kind.TOOL_RESULT}
    called: set[str] = set()
    messages: list[dict] = []
    for item in items:
        if item.kind == Item.Kind.TOOL_CALL:
            if item.call_id not in answered:
                continue
            called.add(item.call_id)
            call = {"id": item.call_id, "type": "function", "function": {"name": item.name, "arguments": _text(item.content)}}
            previous = messages[-1] if messages else None
            if previous is not None and previous["role"] == "assistant":
                previous.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif item.kind == Item.Kind.TOOL_RESULT:
            if item.call_id in called:
                content = _text(item.content)
                if tool_result_note and is_memory_tool_name(item.name):
                    content = f"{tool_result_note}\n{content}"
                messages.append({"role": "tool", "tool_call_id": item.call_id, "content": content})
        elif item.role == Item.Role.TOOL:
            continue
        else:
            messages.append({"role": item.role, "content": _text(item.content)})
    return messages
