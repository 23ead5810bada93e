import json

import pytest

from core_memory.llm.models import TokenUsage
from core_memory.threads.models import Item, Thread
from core_memory.turns.models import Response

pytestmark = pytest.mark.django_db


def test_a_plain_turn_answers_the_models_message_and_stores_it_on_a_new_thread(tenant, fake_model):
    """R-7.1: id, thread_id, status, output, usage, trace.memory."""
    fake_model.reply("Goedemorgen!", usage=(12, 3))

    response = tenant.client().post("/v1/responses", {"model": "fake-chat", "input": "Hallo"}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["id"].startswith("resp_")
    assert body["thread_id"].startswith("thr_")
    assert body["status"] == "completed"
    assert [(item["role"], item["kind"], item["content"]) for item in body["output"]] == [("assistant", "message", "Goedemorgen!")]
    assert body["usage"] == {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15}
    assert set(body["trace"]["memory"]) >= {"source", "index_id", "injected", "sections"}
    sent = fake_model.requests[0].body
    assert sent["model"] == "fake-chat"
    assert sent["messages"] == [{"role": "user", "content": "Hallo"}]
    assert "tools" not in sent
    assert TokenUsage.objects.get(organisation=tenant.organisation).total_tokens == 15
