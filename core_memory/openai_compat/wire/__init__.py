"""OpenAI's wire format over Core's turns: requests read into a turn's items and settings, and a
turn's events written as Chat Completions and Responses answers (JSON and Server-Sent Events).

Nothing here runs a turn or decides anything about memory: the turn is Core's own
(core_memory.flows.turns). What this package decides is only how the two formats map:

- Core's memory tools are Core's business: their calls and results stay on the thread and in
  the trace, and never show in an answer here. A memory tool's name is recognisable by its form
  (`memory__<index-id>__search`), which a caller's own tool may not take.
- A tool call of the caller's own function tools is the turn's last item: the caller runs it and
  sends its result in the next request.
"""
from core_memory.openai_compat.wire.reading import (
    chat_messages_read,
    chat_tool_choice,
    chat_tools_read,
    responses_input_read,
    responses_text_format,
    responses_tool_choice,
    responses_tools_read,
)
from core_memory.openai_compat.wire.writing import ChatChunks, ResponseEvents, chat_completion_body, failure_status, responses_body

__all__ = [
    "ChatChunks",
    "ResponseEvents",
    "chat_completion_body",
    "chat_messages_read",
    "chat_tool_choice",
    "chat_tools_read",
    "failure_status",
    "responses_body",
    "responses_input_read",
    "responses_text_format",
    "responses_tool_choice",
    "responses_tools_read",
]
