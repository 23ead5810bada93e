"""The rerank protocols against a real HTTP server, and a chat model ordering (issue 27 items 3, 4 and 6)."""
import json
import math
import time

import pytest

from core_memory.llm.protocol import ProviderError
from core_memory.llm.rerank_models import candidates_rerank
from tests.fake_model import completion

DOCUMENTS = ["Anna fietst naar kantoor", "Bert neemt de trein naar kantoor", "Het regent"]


def later(seconds: float = 2.0) -> float:
    return time.monotonic() + seconds


def test_cohere_s_protocol_sends_documents_and_top_n_and_reads_relevance_scores(fake_rerank):
    """Issue 27 item 3: `query`, `documents`, `top_n` → `results[{index, relevance_score}]`."""
    config = fake_rerank.config("ext-rerank", model="rerank-v3.5")

    reranked = candidates_rerank(config, query="hoe gaat Bert naar kantoor", documents=DOCUMENTS, deadline=later())

    [request] = fake_rerank.requests
    assert request.path == "/rerank"
    assert request.body == {"model": "rerank-v3.5", "query": "hoe gaat Bert naar kantoor", "documents": DOCUMENTS, "top_n": 3}
    assert reranked.scores == [pytest.approx(2 / 5), pytest.approx(3 / 5), 0.0]
    assert reranked.usage.total_tokens == 11


def test_tei_s_protocol_sends_texts_and_reads_its_bare_list(fake_rerank):
    """Issue 27 item 3: TEI's `/rerank` takes `texts` and answers a bare list of `{index, score}`."""
    reranked = candidates_rerank(fake_rerank.config("tei", protocol="tei"), query="Anna kantoor", documents=DOCUMENTS, deadline=later())

    [request] = fake_rerank.requests
    assert request.body == {"query": "Anna kantoor", "texts": DOCUMENTS, "truncate": True}
    assert reranked.scores == [1.0, 0.5, 0.0]


@pytest.mark.parametrize(
    "answer, reason",
    [
        ({"results": [{"index": 0, "relevance_score": 0.5}]}, "1 scores for 3 documents"),
        ([{"index": 0, "score": 0.1}, {"index": 1, "score": 0.2}, {"index": 7, "score": 0.3}], "a score for document 7, which was not sent or was scored twice"),
        ([{"index": 0, "score": 0.1}, {"index": 0, "score": 0.2}, {"index": 1, "score": 0.3}], "a score for document 0, which was not sent or was scored twice"),
        ({"results": [{"index": 0, "relevance_score": math.nan}, {"index": 1, "relevance_score": 0.1}, {"index": 2, "relevance_score": 0.1}]}, "a score that is not a finite number"),
        ({"results": [{"relevance_score": 0.1}]}, "a score without a document `index`"),
        ({"data": []}, "no list of scores (`results`, or TEI's bare list)"),
    ],
)
def test_a_wrong_answer_is_a_clear_error(fake_rerank, answer, reason):
    """Issue 27 item 4: too few scores, NaN: a clear error."""
    fake_rerank.answer(answer)

    with pytest.raises(ProviderError) as raised:
        candidates_rerank(fake_rerank.config("ext-rerank"), query="q", documents=DOCUMENTS, deadline=later())

    assert (raised.value.code, raised.value.message) == ("invalid_model_response", f"The model 'ext-rerank' answered {reason}.")


def test_a_slow_reranker_is_given_up_at_the_deadline(fake_rerank):
    """Issue 27 item 4: a rerank server that is slow costs at most the search's time."""
    fake_rerank.answer({"results": []}, delay=1.0, times=None)
    started = time.monotonic()

    with pytest.raises(ProviderError) as raised:
        candidates_rerank(fake_rerank.config("ext-rerank", timeout_seconds=5), query="q", documents=DOCUMENTS, deadline=later(0.2))

    assert raised.value.code == "model_timeout"
    assert time.monotonic() - started < 0.5


def test_a_chat_model_orders_the_candidates_list_wise(fake_model, settings):
    """Issue 27 item 3: optionally a chat model from CORE_MODELS reranks (a list-wise prompt)."""
    fake_model.reply(json.dumps({"order": [1, 0]}), usage=(40, 4))
    config = {"id": "llm-rerank", "protocol": "chat", "chat_model": "fake-chat", "timeout_seconds": 2.0}

    reranked = candidates_rerank(config, query="hoe gaat Bert", documents=DOCUMENTS, deadline=later())

    [request] = fake_model.requests
    assert request.body["response_format"]["json_schema"]["name"] == "core_rerank"
    assert json.loads(request.body["messages"][1]["content"]) == {
        "question": "hoe gaat Bert", "passages": [{"number": 0, "text": DOCUMENTS[0]}, {"number": 1, "text": DOCUMENTS[1]}, {"number": 2, "text": DOCUMENTS[2]}],
    }
    # Listed ones first in its order; the one it left out below them.
    assert reranked.scores[1] > reranked.scores[0] > reranked.scores[2]
    assert reranked.usage.total_tokens == 44


def test_a_chat_reranker_that_answers_no_order_is_a_clear_error(fake_model):
    fake_model.answer(completion("Passage 2 is best."))
    config = {"id": "llm-rerank", "protocol": "chat", "chat_model": "fake-chat", "timeout_seconds": 2.0}

    with pytest.raises(ProviderError) as raised:
        candidates_rerank(config, query="q", documents=DOCUMENTS, deadline=later())

    assert raised.value.message == "The model 'llm-rerank' answered no JSON object with an \"order\" list."
