"""What a search asks of the models an index names: the question's vector, by the index's
embedding model (memory.search.vectors compares it), and what the search says it did (its trace).

A model served elsewhere is asked within the search's time for models (CORE_SEARCH_MODEL_SECONDS,
the question's vector and the rerank together): a model that is down, slow or answers nonsense
leaves the search to full text alone, and the trace says so. What is sent there passes the key's
PII redaction (placeholders numbered among the texts sent, as a turn's model would see them).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings

from core_memory.base.callers import Caller
from core_memory.llm.configuration import IN_PROCESS_EMBEDDING_MODEL
from core_memory.llm.embedding_models import EmbeddingModel, query_embed_by, query_embed_begin_by
from core_memory.llm.protocol import ProviderError, TokenCount
from core_memory.pii.placeholders import RedactionError
from core_memory.pii.services import texts_redact_alone
from memory.search.ranking import SIMILARITY_CEILING, SIMILARITY_FLOOR

logger = logging.getLogger(__name__)

# The trace's word for a search without the vectors its index has.
FULL_TEXT_ONLY = "full_text_only"


@dataclass
class SearchTrace:
    """What a search did with the index's models: `embedding_model` whose vectors it compared
    (None: none), `vectors` (`used`, `none` for an index without them, or `full_text_only` with
    `vectors_error` the model's failure), and `rerank` (memory.search.reranking) when the index
    names a rerank model. `chat_calls`: the tokens of each call to a chat model it made (a chat
    model reranking), which who retrieves meters (memory.retrieval): a search itself stays a read."""

    embedding_model: str | None = None
    vectors: str = "none"
    vectors_error: str | None = None
    rerank: dict | None = None
    chat_calls: list[TokenCount] = field(default_factory=list)

    def told_of_models(self) -> bool:
        """The search asked a model served elsewhere, or meant to and could not."""
        return self.rerank is not None or self.vectors == FULL_TEXT_ONLY or self.embedding_model not in (None, IN_PROCESS_EMBEDDING_MODEL)

    def as_dict(self) -> dict:
        answer = {"embedding_model": self.embedding_model, "vectors": self.vectors}
        if self.vectors_error:
            answer["vectors_error"] = self.vectors_error
        if self.rerank is not None:
            answer["rerank"] = self.rerank
        return answer


def search_deadline() -> float:
    """The `time.monotonic()` by which every model a search asks must have answered."""
    return time.monotonic() + settings.CORE_SEARCH_MODEL_SECONDS


def texts_for_model(*, caller: Caller, texts: list[str]) -> list[str]:
    """The texts as a model served elsewhere may see them: redacted when the caller's key has
    PII redaction. Raises RedactionError."""
    key = caller.key
    return texts_redact_alone(texts) if key is not None and key.pii_redaction else texts


@dataclass(frozen=True)
class Question:
    """The question as the embedding model is sent it (None: it may not be sent), and the asking
    organisation, which alone finds it remembered."""

    text: str | None
    scope: str


def question_vector_begin(*, caller: Caller, model: EmbeddingModel, query: str) -> Question:
    """Start embedding the search's question on a thread of its own; `question_vector` takes it."""
    if model.in_process:
        text = query
    else:
        try:
            text = texts_for_model(caller=caller, texts=[query])[0]
        except RedactionError:
            logger.warning("search.question.redaction_failed", extra={"model": model.id})
            return Question(text=None, scope=caller.organisation_id)
    query_embed_begin_by(model, text, scope=caller.organisation_id)
    return Question(text=text, scope=caller.organisation_id)


def question_vector(*, model: EmbeddingModel, question: Question, deadline: float, trace: SearchTrace) -> np.ndarray | None:
    """The question's vector by the index's model, or None (told to `trace`): the search then runs
    on full text alone."""
    trace.embedding_model = model.id
    if question.text is None:
        trace.vectors, trace.vectors_error = FULL_TEXT_ONLY, "pii_redaction_failed"
        return None
    try:
        vector, _usage = query_embed_by(model, question.text, scope=question.scope, deadline=deadline)
    except ProviderError as error:
        logger.warning("search.question.vector_failed", extra={"model": model.id, "code": error.code})
        trace.vectors, trace.vectors_error = FULL_TEXT_ONLY, error.code
        return None
    trace.vectors = "used"
    return vector


def similarity_on_scale(found: list, *, model: EmbeddingModel) -> None:
    """The candidates' similarities by a model served elsewhere, put on the scale the ranking's
    weights were fitted on (the in-process model's): by the model's configured band where it has
    one, else relative to these candidates (the nearest at the top of the scale, the farthest at
    its foot)."""
    scores = [record.similarity for record in found if record.similarity is not None]
    if not scores:
        return
    band = model.similarity_band or (min(scores), max(scores))
    floor, ceiling = band
    width = (ceiling - floor) or 1.0
    for record in found:
        if record.similarity is not None:
            share = (record.similarity - floor) / width
            record.similarity = SIMILARITY_FLOOR + share * (SIMILARITY_CEILING - SIMILARITY_FLOOR)
