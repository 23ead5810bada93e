"""Calling a chat model (core_memory.llm.providers and its OpenAI client, R-3.6, R-13)."""
import pytest

from core_memory.llm.models import TokenUsage
from core_memory.llm.openai import MAX_ATTEMPTS
from core_memory.llm.protocol import ProviderError
from core_memory.llm.providers import chat_completion
from tests.fake_model import completion

pytestmark = pytest.mark.django_db


def ask(tenant, **fields):
    return chat_completion(organisation=tenant.organisation, model="fake-chat", messages=[{"role": "user", "content": "?"}], **fields)


def test_the_api_key_comes_from_the_variable_the_model_names(tenant, settings, fake_model, monkeypatch):
    """R-3.6: `api_key_env`."""
    monkeypatch.setenv("FAKE_CHAT_KEY", "sk-test-123")
    settings.CORE_MODELS = [fake_model.config("fake-chat", api_key_env="FAKE_CHAT_KEY")]

    ask(tenant)

    assert fake_model.requests[0].headers["Authorization"] == "Bearer sk-test-123"
    assert fake_model.requests[0].path == "/v1/chat/completions"


def test_a_missing_api_key_variable_is_a_provider_error_before_any_call(tenant, settings, fake_model, monkeypatch):
    monkeypatch.delenv("FAKE_CHAT_KEY", raising=False)
    settings.CORE_MODELS = [fake_model.config("fake-chat", api_key_env="FAKE_CHAT_KEY")]

    with pytest.raises(ProviderError) as raised:
        ask(tenant)

    assert raised.value.code == "model_unavailable"
    assert fake_model.requests == []


def test_a_client_error_is_not_retried(tenant, fake_model):
    fake_model.fail(400)

    with pytest.raises(ProviderError) as raised:
        ask(tenant)

    assert (raised.value.code, raised.value.status_code) == ("model_error", 400)
    assert len(fake_model.requests) == 1


def test_an_answer_that_is_not_a_chat_completion_is_a_provider_error(tenant, fake_model):
    """R-13: invalid model output never becomes a 500."""
    fake_model.answer({"choices": []})

    with pytest.raises(ProviderError) as raised:
        ask(tenant)

    assert raised.value.code == "invalid_model_response"
    assert not TokenUsage.objects.exists()


def test_json_output_is_asked_for_with_response_format(tenant, fake_model):
    """R-13: background calls send `response_format` and read the content."""
    fake_model.reply('{"lesson": "Kort."}')
    response_format = {"type": "json_schema", "json_schema": {"name": "core_store_lesson", "schema": {}, "strict": True}}

    answer = ask(tenant, response_format=response_format)

    assert fake_model.requests[0].body["response_format"] == response_format
    assert answer.content == '{"lesson": "Kort."}'


def test_a_model_slower_than_the_timeout_is_retried_then_a_provider_error(tenant, settings, fake_model):
    """R-3.6: `CORE_MODEL_TIMEOUT_SECONDS`; a timeout is retried like a connection error, boundedly."""
    settings.CORE_MODEL_TIMEOUT_SECONDS = 0.05
    fake_model.answer(completion("te laat"), delay=0.3, times=None)

    with pytest.raises(ProviderError) as raised:
        ask(tenant)

    assert raised.value.code == "model_timeout"
    assert len(fake_model.requests_settled(MAX_ATTEMPTS + 1, timeout=0.5)) == MAX_ATTEMPTS


def _message(**message) -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, **message}, "finish_reason": "stop"}]}


def _call(call_id="call_1", name="memory__idx_1__search", arguments="{}") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_message(content="a\u0000b"), id="nul-in-content"),
        pytest.param(_message(content="a\ud800b"), id="lone-surrogate-in-content"),
        pytest.param(_message(tool_calls="call"), id="tool-calls-not-a-list"),
        pytest.param(_message(tool_calls=[_call(call_id="")]), id="empty-call-id"),
        pytest.param(_message(tool_calls=[_call(call_id="c" * 201)]), id="call-id-too-long"),
        pytest.param(_message(tool_calls=[_call(call_id="c\u0000")]), id="nul-in-call-id"),
        pytest.param(_message(tool_calls=[_call(name="n" * 201)]), id="tool-name-too-long"),
        pytest.param(_message(tool_calls=[_call(arguments='{"query": "\u0000"}')]), id="nul-in-arguments"),
        pytest.param(_message(tool_calls=[_call(arguments=5)]), id="arguments-not-text"),
        pytest.param({**_message(content="x"), "usage": [1, 2]}, id="usage-not-an-object"),
        pytest.param({**_message(content="x"), "usage": {"prompt_tokens": "many"}}, id="usage-not-a-number"),
        pytest.param({**_message(content="x"), "usage": {"prompt_tokens": 10**30}}, id="usage-out-of-range"),
        pytest.param({**_message(content="x"), "usage": {"prompt_tokens": -5}}, id="usage-negative"),
        pytest.param(b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", id="nested-deeper-than-the-parser-follows"),
    ],
)
def test_an_answer_core_cannot_store_is_an_invalid_model_response_and_not_metered(tenant, fake_model, answer):
    """R-12.3, R-13: what PostgreSQL or the protocol would refuse fails the call, never a 500 later."""
    fake_model.answer(answer)

    with pytest.raises(ProviderError) as raised:
        ask(tenant)

    assert raised.value.code == "invalid_model_response"
    assert not TokenUsage.objects.exists()


def test_tool_call_arguments_given_as_an_object_are_read_as_their_json_text(tenant, fake_model):
    """R-13.5: some OpenAI-compatible servers send `arguments` as an object, not a string."""
    fake_model.answer(_message(tool_calls=[_call(arguments={"query": "Acme"})]))

    answer = ask(tenant)

    assert answer.tool_calls[0].arguments == '{"query": "Acme"}'
