import pytest

from core_memory.base.errors import Unprocessable
from core_memory.llm.registry import helper_model_get, model_get, models_offered

pytestmark = pytest.mark.django_db


def test_models_lists_the_offered_models_without_their_connection(tenant):
    """R-3.6: only id and provider; never base_url or the key's variable."""
    client, _ = tenant.key_client(capabilities=())

    response = client.get("/v1/models")

    assert response.status_code == 200
    assert response.json() == {
        "data": [{"id": "jouw-chatmodel", "provider": "openai"}, {"id": "helper", "provider": "openai"}],
        "next_cursor": None,
    }
    assert b"invalid" not in response.content
    assert b"SECRET_ENV_NAME" not in response.content


def test_models_lists_only_what_the_organisation_offers(tenant, other_tenant):
    """R-3.6: offered = in CORE_MODELS and in the organisation's `offered_models`."""
    tenant.client().patch(f"/v1/tenants/{tenant.organisation.id}", {"offered_models": ["helper"]}, format="json")

    assert [row["id"] for row in tenant.client().get("/v1/models").json()["data"]] == ["helper"]
    assert [row["id"] for row in other_tenant.client().get("/v1/models").json()["data"]] == ["jouw-chatmodel", "helper"]


def test_a_model_dropped_from_core_models_is_no_longer_offered(tenant, settings):
    """R-3.6."""
    tenant.organisation.offered_models = ["helper", "jouw-chatmodel"]
    tenant.organisation.save()
    settings.CORE_MODELS = [model for model in settings.CORE_MODELS if model["id"] != "helper"]

    assert [model["id"] for model in models_offered(organisation=tenant.organisation)] == ["jouw-chatmodel"]


def test_model_get_answers_the_whole_configuration_of_an_offered_model(tenant):
    """R-3.6: the turn engine needs the connection details."""
    model = model_get(organisation=tenant.organisation, model_id="helper")

    assert model == {"id": "helper", "provider": "openai", "base_url": "http://helper.invalid/v1", "api_key_env": None}


def test_model_get_refuses_a_model_not_offered_with_a_422_on_the_param(tenant):
    """R-3.6."""
    tenant.organisation.offered_models = ["helper"]

    with pytest.raises(Unprocessable) as refused:
        model_get(organisation=tenant.organisation, model_id="jouw-chatmodel", param="agent.model")

    assert refused.value.status_code == 422
    assert refused.value.param == "agent.model"


def test_the_helper_model_is_the_organisations_own_when_it_names_one(tenant, settings):
    """R-3.1, R-1.2: the organisation's `helper_model` wins over CORE_HELPER_MODEL."""
    settings.CORE_HELPER_MODEL = "jouw-chatmodel"
    tenant.organisation.helper_model = "helper"

    assert helper_model_get(organisation=tenant.organisation) == {
        "id": "helper", "provider": "openai", "base_url": "http://helper.invalid/v1", "api_key_env": None
    }


def test_the_helper_model_falls_back_to_core_helper_model(tenant, settings):
    """R-1.2: CORE_HELPER_MODEL serves an organisation that names none."""
    settings.CORE_HELPER_MODEL = "jouw-chatmodel"

    assert helper_model_get(organisation=tenant.organisation) == {
        "id": "jouw-chatmodel", "provider": "openai", "base_url": "http://models.invalid/v1", "api_key_env": "SECRET_ENV_NAME"
    }


def test_there_is_no_helper_model_when_none_is_named_or_it_is_not_offered(tenant, settings):
    """R-3.6: a model the organisation is not offered is never called for it."""
    settings.CORE_HELPER_MODEL = None
    assert helper_model_get(organisation=tenant.organisation) is None

    settings.CORE_HELPER_MODEL = "jouw-chatmodel"
    tenant.organisation.offered_models = ["helper"]
    assert helper_model_get(organisation=tenant.organisation) is None
