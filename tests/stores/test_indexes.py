import pytest

from audit.models import AuditEvent
from stores.models import KnowledgeIndex, MemoryStore

pytestmark = pytest.mark.django_db


def test_creating_an_index_makes_a_memory_store_with_default_sections(tenant):
    """R-4.1: an index has pipeline memory; R-4.3: its store starts at the defaults."""
    response = tenant.client().post("/v1/indexes", {"name": "klanten"}, format="json")

    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("idx_")
    assert body["pipeline"] == "memory"
    assert body["embeddings"] is False
    store = MemoryStore.objects.get(index_id=body["id"])
    assert store.injection["organisation_share"] == 0.4
    assert store.promotion == {"enabled": False, "labels": {}}


def test_index_list_is_paginated_with_a_cursor(tenant):
    """R-2.4: `{"data", "next_cursor"}` with `limit`."""
    for number in range(3):
        tenant.client().post("/v1/indexes", {"name": f"index {number}"}, format="json")

    first = tenant.client().get("/v1/indexes?limit=2").json()
    second = tenant.client().get(f"/v1/indexes?limit=2&cursor={first['next_cursor']}").json()

    assert len(first["data"]) == 2
    assert len(second["data"]) == 2  # the fixture's index plus the last one
    assert second["next_cursor"] is None
    assert not {row["id"] for row in first["data"]} & {row["id"] for row in second["data"]}


def test_another_organisations_index_is_a_404(tenant, other_tenant):
    """R-2.5."""
    response = tenant.client().get(f"/v1/indexes/{other_tenant.index.id}")

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_deleted_index_is_unavailable_at_once(tenant):
    """R-4.1."""
    assert tenant.client().delete(f"/v1/indexes/{tenant.index.id}").status_code == 204

    assert tenant.client().get(f"/v1/indexes/{tenant.index.id}").status_code == 404
    assert AuditEvent.objects.filter(action="index.deleted", target=tenant.index.id).exists()


def test_missing_name_is_a_400_naming_the_field(tenant):
    """R-2.3."""
    response = tenant.client().post("/v1/indexes", {}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "name"
    assert KnowledgeIndex.objects.filter(organisation=tenant.organisation).count() == 1


def test_idempotent_replay_returns_the_first_answer_and_writes_nothing(tenant):
    """R-2.6."""
    client = tenant.client()
    first = client.post("/v1/indexes", {"name": "once"}, format="json", HTTP_IDEMPOTENCY_KEY="abc")
    again = client.post("/v1/indexes", {"name": "once"}, format="json", HTTP_IDEMPOTENCY_KEY="abc")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert KnowledgeIndex.objects.filter(organisation=tenant.organisation, name="once").count() == 1


def test_unknown_credential_is_a_401(anonymous, tenant):
    """R-2.1."""
    assert anonymous.get("/v1/indexes").status_code == 401
    anonymous.credentials(HTTP_AUTHORIZATION="Bearer core_sk_nope")
    assert anonymous.get("/v1/indexes").status_code == 401
