"""A turn for a key with `pii_redaction`: the conversation's model sees
placeholders, the person and the tools see real values.

Everything Core stores stays real: the thread's items, the tool results, the records a
tool writes. Redaction happens only at the edge, on the messages of each model call —
instructions, memory block, history, input and tool results alike — and the model's
answer is restored before anything else reads it: its text for the person, its tool
calls' arguments for the tools.
"""
from __future__ import annotations

import json
from dataclasses import replace

from core_memory.llm.protocol import ChatCompletion
from core_memory.pii.placeholders import Placeholders
from core_memory.pii.services import thread_texts_redact
from core_memory.threads.models import Thread


def _arguments_restored(arguments: str, placeholders: Placeholders) -> str:
    # Restored after parsing: a value with a `"` or `\` put into the JSON text would break it.
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return placeholders.restore(arguments)
    restored = placeholders.restore(parsed)
    return arguments if restored == parsed else json.dumps(restored, ensure_ascii=False)


class TurnRedaction:
    """The redaction of one turn on one thread. Each model call sends the whole conversation
    again, so a text is redacted once per turn and remembered: a value's placeholder never
    changes on a thread, and detection is the costly part."""

    def __init__(self, *, thread: Thread):
        self.thread = thread
        self.placeholders = Placeholders()
        self._redacted: dict[str, str] = {}

    def messages(self, messages: list[dict]) -> list[dict]:
        """`messages` as the model may see them. Raises `RedactionError`."""
        texts = []
        for message in messages:
            if isinstance(message.get("content"), str):
                texts.append(message["content"])
            texts.extend(call["function"]["arguments"] for call in message.get("tool_calls", ()))
        new = [text for text in dict.fromkeys(texts) if text not in self._redacted]
        if new:
            redaction = thread_texts_redact(thread=self.thread, texts=new)
            self._redacted.update(zip(new, redaction.texts, strict=True))
            self.placeholders = redaction.placeholders
        return [self._message_redacted(message) for message in messages]

    def _message_redacted(self, message: dict) -> dict:
        redacted = dict(message)
        if isinstance(message.get("content"), str):
            redacted["content"] = self._redacted[message["content"]]
        if "tool_calls" in message:
            redacted["tool_calls"] = [
                {**call, "function": {**call["function"], "arguments": self._redacted[call["function"]["arguments"]]}}
                for call in message["tool_calls"]
            ]
        return redacted

    def answer(self, answer: ChatCompletion) -> ChatCompletion:
        """The model's answer with real values: its text and its tool calls' arguments."""
        return replace(
            answer,
            content=self.placeholders.restore(answer.content),
            tool_calls=[
                replace(call, arguments=_arguments_restored(call.arguments, self.placeholders))
                for call in answer.tool_calls
            ],
        )
