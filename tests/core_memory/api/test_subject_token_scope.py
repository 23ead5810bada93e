"""A subject token acts as its key limited to one person (R-3.3): it may use her memory,
but not change what the whole organisation gets (docs/decisions.md)."""
import pytest

from core_memory.agents.models import Agent
from core_memory.keys.models import ApiKey
from stores.models import KnowledgeIndex, MemoryStore

pytestmark = pytest.mark.django_db


@pytest.fixture
def token_client(tenant):
    token = tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json").json()["token"]
    client = tenant.client()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_a_subject_token_cannot_change_a_stores_sections(tenant, token_client):
    store_before = MemoryStore.objects.get(index=tenant.index).injection

    response = token_client.patch(
        f"/v1/memory/stores/{tenant.index.id}", {"injection": {"organisation_share": 0.0}}, format="json"
    )

    assert response.status_code == 403
    assert MemoryStore.objects.get(index=tenant.index).injection == store_before


def test_a_subject_token_cannot_create_or_delete_indexes(tenant, token_client):
    created = token_client.post("/v1/indexes", {"name": "hers"}, format="json")
    deleted = token_client.delete(f"/v1/indexes/{tenant.index.id}")

    assert created.status_code == deleted.status_code == 403
    assert not KnowledgeIndex.objects.filter(name="hers").exists()
    assert KnowledgeIndex.objects.live().filter(pk=tenant.index.pk).exists()


def test_a_subject_token_cannot_create_agents(tenant, token_client):
    response = token_client.post("/v1/agents", {"name": "hers", "model": "x"}, format="json")

    assert response.status_code == 403
    assert not Agent.objects.filter(name="hers").exists()


def test_a_subject_token_still_reads_the_store_and_writes_her_memory(tenant, token_client):
    """R-3.3: her own memory is what the token is for."""
    assert token_client.get(f"/v1/memory/stores/{tenant.index.id}").status_code == 200
    written = token_client.post(
        "/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Woont in Delft"}, format="json"
    )

    assert written.status_code == 201
    assert written.json()["subject"] == "anna"


def test_a_subject_token_cannot_manage_the_organisation(tenant, token_client):
    """A subject token acts for one person (R-3.3); keys and tenants are not hers to manage."""
    response = token_client.post(
        f"/v1/tenants/{tenant.organisation.id}/keys", {"name": "escalate", "capabilities": []}, format="json"
    )

    assert response.status_code == 403
    assert not ApiKey.objects.filter(name="escalate").exists()
