"""The rerank stage: the index's rerank model (CORE_RERANK_MODELS, named by its `rerank_model`)
reorders the fused ranking's best `rerank_depth` candidates, reading the question and each
candidate together (a cross-encoder, or a chat model ordering them list-wise).

It runs within the search's time for models (memory.search.question): a rerank model that is
down, slow or answers nonsense leaves the fused order as it stood, and the trace says why. The
texts sent pass the key's PII redaction. The reordered candidates take the fused scores in their
order, so a score still falls with the place and reads on the same scale. A chat model's call
is metered like every chat call (by memory.retrieval, from the trace), and is not made once the
organisation has used its monthly token limit.
"""
from __future__ import annotations

import logging
import time
from core_memory.base.callers import Caller
from core_memory.llm.protocol import ProviderError
from core_memory.llm.metering import token_limit_reached
from core_memory.llm.rerank_models import CHAT, candidates_rerank, rerank_model_for
from core_memory.pii.placeholders import RedactionError
from memory.models import MemoryRecord
from memory.search.question import SearchTrace, texts_for_model
from stores.models import KnowledgeIndex


def ranking_reranked(
    ranking: list[tuple[MemoryRecord, float]],
    *,
    caller: Caller,
    index: KnowledgeIndex,
    query: str,
    deadline: float,
    trace: SearchTrace,
) -> list[tuple[MemoryRecord, float]]:
    """`ranking` (record, score; best first) with its best `index.rerank_depth` in the rerank
    model's order, or as it was (the module's docstring)."""
    top = ranking[: index.rerank_depth]
    trace.rerank = {"model": index.rerank_model, "ran": False, "candidates": len(top)}
    config = rerank_model_for(index.rerank_model)
    if config is None:
        trace.rerank["error"] = "model_not_configured"
        return ranking
    if len(top) < 2:
        return ranking
    started = time.monotonic()
    try:
        sent = texts_for_model(caller=caller, texts=[query, *(record.text for record, _score in top)])
        if started >= deadline:
            raise ProviderError("model_timeout", "The search's time for models was spent before the rerank.")
        if config["protocol"] == CHAT and token_limit_reached(organisation=index.organisation):
            # As a turn is refused before it calls a model: the fused order stands.
            raise ProviderError("token_limit_reached", "The organisation has used its monthly token limit.")
        reranked = candidates_rerank(config, query=sent[0], documents=sent[1:], deadline=deadline)
        scores = reranked.scores
    except (ProviderError, RedactionError) as error:
        code = getattr(error, "code", "model_error")
        logging.getLogger(__name__).warning("search.rerank.failed", extra={"model": config["id"], "code": code})
        trace.rerank.update(error=code, milliseconds=round((time.monotonic() - started) * 1000))
        return ranking
    if config["protocol"] == CHAT:
        # A chat model's tokens are metered as every chat call's, by who retrieves (memory.retrieval).
        trace.chat_calls.append(reranked.usage)
    order = sorted(range(len(top)), key=lambda position: (-scores[position], position))
    reranked = [(top[position][0], top[place][1]) for place, position in enumerate(order)]
    trace.rerank.update(ran=True, milliseconds=round((time.monotonic() - started) * 1000))
    return reranked + ranking[len(top) :]
