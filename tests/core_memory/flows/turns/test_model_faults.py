"""A chat model that times out, is gone, or answers garbage: the turn ends as a clean `failed`
(R-7.1, issue 11) — HTTP 200 with `status: failed` and an error code, the turn closed, the
caller's input kept on the thread, nothing half-written, and the next turn works.

The model is a real HTTP server (tests/fake_model.py); the client code runs for real."""
import pytest

from core_memory.llm import openai
from core_memory.threads.models import Item, Response
from tests.fake_model import FakeChatModel, completion

pytestmark = pytest.mark.django_db

GARBAGE = [
    pytest.param(b"<html><body>502 Bad Gateway</body></html>", 200, id="html-page"),
    pytest.param(b'{"choices": [{"message": ', 200, id="truncated-json"),
    pytest.param(b"\x00\xff\xfe garbage", 200, id="binary"),
    pytest.param(b'{"choices": []}', 200, id="no-choices"),
    pytest.param(b'{"choices": [{"message": {"role": "assistant", "content": 42}}]}', 200, id="content-not-text"),
    pytest.param(b'"just a string"', 200, id="json-not-an-object"),
    pytest.param(b"upstream exploded", 502, id="bad-gateway-for-ever"),
]


def run_turn(tenant, **body):
    return tenant.client().post("/v1/responses", {"model": "fake-chat", "input": "Hallo", **body}, format="json")


def assert_cleanly_failed(response, code: str) -> dict:
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["error"]["code"]) == ("failed", code)
    stored = Response.objects.get(pk=body["id"])
    assert (stored.status, stored.completed_at is not None) == ("failed", True)
    assert list(Item.objects.filter(thread_id=body["thread_id"]).values_list("role", "content")) == [("user", "Hallo")]
    return body


@pytest.mark.parametrize(("payload", "status"), GARBAGE)
def test_a_model_answering_garbage_fails_the_turn_cleanly(tenant, fake_model, payload, status):
    fake_model.answer(payload, status=status, times=None if status >= 500 else 1)

    response = run_turn(tenant)

    assert_cleanly_failed(response, "model_error" if status >= 500 else "invalid_model_response")


def test_a_model_slower_than_the_timeout_fails_the_turn_cleanly_and_the_next_turn_works(tenant, settings, fake_model):
    settings.CORE_MODEL_TIMEOUT_SECONDS = 0.05
    fake_model.answer(completion("te laat"), delay=0.3, times=openai.MAX_ATTEMPTS)

    failed = assert_cleanly_failed(run_turn(tenant), "model_timeout")
    fake_model.reply("Op tijd")
    again = run_turn(tenant, thread_id=failed["thread_id"]).json()

    assert (again["status"], again["output"][0]["content"]) == ("completed", "Op tijd")


def test_a_model_that_is_gone_fails_the_turn_cleanly(tenant, settings, monkeypatch):
    monkeypatch.setattr(openai, "BACKOFF_SECONDS", 0.01)
    gone = FakeChatModel()  # never started: its port refuses connections
    settings.CORE_MODELS = [gone.config("fake-chat")]
    gone.stop()

    assert_cleanly_failed(run_turn(tenant), "model_unreachable")
