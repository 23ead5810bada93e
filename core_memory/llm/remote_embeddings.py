"""The OpenAI embeddings protocol: `POST {base_url}/embeddings`, which OpenAI, Azure, vLLM, TEI,
Infinity, Ollama, LM Studio and llama.cpp's server serve, for the models of CORE_EMBEDDING_MODELS.

Texts go in batches of the model's `batch_size`, each with the model's query or passage prefix
(e5 and bge want "query: " and "passage: "). Each batch is one request: a timeout per attempt,
retries with backoff (core_memory.llm.http), and the model's circuit breaker
(core_memory.llm.breaker) asked first. An answer is read strictly before anything is kept: as many
vectors as texts, each of the configured dimensions, every number finite and the vector not zero;
an HTML page, a vector too short or too long, a NaN, a missing vector is a `ProviderError`
(`invalid_model_response`) naming what was wrong, logged as `llm.embedding.invalid`, and nothing of
the batch is answered. Vectors come back scaled to unit length, so their inner product is their
cosine, as the in-process model's.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from core_memory.llm.breaker import breaker_guarded
from core_memory.llm.http import Retries, json_post
from core_memory.llm.protocol import ProviderError, TokenCount

logger = logging.getLogger(__name__)

PASSAGE_RETRIES = Retries(attempts=3, backoff_seconds=0.5, most_backoff_seconds=4.0)
# A search's question: what its time budget allows (the deadline ends it sooner).
QUERY_RETRIES = Retries(attempts=2, backoff_seconds=0.1, most_backoff_seconds=0.5)
QUERY = "query"
PASSAGE = "passage"


@dataclass(frozen=True)
class Embedded:
    """Vectors (len(texts), dimensions), float32 of unit length, in the texts' order, and what they cost."""

    vectors: np.ndarray
    usage: TokenCount


def api_key_of(config: Mapping) -> str | None:
    """The key read from the variable the model names; its absence is the model being unavailable."""
    variable = config.get("api_key_env")
    if not variable:
        return None
    api_key = os.environ.get(variable)
    if not api_key:
        raise ProviderError("model_unavailable", f"The model's API key variable {variable} is not set.")
    return api_key


def invalid(config: Mapping, reason: str, *, kind: str) -> ProviderError:
    """An answer that is not what the protocol promises: logged, and the call fails."""
    logger.warning(f"llm.{kind}.invalid", extra={"model": config["id"], "reason": reason})
    return ProviderError("invalid_model_response", f"The model {config['id']!r} answered {reason}.")


def _token_count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40 else 0


def _usage(answer: dict) -> TokenCount:
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    prompt = _token_count(usage.get("prompt_tokens"))
    return TokenCount(input_tokens=prompt, total_tokens=_token_count(usage.get("total_tokens")) or prompt)


def _vectors(config: Mapping, answer, *, count: int) -> np.ndarray:
    """The batch's vectors from the answer, checked (the module's docstring), in the texts' order."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise invalid(config, "no list of embeddings (`data`)", kind="embedding")
    if len(data) != count:
        raise invalid(config, f"{len(data)} vectors for {count} texts", kind="embedding")
    places = [item.get("index", position) for position, item in enumerate(data)]
    if sorted(places) != list(range(count)):
        raise invalid(config, "vectors whose `index` values are not the texts' positions", kind="embedding")
    vectors = np.empty((count, config["dimensions"]), dtype=np.float32)
    for place, item in zip(places, data, strict=True):
        vectors[place] = _vector(config, item.get("embedding"))
    return vectors


def _vector(config: Mapping, values) -> np.ndarray:
    if not isinstance(values, list) or not all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
        raise invalid(config, "an embedding that is not a list of numbers", kind="embedding")
    if len(values) != config["dimensions"]:
        raise invalid(config, f"a vector of {len(values)} dimensions where {config['dimensions']} are configured", kind="embedding")
    vector = np.asarray(values, dtype=np.float64)
    if not np.isfinite(vector).all():
        raise invalid(config, "a vector holding NaN or an infinity", kind="embedding")
    norm = float(np.linalg.norm(vector))
    if norm == 0.0 or not np.isfinite(norm):
        raise invalid(config, "a vector of length zero", kind="embedding")
    return (vector / norm).astype(np.float32)


def texts_embed(config: Mapping, texts: Sequence[str], *, kind: str, deadline: float | None = None) -> Embedded:
    """`texts` embedded by the model of `config` (a CORE_EMBEDDING_MODELS entry) as queries or
    passages (`kind`), batch by batch; raises ProviderError, having kept nothing, when one fails.
    With `deadline` (a `time.monotonic()` value) no attempt goes beyond it."""
    texts = [str(text) for text in texts]
    vectors = np.empty((len(texts), config["dimensions"]), dtype=np.float32)
    usage = TokenCount()
    prefix = config["query_prefix"] if kind == QUERY else config["passage_prefix"]
    for start in range(0, len(texts), config["batch_size"]):
        batch = [prefix + text for text in texts[start : start + config["batch_size"]]]
        embedded = _batch_embed(config, batch, deadline=deadline, retries=QUERY_RETRIES if kind == QUERY else PASSAGE_RETRIES)
        vectors[start : start + len(batch)] = embedded.vectors
        usage += embedded.usage
    return Embedded(vectors=vectors, usage=usage)


def _batch_embed(config: Mapping, batch: list[str], *, deadline: float | None, retries: Retries) -> Embedded:
    api_key = api_key_of(config)
    body: dict = {"model": config["model"], "input": batch, "encoding_format": "float"}
    if config["request_dimensions"]:
        body["dimensions"] = config["dimensions"]

    def call() -> Embedded:
        answer = json_post(
            url=config["base_url"] + "/embeddings", body=body, api_key=api_key, timeout=config["timeout_seconds"],
            retries=retries, model_id=config["id"], deadline=deadline,
        )
        return Embedded(vectors=_vectors(config, answer, count=len(batch)), usage=_usage(answer))

    return breaker_guarded(kind="embedding", model_id=config["id"], call=call)
