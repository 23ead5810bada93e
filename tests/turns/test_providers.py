import pytest

from core_memory.llm.models import TokenUsage
from core_memory.llm.providers import MAX_ATTEMPTS, ProviderError, chat_completion, usage_month
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


def test_tokens_add_up_per_organisation_and_month(tenant, other_tenant, fake_model):
    """R-3.6, R-8.9: metered per organisation per month."""
    fake_model.reply("a", usage=(100, 20))
    fake_model.reply("b", usage=(50, 5))
    fake_model.reply("c", usage=(7, 1))

    ask(tenant)
    ask(tenant)
    ask(other_tenant)

    row = TokenUsage.objects.get(organisation=tenant.organisation)
    assert (row.month, row.input_tokens, row.output_tokens, row.total_tokens, row.calls) == (usage_month(), 150, 25, 175, 2)
    assert TokenUsage.objects.month_total(organisation_id=other_tenant.organisation.id, month=usage_month()) == 8


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
    assert len(fake_model.requests) == MAX_ATTEMPTS
