"""The rerank protocols, for the models of CORE_RERANK_MODELS served over HTTP:

- `rerank` (Cohere, Jina, vLLM, Infinity): `POST {base_url}/rerank` with `model`, `query`,
  `documents` and `top_n`, answered by `{"results": [{"index", "relevance_score"}, …]}`;
- `tei` (Hugging Face TEI): `POST {base_url}/rerank` with `query`, `texts` and `truncate`,
  answered by a bare list `[{"index", "score"}, …]`.

Either answer shape is read whatever the protocol asked, since gateways translate. An answer is
read strictly: one finite score for every document, each document once; anything else (an HTML
page, too few scores, an index out of range, a NaN) is a `ProviderError` (`invalid_model_response`)
logged as `llm.rerank.invalid`. One request per search, within its deadline, behind the model's
circuit breaker.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core_memory.llm.breaker import breaker_guarded
from core_memory.llm.http import Retries, json_post
from core_memory.llm.protocol import ProviderError, TokenCount
from core_memory.llm.remote_embeddings import api_key_of, invalid

RERANK_RETRIES = Retries(attempts=2, backoff_seconds=0.1, most_backoff_seconds=0.5)


@dataclass(frozen=True)
class Reranked:
    """One score per document, in the documents' order (higher: more relevant), and what it cost."""

    scores: list[float]
    usage: TokenCount


def _body(config: Mapping, *, query: str, documents: Sequence[str]) -> dict:
    if config["protocol"] == "tei":
        return {"query": query, "texts": list(documents), "truncate": True}
    return {"model": config["model"], "query": query, "documents": list(documents), "top_n": len(documents)}


def _results(config: Mapping, answer) -> list:
    """The answer's list of scored documents, in either shape."""
    if isinstance(answer, list):
        return answer
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list):
        raise invalid(config, "no list of scores (`results`, or TEI's bare list)", kind="rerank")
    return results


def _score(config: Mapping, item) -> tuple[int, float]:
    if not isinstance(item, dict):
        raise invalid(config, "a score that is not an object", kind="rerank")
    index = item.get("index")
    score = item.get("relevance_score", item.get("score"))
    if isinstance(index, bool) or not isinstance(index, int):
        raise invalid(config, "a score without a document `index`", kind="rerank")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise invalid(config, "a score that is not a finite number", kind="rerank")
    return index, float(score)


def scores_read(config: Mapping, answer, *, count: int) -> list[float]:
    """One score per document from the answer, in the documents' order (the module's docstring)."""
    scores: dict[int, float] = {}
    for item in _results(config, answer):
        index, score = _score(config, item)
        if not 0 <= index < count or index in scores:
            raise invalid(config, f"a score for document {index}, which was not sent or was scored twice", kind="rerank")
        scores[index] = score
    if len(scores) != count:
        raise invalid(config, f"{len(scores)} scores for {count} documents", kind="rerank")
    return [scores[index] for index in range(count)]


def _usage(answer) -> TokenCount:
    usage = answer.get("usage") if isinstance(answer, dict) else None
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    if isinstance(total, bool) or not isinstance(total, int) or not 0 <= total < 2**40:
        return TokenCount()
    return TokenCount(input_tokens=total, total_tokens=total)


def documents_rerank(config: Mapping, *, query: str, documents: Sequence[str], deadline: float | None) -> Reranked:
    """The documents scored against the query by the rerank model of `config`; raises ProviderError."""
    if not documents:
        return Reranked(scores=[], usage=TokenCount())
    api_key = api_key_of(config)

    def call() -> Reranked:
        answer = json_post(
            url=config["base_url"] + "/rerank", body=_body(config, query=query, documents=documents), api_key=api_key,
            timeout=config["timeout_seconds"], retries=RERANK_RETRIES, model_id=config["id"], deadline=deadline,
        )
        return Reranked(scores=scores_read(config, answer, count=len(documents)), usage=_usage(answer))

    return breaker_guarded(kind="rerank", model_id=config["id"], call=call)
