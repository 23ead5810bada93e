"""The OpenAI embeddings protocol against a real HTTP server (issue 27 items 1, 4 and 6)."""
import logging
import math
import time

import numpy as np
import pytest

from core_memory.llm.breaker import OPEN, breaker_for
from core_memory.llm.protocol import ProviderError
from core_memory.llm.remote_embeddings import PASSAGE, QUERY, texts_embed


def test_texts_go_in_batches_with_the_models_prefix_and_come_back_as_unit_vectors(fake_embedding):
    """Issue 27 item 1: batch size and the query/passage prefixes e5 and bge want."""
    config = fake_embedding.config("ext", batch_size=2, passage_prefix="passage: ", query_prefix="query: ", model="e5-large")

    embedded = texts_embed(config, ["een", "twee", "drie"], kind=PASSAGE)
    question = texts_embed(config, ["vier"], kind=QUERY)

    assert [request.body["input"] for request in fake_embedding.requests] == [
        ["passage: een", "passage: twee"], ["passage: drie"], ["query: vier"],
    ]
    assert {request.path for request in fake_embedding.requests} == {"/v1/embeddings"}
    assert {request.body["model"] for request in fake_embedding.requests} == {"e5-large"}
    assert embedded.vectors.shape == (3, 64) and embedded.vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(embedded.vectors, axis=1), 1.0)
    assert question.vectors.shape == (1, 64)


def test_the_api_key_comes_from_the_variable_the_model_names_and_dimensions_are_asked_only_when_configured(fake_embedding, monkeypatch):
    monkeypatch.setenv("EMBED_KEY", "sk-embed")

    texts_embed(fake_embedding.config("ext", api_key_env="EMBED_KEY", request_dimensions=True), ["een"], kind=PASSAGE)
    texts_embed(fake_embedding.config("ext"), ["een"], kind=PASSAGE)

    first, second = fake_embedding.requests
    assert first.headers["Authorization"] == "Bearer sk-embed" and first.body["dimensions"] == 64
    assert "Authorization" not in second.headers and "dimensions" not in second.body
    assert first.body["encoding_format"] == "float"


def test_a_missing_api_key_variable_is_the_model_unavailable_before_any_call(fake_embedding, monkeypatch):
    monkeypatch.delenv("EMBED_KEY", raising=False)

    with pytest.raises(ProviderError) as raised:
        texts_embed(fake_embedding.config("ext", api_key_env="EMBED_KEY"), ["een"], kind=PASSAGE)

    assert raised.value.code == "model_unavailable"
    assert fake_embedding.requests == []


def test_vectors_are_put_in_the_texts_order_by_their_index(fake_embedding):
    """OpenAI numbers each vector with its text's `index`; a server may list them in any order."""
    answer = fake_embedding.embeddings([[1.0] + [0.0] * 63, [0.0, 2.0] + [0.0] * 62])
    answer["data"].reverse()
    fake_embedding.answer(answer)

    vectors = texts_embed(fake_embedding.config("ext"), ["een", "twee"], kind=PASSAGE).vectors

    assert vectors[0][0] == 1.0 and vectors[1][1] == 1.0


def test_the_tokens_the_server_counts_come_back_as_usage(fake_embedding):
    embedded = texts_embed(fake_embedding.config("ext"), ["Anna fietst naar kantoor"], kind=PASSAGE)

    assert (embedded.usage.input_tokens, embedded.usage.total_tokens) == (4, 4)


@pytest.mark.parametrize(
    "answer, reason",
    [
        (lambda server: server.embeddings([[0.1] * 63, [0.1] * 63]), "a vector of 63 dimensions where 64 are configured"),
        (lambda server: server.embeddings([[0.1] * 64]), "1 vectors for 2 texts"),
        (lambda server: server.embeddings([[math.nan] * 64, [0.1] * 64]), "a vector holding NaN or an infinity"),
        (lambda server: server.embeddings([[0.0] * 64, [0.1] * 64]), "a vector of length zero"),
        (lambda server: server.embeddings([[None] * 64, [0.1] * 64]), "an embedding that is not a list of numbers"),
        (lambda server: {"object": "list"}, "no list of embeddings (`data`)"),
    ],
)
def test_a_wrong_answer_is_a_clear_error_in_the_log_and_nothing_is_answered(fake_embedding, caplog, answer, reason):
    """Issue 27 item 4: wrong dimensions, NaN, too few vectors: a clear error, nothing stored."""
    fake_embedding.answer(answer(fake_embedding))

    with caplog.at_level(logging.WARNING), pytest.raises(ProviderError) as raised:
        texts_embed(fake_embedding.config("ext"), ["een", "twee"], kind=PASSAGE)

    assert raised.value.code == "invalid_model_response"
    assert raised.value.message == f"The model 'ext' answered {reason}."
    assert [(record.msg, record.reason) for record in caplog.records if record.msg == "llm.embedding.invalid"] == [
        ("llm.embedding.invalid", reason)
    ]


def test_an_html_page_with_200_is_no_embedding(fake_embedding):
    """Issue 27 item 4: a proxy's HTML page is a clear error, not a JSON parse failure."""
    fake_embedding.html(200)

    with pytest.raises(ProviderError) as raised:
        texts_embed(fake_embedding.config("ext"), ["een"], kind=PASSAGE)

    assert (raised.value.code, raised.value.message) == ("invalid_model_response", "The model answered an HTML page (HTTP 200), not JSON.")


def test_a_bad_gateway_page_is_retried_and_then_named_as_html(fake_embedding):
    fake_embedding.html(502, times=None)

    with pytest.raises(ProviderError) as raised:
        texts_embed(fake_embedding.config("ext"), ["een"], kind=PASSAGE)

    assert (raised.value.code, raised.value.message) == ("model_error", "The model answered HTTP 502 with an HTML page.")
    assert len(fake_embedding.requests) == 3


def test_a_server_that_is_overloaded_once_is_retried_with_backoff(fake_embedding):
    """TEI's error shape: `{"error", "error_type"}`."""
    fake_embedding.answer(fake_embedding.tei_error(429, "Overloaded"), status=429)

    embedded = texts_embed(fake_embedding.config("ext"), ["een"], kind=PASSAGE)

    assert embedded.vectors.shape == (1, 64)
    assert len(fake_embedding.requests) == 2


def test_a_refused_request_is_not_retried_and_names_the_servers_error_type_not_its_message(fake_embedding):
    """OpenAI's error shape; its message may quote the text sent, so only its type is kept."""
    fake_embedding.answer({"error": {"message": "This model's maximum context length is 8192 tokens: 'Anna …'",
                                     "type": "invalid_request_error", "code": "context_length_exceeded"}}, status=400)

    with pytest.raises(ProviderError) as raised:
        texts_embed(fake_embedding.config("ext"), ["Anna …"], kind=PASSAGE)

    assert raised.value.message == "The model answered HTTP 400 (context_length_exceeded)."
    assert len(fake_embedding.requests) == 1


def test_a_slow_server_times_out_and_a_query_never_waits_beyond_its_deadline(fake_embedding):
    fake_embedding.answer(fake_embedding.embeddings([[0.1] * 64]), delay=0.5, times=None)
    config = fake_embedding.config("ext", timeout_seconds=0.05)

    with pytest.raises(ProviderError) as slow:
        texts_embed(config, ["een"], kind=PASSAGE)
    started = time.monotonic()
    with pytest.raises(ProviderError) as late:
        texts_embed(fake_embedding.config("ext2", timeout_seconds=5), ["een"], kind=QUERY, deadline=time.monotonic() + 0.2)

    assert slow.value.code == "model_timeout"
    assert late.value.code == "model_timeout"
    assert time.monotonic() - started < 0.4


def test_after_failures_in_a_row_the_breaker_opens_and_no_call_is_made(fake_embedding, settings):
    """Issue 27 item 4: a circuit breaker per model."""
    settings.CORE_MODEL_BREAKER_FAILURES = 2
    fake_embedding.fail(500, times=None)
    config = fake_embedding.config("ext")

    for _ in range(2):
        with pytest.raises(ProviderError):
            texts_embed(config, ["een"], kind=PASSAGE)
    sent = len(fake_embedding.requests)
    with pytest.raises(ProviderError) as refused:
        texts_embed(config, ["een"], kind=PASSAGE)

    assert breaker_for(kind="embedding", model_id="ext").state == OPEN
    assert refused.value.code == "model_unavailable"
    assert refused.value.message.startswith("The model 'ext' failed 2 calls in a row; it is tried again in ")
    assert len(fake_embedding.requests) == sent
    assert breaker_for(kind="embedding", model_id="other").allow()


def test_an_unreachable_server_is_a_provider_error(fake_embedding):
    config = fake_embedding.config("ext")
    fake_embedding.stop()

    with pytest.raises(ProviderError) as raised:
        texts_embed(config, ["een"], kind=PASSAGE)

    assert raised.value.code == "model_unreachable"
