"""The OpenAI Chat Completions protocol: `POST {base_url}/chat/completions`, which
OpenAI, vLLM, llama.cpp's server, Ollama and most gateways serve. Retries with backoff on
429, 5xx and timeouts; answers parsed to what Core can store."""
from __future__ import annotations

import json
from collections.abc import Mapping

from core_memory.base.storable import UNSTORABLE_CHARACTERS
from core_memory.llm.http import Retries, json_post
from core_memory.llm.protocol import ChatCompletion, ProviderError, TokenCount, ToolCall

# Bounded and small: a turn waits at most about BACKOFF_SECONDS * (2 ** MAX_ATTEMPTS) for retries.
MAX_ATTEMPTS = 3
BACKOFF_SECONDS = 0.25
MAX_BACKOFF_SECONDS = 2.0


class OpenAIChatProvider:
    """The OpenAI Chat Completions protocol: `POST {base_url}/chat/completions`."""

    def __init__(self, *, model_id: str, base_url: str, api_key: str | None, timeout: float, deadline: float | None = None):
        """`deadline` (a `time.monotonic()` value): no attempt starts or lasts beyond it."""
        self.model_id = model_id
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.timeout = timeout
        self.deadline = deadline

    def complete(
        self,
        *,
        messages: list[dict],
        tools: list[dict] | None = None,
        response_format: dict | None = None,
        options: Mapping | None = None,
    ) -> ChatCompletion:
        """`options` are further request fields (temperature, max_tokens, …); they never replace
        the model, the messages or the tools."""
        body: dict = {**(options or {}), "model": self.model_id, "messages": messages}
        body.pop("tools", None)
        if tools:
            body["tools"] = tools
        else:
            # A tool choice without tools is refused by OpenAI's own API.
            body.pop("tool_choice", None)
            body.pop("parallel_tool_calls", None)
        if response_format is not None:
            body["response_format"] = response_format
        return self._parse(self._post(body))

    def _post(self, body: dict) -> dict:
        # The module's constants read at each call: tests make the backoff short.
        retries = Retries(attempts=MAX_ATTEMPTS, backoff_seconds=BACKOFF_SECONDS, most_backoff_seconds=MAX_BACKOFF_SECONDS)
        return json_post(
            url=self.url, body=body, api_key=self.api_key, timeout=self.timeout, retries=retries, model_id=self.model_id,
            deadline=self.deadline,
        )

    @staticmethod
    def _parse(answer: dict) -> ChatCompletion:
        """The answer as Core stores it; anything it could not store is not a chat completion."""
        try:
            choice = answer["choices"][0]
            message = choice["message"]
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                raise TypeError("tool_calls")
            tool_calls = [
                ToolCall(
                    id=_storable_name(call["id"]),
                    name=_storable_name(call["function"]["name"]),
                    arguments=_arguments_text(call["function"].get("arguments")),
                )
                for call in calls
            ]
            content = message.get("content")
            if content is not None:
                _storable_text(content)
            finish_reason = choice.get("finish_reason")
            usage = answer.get("usage") or {}
            prompt_tokens = _token_count(usage.get("prompt_tokens"))
            completion_tokens = _token_count(usage.get("completion_tokens"))
            total_tokens = _token_count(usage.get("total_tokens")) or prompt_tokens + completion_tokens
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            raise ProviderError("invalid_model_response", "The model's answer is not a chat completion.") from None
        return ChatCompletion(
            content=content,
            tool_calls=tool_calls,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            usage=TokenCount(input_tokens=prompt_tokens, output_tokens=completion_tokens, total_tokens=total_tokens),
        )


# A tool call's id and name are stored on its thread item (CharField(max_length=200)).
MAX_NAME_LENGTH = 200
# A token count must fit the metering's bigint columns, summed over a month.
MAX_TOKEN_COUNT = 2**40


def _storable_text(value) -> str:
    if not isinstance(value, str):
        raise TypeError("not text")
    if UNSTORABLE_CHARACTERS.search(value):
        raise ValueError("unstorable character")
    return value


def _storable_name(value) -> str:
    text = _storable_text(value)
    if not text or len(text) > MAX_NAME_LENGTH:
        raise ValueError("empty or too long")
    return text


def _arguments_text(value) -> str:
    """A tool call's arguments as JSON text; some servers send the object itself."""
    if value is None:
        return "{}"
    if isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False)
    return _storable_text(value) or "{}"


def _token_count(value) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        raise ValueError("not a token count")
    return value
