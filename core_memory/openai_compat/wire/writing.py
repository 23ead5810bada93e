"""Writing a turn's events as OpenAI answers: Chat Completions bodies and chunks, Responses bodies
and their typed events, and a failed turn's status."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from core_memory.threads.models import Item, Response
from memory.tools.catalogue import is_memory_tool_name


def is_visible(item: Item) -> bool:
    """What a caller sees of a turn's output: the assistant's text and its calls of the caller's
    own tools; never Core's memory tools, their results, or anything else."""
    if item.role != Item.Role.ASSISTANT:
        return False
    if item.kind == Item.Kind.MESSAGE:
        return bool(item.content)
    return item.kind == Item.Kind.TOOL_CALL and not is_memory_tool_name(item.name)


def _content_text(item: Item) -> str:
    return item.content if isinstance(item.content, str) else json.dumps(item.content, ensure_ascii=False)


def _unix(moment) -> int:
    return int(moment.timestamp())


def finish_reason(response: Response, output: list[Item]) -> str:
    if any(item.kind == Item.Kind.TOOL_CALL for item in output if is_visible(item)):
        return "tool_calls"
    if response.status == Response.Status.INCOMPLETE and (response.error or {}).get("code") == "max_output_tokens":
        return "length"
    return "stop"


def core_extension(response: Response) -> dict:
    """What Core adds to an answer: where its turn and trace are (the SDKs keep unknown fields)."""
    return {"response_id": response.id, "thread_id": response.thread_id, "status": response.status, "trace": response.trace or {}}


def _chat_usage(response: Response) -> dict:
    usage = response.usage or {}
    return {
        "prompt_tokens": usage.get("input_tokens", 0),
        "completion_tokens": usage.get("output_tokens", 0),
        "total_tokens": usage.get("total_tokens", 0),
    }


def chat_tool_call(item: Item) -> dict:
    return {"id": item.call_id, "type": "function", "function": {"name": item.name, "arguments": _content_text(item)}}


def chat_completion_body(response: Response, output: list[Item]) -> dict:
    visible = [item for item in output if is_visible(item)]
    texts = [_content_text(item) for item in visible if item.kind == Item.Kind.MESSAGE]
    calls = [chat_tool_call(item) for item in visible if item.kind == Item.Kind.TOOL_CALL]
    message: dict = {"role": "assistant", "content": "\n\n".join(texts) if texts else None, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": response.id,
        "object": "chat.completion",
        "created": _unix(response.created_at),
        "model": response.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(response, output), "logprobs": None}],
        "usage": _chat_usage(response),
        "core": core_extension(response),
    }


class ChatChunks:
    """A turn's events as Chat Completions chunks (`data: {…}` lines, then `data: [DONE]`). A turn
    that fails after the stream began ends with an `error` line, which the SDKs raise."""

    def __init__(self, *, include_usage: bool):
        self.include_usage = include_usage
        self.calls = 0

    def _chunk(self, response: Response, delta: dict | None, *, finish: str | None = None, usage: dict | None = None) -> bytes:
        body = {
            "id": response.id,
            "object": "chat.completion.chunk",
            "created": _unix(response.created_at),
            "model": response.model,
            "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }
        if usage is not None:
            body["usage"] = usage
        return _data_line(body)

    def render(self, events) -> Iterator[bytes]:
        for event in events:
            if event.kind == "created":
                yield self._chunk(event.response, {"role": "assistant", "content": ""})
            elif event.kind == "item" and is_visible(event.item):
                if event.item.kind == Item.Kind.MESSAGE:
                    yield self._chunk(event.response, {"content": _content_text(event.item)})
                else:
                    yield self._chunk(event.response, {"tool_calls": [{"index": self.calls, **chat_tool_call(event.item)}]})
                    self.calls += 1
            elif event.kind == "completed":
                response = event.response
                if response.status == Response.Status.FAILED:
                    status, error = failure_status(response)
                    yield _data_line({"error": {**error, "core": core_extension(response)}})
                    return
                yield self._chunk(response, {}, finish=finish_reason(response, event.output))
                if self.include_usage:
                    yield self._chunk(response, None, usage=_chat_usage(response))
                yield b"data: [DONE]\n\n"


def _data_line(body: dict) -> bytes:
    return f"data: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def failure_status(response: Response) -> tuple[int, dict]:
    """A failed turn as an HTTP error of Chat Completions: the organisation's monthly token limit is
    a 429 (as OpenAI's exhausted quota), the model's failure a 502 (504 when it timed out)."""
    error = response.error or {}
    code = error.get("code") or "server_error"
    message = error.get("message") or "The turn failed."
    if code == "token_limit_reached":
        return 429, {"message": message, "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}
    status = 504 if code == "model_timeout" else 502
    return status, {"message": message, "type": "api_error", "param": None, "code": code}


# Responses -----------------------------------------------------------------------------------------


def _response_error(response: Response) -> dict | None:
    if response.status != Response.Status.FAILED:
        return None
    error = response.error or {}
    code = "rate_limit_exceeded" if error.get("code") == "token_limit_reached" else "server_error"
    return {"code": code, "message": f"{error.get('code', 'internal_error')}: {error.get('message', 'The turn failed.')}"}


def _incomplete_details(response: Response) -> dict | None:
    if response.status != Response.Status.INCOMPLETE:
        return None
    reason = "max_output_tokens" if (response.error or {}).get("code") == "max_output_tokens" else None
    return {"reason": reason}


def _responses_usage(response: Response) -> dict:
    usage = response.usage or {}
    return {
        "input_tokens": usage.get("input_tokens", 0),
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.get("output_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.get("total_tokens", 0),
    }


def output_text_part(text: str) -> dict:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def responses_output_item(item: Item, *, status: str = "completed") -> dict:
    if item.kind == Item.Kind.MESSAGE:
        content = [output_text_part(_content_text(item))] if status == "completed" else []
        return {"type": "message", "id": item.id, "status": status, "role": "assistant", "content": content}
    arguments = _content_text(item) if status == "completed" else ""
    return {"type": "function_call", "id": item.id, "call_id": item.call_id, "name": item.name, "arguments": arguments, "status": status}


def responses_body(response: Response, output: Iterable[Item], *, echo: dict | None = None) -> dict:
    """A turn as a Responses `response` object. `echo` carries what the request set (instructions,
    tools, sampling) back, as OpenAI does; a turn read later has only what Core keeps."""
    echo = echo or {}
    status = response.status
    return {
        "id": response.id,
        "object": "response",
        "created_at": _unix(response.created_at),
        "status": status,
        "completed_at": _unix(response.completed_at) if response.completed_at and status == Response.Status.COMPLETED else None,
        "model": response.model,
        "output": [responses_output_item(item) for item in output if is_visible(item)],
        "error": _response_error(response),
        "incomplete_details": _incomplete_details(response),
        "instructions": echo.get("instructions"),
        "previous_response_id": echo.get("previous_response_id"),
        "metadata": echo.get("metadata") or {},
        "parallel_tool_calls": echo.get("parallel_tool_calls", True),
        "tool_choice": echo.get("tool_choice") or "auto",
        "tools": echo.get("tools") or [],
        "temperature": echo.get("temperature"),
        "top_p": echo.get("top_p"),
        "max_output_tokens": echo.get("max_output_tokens"),
        "text": echo.get("text") or {"format": {"type": "text"}},
        "truncation": "disabled",
        "user": echo.get("user"),
        "store": True,
        "usage": _responses_usage(response) if status != Response.Status.IN_PROGRESS else None,
        "core": core_extension(response),
    }


class ResponseEvents:
    """A turn's events as the Responses stream's typed events, in the order OpenAI sends them:
    `response.created`, `response.in_progress`, per output item `response.output_item.added`, its
    content (`response.content_part.added`, `response.output_text.delta`, `….done`, or a function
    call's arguments), `response.output_item.done`, then `response.completed` (or `….failed`,
    `….incomplete`) carrying the whole response."""

    def __init__(self, *, echo: dict):
        self.echo = echo
        self.sequence = 0
        self.index = 0
        self.visible: list[Item] = []

    def _event(self, kind: str, **fields) -> bytes:
        body = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()

    def render(self, events) -> Iterator[bytes]:
        for event in events:
            if event.kind == "created":
                snapshot = responses_body(event.response, [], echo=self.echo)
                yield self._event("response.created", response=snapshot)
                yield self._event("response.in_progress", response=snapshot)
            elif event.kind == "item" and is_visible(event.item):
                yield from self._item(event.item)
            elif event.kind == "completed":
                body = responses_body(event.response, self.visible, echo=self.echo)
                kind = {Response.Status.FAILED: "response.failed", Response.Status.INCOMPLETE: "response.incomplete"}
                yield self._event(kind.get(event.response.status, "response.completed"), response=body)

    def _item(self, item: Item) -> Iterator[bytes]:
        index, self.index = self.index, self.index + 1
        self.visible.append(item)
        yield self._event("response.output_item.added", output_index=index, item=responses_output_item(item, status="in_progress"))
        text = _content_text(item)
        if item.kind == Item.Kind.MESSAGE:
            common = {"item_id": item.id, "output_index": index, "content_index": 0}
            yield self._event("response.content_part.added", **common, part=output_text_part(""))
            yield self._event("response.output_text.delta", **common, delta=text, logprobs=[])
            yield self._event("response.output_text.done", **common, text=text, logprobs=[])
            yield self._event("response.content_part.done", **common, part=output_text_part(text))
        else:
            common = {"item_id": item.id, "output_index": index}
            yield self._event("response.function_call_arguments.delta", **common, delta=text)
            yield self._event("response.function_call_arguments.done", **common, arguments=text, name=item.name)
        yield self._event("response.output_item.done", output_index=index, item=responses_output_item(item))
