"""Chat model providers: the registry of protocols, and `chat_completion`, the one
entry point callers use. It picks the provider named by the model's `CORE_MODELS` entry,
calls it, and meters the tokens for the organisation and month (core_memory.llm.metering).
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from datetime import datetime

from django.conf import settings

from core_memory.llm.metering import token_usage_record
from core_memory.llm.openai import OpenAIChatProvider
from core_memory.llm.protocol import ChatCompletion, ChatProvider, ProviderError
from core_memory.organisations.models import Organisation

logger = logging.getLogger(__name__)

PROVIDERS = {"openai": OpenAIChatProvider}


def model_config_for(model: Mapping | str) -> Mapping:
    """A `CORE_MODELS` entry, given the entry itself or its id."""
    if isinstance(model, Mapping):
        return model
    for entry in settings.CORE_MODELS:
        if entry["id"] == model:
            return entry
    raise ProviderError("model_unavailable", f"The model {model!r} is not configured.")


def provider_for(model: Mapping | str, *, deadline: float | None = None) -> ChatProvider:
    """The model's provider; with `deadline` (a `time.monotonic()` value) no call of it lasts beyond it."""
    config = model_config_for(model)
    provider_class = PROVIDERS.get(config.get("provider", "openai"))
    if provider_class is None:
        raise ProviderError("model_unavailable", f"Unknown provider {config.get('provider')!r}.")
    api_key_env = config.get("api_key_env")
    api_key = os.environ.get(api_key_env) if api_key_env else None
    if api_key_env and not api_key:
        raise ProviderError("model_unavailable", f"The model's API key variable {api_key_env} is not set.")
    return provider_class(
        model_id=config["id"], base_url=config["base_url"], api_key=api_key, timeout=settings.CORE_MODEL_TIMEOUT_SECONDS,
        deadline=deadline,
    )


def chat_completion(
    *,
    organisation: Organisation,
    model: Mapping | str,
    messages: list[dict],
    tools: list[dict] | None = None,
    response_format: dict | None = None,
    options: Mapping | None = None,
    now: datetime | None = None,
) -> ChatCompletion:
    """One metered model call. Raises ProviderError; never holds a database transaction open while waiting."""
    provider = provider_for(model)
    started = time.monotonic()
    try:
        answer = provider.complete(messages=messages, tools=tools, response_format=response_format, options=options)
    except ProviderError as error:
        logger.warning("llm.call.failed", extra={"organisation": organisation.id, "code": error.code})
        raise
    logger.info(
        "llm.call.completed",
        extra={"organisation": organisation.id, "tokens": answer.usage.total_tokens, "seconds": round(time.monotonic() - started, 3)},
    )
    token_usage_record(organisation=organisation, usage=answer.usage, at=now)
    return answer
