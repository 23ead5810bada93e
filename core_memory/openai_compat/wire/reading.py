"""Reading OpenAI requests (Chat Completions messages and tools, Responses input, tool choice and
text format) into a turn's items and settings."""
from __future__ import annotations

import re

from core_memory.base.errors import InvalidRequest
from core_memory.threads.models import Item
from core_memory.threads.services import ItemDraft

FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_CALL_ID_LENGTH = 200
TEXT_PART_TYPES = {"text", "input_text", "output_text"}
CHAT_ROLES = {"system": Item.Role.SYSTEM, "developer": Item.Role.SYSTEM, "user": Item.Role.USER, "assistant": Item.Role.ASSISTANT}


def _text(content, *, param: str, allow_none: bool = False) -> str | None:
    """A message's content: a string, or a list of text parts joined by newlines."""
    if content is None and allow_none:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for position, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") not in TEXT_PART_TYPES or not isinstance(part.get("text"), str):
                raise InvalidRequest(
                    "Only text parts ({'type': 'text', 'text': '…'}) are taken; images, audio and files are not.",
                    param=f"{param}[{position}]",
                )
            texts.append(part["text"])
        return "\n".join(texts)
    raise InvalidRequest("content is a string or a list of text parts.", param=param)


def _call_id(value, *, param: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_CALL_ID_LENGTH:
        raise InvalidRequest(f"A tool call id is a non-empty string of at most {MAX_CALL_ID_LENGTH} characters.", param=param)
    return value


def _function_name(value, *, param: str) -> str:
    if not isinstance(value, str) or not FUNCTION_NAME.match(value):
        raise InvalidRequest("A function name is 1 to 64 letters, digits, underscores or dashes.", param=param)
    return value


def _arguments(value, *, param: str) -> str:
    if not isinstance(value, str):
        raise InvalidRequest("A tool call's arguments are a JSON text (a string).", param=param)
    return value


def _refuse_unknown(value: dict, known: set[str], *, param: str) -> None:
    unknown = sorted(set(value) - known)
    if unknown:
        raise InvalidRequest("Unknown field.", param=f"{param}.{unknown[0]}")


def _call_draft(*, called: dict[str, str], call_id: str, name: str, arguments, param: str) -> ItemDraft:
    """A tool call the caller's model made, remembered in `called` for the result that answers it."""
    called[call_id] = name
    return ItemDraft(role=Item.Role.ASSISTANT, kind=Item.Kind.TOOL_CALL, content=_arguments(arguments, param=param), name=name, call_id=call_id)


def _result_draft(*, called: dict[str, str], call_id, content: str, param: str, missing: str) -> ItemDraft:
    """A tool result, which must answer a call made before it (`called`: call id → tool name)."""
    call_id = _call_id(call_id, param=param)
    if call_id not in called:
        raise InvalidRequest(missing, param=param)
    return ItemDraft(role=Item.Role.TOOL, kind=Item.Kind.TOOL_RESULT, content=content, name=called[call_id], call_id=call_id)


def chat_messages_read(messages) -> tuple[str | None, list[ItemDraft]]:
    """Chat Completions `messages` as a turn's instructions and items. The system (and developer)
    messages are the turn's instructions, which the model reads before the memory block, as with
    `instructions` on Core's own turns. A tool message must answer a tool call of an earlier assistant message (as
    OpenAI's own API requires)."""
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages is a non-empty list.", param="messages")
    drafts: list[ItemDraft] = []
    called: dict[str, str] = {}
    for position, message in enumerate(messages):
        param = f"messages[{position}]"
        if not isinstance(message, dict):
            raise InvalidRequest("A message is an object with a role and content.", param=param)
        role = message.get("role")
        if role in ("system", "developer", "user"):
            _refuse_unknown(message, {"role", "content", "name"}, param=param)
            drafts.append(ItemDraft(role=CHAT_ROLES[role], content=_text(message.get("content"), param=f"{param}.content")))
        elif role == "assistant":
            _refuse_unknown(message, {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}, param=param)
            calls = message.get("tool_calls") or []
            content = _text(message.get("content"), param=f"{param}.content", allow_none=bool(calls))
            if content:
                drafts.append(ItemDraft(role=Item.Role.ASSISTANT, content=content))
            if not isinstance(calls, list):
                raise InvalidRequest("tool_calls is a list.", param=f"{param}.tool_calls")
            for index, call in enumerate(calls):
                call_param = f"{param}.tool_calls[{index}]"
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    raise InvalidRequest("A tool call is {'id', 'type': 'function', 'function': {'name', 'arguments'}}.", param=call_param)
                call_id = _call_id(call.get("id"), param=f"{call_param}.id")
                name = _function_name(function.get("name"), param=f"{call_param}.function.name")
                arguments = function.get("arguments", "{}")
                drafts.append(_call_draft(called=called, call_id=call_id, name=name, arguments=arguments, param=f"{call_param}.function.arguments"))
        elif role == "tool":
            _refuse_unknown(message, {"role", "content", "tool_call_id", "name"}, param=param)
            drafts.append(
                _result_draft(
                    called=called,
                    call_id=message.get("tool_call_id"),
                    content=_text(message.get("content"), param=f"{param}.content"),
                    param=f"{param}.tool_call_id",
                    missing="tool_call_id names no tool call of an earlier assistant message.",
                )
            )
        else:
            raise InvalidRequest("role is one of system, developer, user, assistant, tool.", param=f"{param}.role")
    return _instructions_apart(drafts, param="messages")


def _instructions_apart(drafts: list[ItemDraft], *, param: str) -> tuple[str | None, list[ItemDraft]]:
    """System (and developer) messages are the turn's instructions, never thread items: a stored
    system message would instruct every later turn on the thread, by any key."""
    conversation = [draft for draft in drafts if draft.role != Item.Role.SYSTEM]
    if not conversation:
        raise InvalidRequest(f"{param} needs at least one message that is not a system message.", param=param)
    instructions = "\n\n".join(draft.content for draft in drafts if draft.role == Item.Role.SYSTEM and draft.content)
    return instructions or None, conversation


def chat_tools_read(tools) -> list[dict]:
    """The caller's function tools, as the model is given them."""
    definitions = []
    for position, tool in enumerate(tools or []):
        param = f"tools[{position}]"
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            raise InvalidRequest("A tool is {'type': 'function', 'function': {'name', …}}.", param=param)
        _refuse_unknown(tool, {"type", "function"}, param=param)
        definitions.append({"type": "function", "function": _function_read(function, param=f"{param}.function")})
    return definitions


def _function_read(function: dict, *, param: str) -> dict:
    _refuse_unknown(function, {"name", "description", "parameters", "strict"}, param=param)
    definition = {"name": _function_name(function.get("name"), param=f"{param}.name")}
    if "description" in function:
        if not isinstance(function["description"], str):
            raise InvalidRequest("description is a string.", param=f"{param}.description")
        definition["description"] = function["description"]
    if "parameters" in function:
        if not isinstance(function["parameters"], dict):
            raise InvalidRequest("parameters is a JSON Schema object.", param=f"{param}.parameters")
        definition["parameters"] = function["parameters"]
    if function.get("strict") is not None:
        if not isinstance(function["strict"], bool):
            raise InvalidRequest("strict is a boolean.", param=f"{param}.strict")
        definition["strict"] = function["strict"]
    return definition


def responses_tools_read(tools) -> list[dict]:
    """Responses `tools` (`{"type": "function", "name", "parameters", …}`) as the model is given them;
    OpenAI's hosted tools (web search, files, …) are not Core's to run."""
    definitions = []
    for position, tool in enumerate(tools or []):
        param = f"tools[{position}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise InvalidRequest("Only function tools are taken: {'type': 'function', 'name', 'parameters'}.", param=param)
        function = {name: value for name, value in tool.items() if name != "type"}
        definitions.append({"type": "function", "function": _function_read(function, param=param)})
    return definitions


def responses_input_read(value, *, known_calls: dict[str, str]) -> tuple[str | None, list[ItemDraft]]:
    """Responses `input` as instructions and items: a string (one user message) or a list of
    messages, function calls and function call outputs; its system and developer messages are
    instructions. `known_calls` are the calls on the thread so far (`previous_response_id`) by call
    id: an output must answer one of them or a call earlier in the input."""
    if isinstance(value, str):
        if not value.strip():
            raise InvalidRequest("input is a non-empty string or a non-empty list.", param="input")
        return None, [ItemDraft(role=Item.Role.USER, content=value)]
    if not isinstance(value, list) or not value:
        raise InvalidRequest("input is a non-empty string or a non-empty list.", param="input")
    drafts: list[ItemDraft] = []
    called = dict(known_calls)
    for position, item in enumerate(value):
        param = f"input[{position}]"
        if not isinstance(item, dict):
            raise InvalidRequest("An input item is an object.", param=param)
        kind = item.get("type", "message")
        if kind == "message":
            _refuse_unknown(item, {"type", "role", "content", "id", "status", "phase"}, param=param)
            role = item.get("role")
            if role not in CHAT_ROLES:
                raise InvalidRequest("role is one of user, assistant, system, developer.", param=f"{param}.role")
            drafts.append(ItemDraft(role=CHAT_ROLES[role], content=_text(item.get("content"), param=f"{param}.content")))
        elif kind == "function_call":
            _refuse_unknown(item, {"type", "id", "call_id", "name", "arguments", "status"}, param=param)
            call_id = _call_id(item.get("call_id"), param=f"{param}.call_id")
            name = _function_name(item.get("name"), param=f"{param}.name")
            if call_id in known_calls:
                continue  # already on the thread: the caller sent the previous output back
            drafts.append(_call_draft(called=called, call_id=call_id, name=name, arguments=item.get("arguments"), param=f"{param}.arguments"))
        elif kind == "function_call_output":
            _refuse_unknown(item, {"type", "id", "call_id", "output", "status"}, param=param)
            drafts.append(
                _result_draft(
                    called=called,
                    call_id=item.get("call_id"),
                    content=_text(item.get("output"), param=f"{param}.output"),
                    param=f"{param}.call_id",
                    missing="call_id names no function call of this conversation.",
                )
            )
        else:
            raise InvalidRequest("An input item is a message, a function_call or a function_call_output.", param=f"{param}.type")
    return _instructions_apart(drafts, param="input")


def responses_text_format(text) -> dict | None:
    """Responses `text.format` as Chat Completions' `response_format`."""
    if text is None:
        return None
    if not isinstance(text, dict):
        raise InvalidRequest("text is an object with a format.", param="text")
    _refuse_unknown(text, {"format", "verbosity"}, param="text")
    text_format = text.get("format")
    if text_format is None:
        return None
    kind = text_format.get("type") if isinstance(text_format, dict) else None
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind == "json_schema":
        _refuse_unknown(text_format, {"type", "name", "schema", "strict", "description"}, param="text.format")
        if not isinstance(text_format.get("schema"), dict):
            raise InvalidRequest("A json_schema format has a schema object.", param="text.format.schema")
        schema = {name: text_format[name] for name in ("name", "schema", "strict", "description") if name in text_format}
        return {"type": "json_schema", "json_schema": schema}
    raise InvalidRequest("text.format.type is one of text, json_object, json_schema.", param="text.format.type")


def responses_tool_choice(choice):
    """Responses `tool_choice` as Chat Completions'."""
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise InvalidRequest("tool_choice is auto, none, required or {'type': 'function', 'name'}.", param="tool_choice")


def chat_tool_choice(choice):
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    function = choice.get("function") if isinstance(choice, dict) else None
    if isinstance(function, dict) and choice.get("type") == "function" and isinstance(function.get("name"), str):
        return {"type": "function", "function": {"name": function["name"]}}
    raise InvalidRequest("tool_choice is auto, none, required or {'type': 'function', 'function': {'name'}}.", param="tool_choice")
