import pytest

from audit.models import AuditEvent
from stores.models import KnowledgeIndex, MemoryStore, default_injection
from tests.factories import make_index

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
    assert store.injection == default_injection()
    assert store.promotion == {"enabled": False, "labels": {}}


def test_index_list_is_paginated_with_a_cursor(tenant):
    """R-2.4: `{"data", "next_cursor"}` with `limit`."""
    created = [tenant.client().post("/v1/indexes", {"name": f"index {number}"}, format="json").json()["id"] for number in range(3)]

    first = tenant.client().get("/v1/indexes?limit=2").json()
    second = tenant.client().get(f"/v1/indexes?limit=2&cursor={first['next_cursor']}").json()

    assert [row["id"] for row in first["data"]] == [created[2], created[1]]
    assert [row["id"] for row in second["data"]] == [created[0], tenant.index.id]
    assert second["next_cursor"] is None


def test_another_organisations_index_is_a_404(tenant, other_tenant):
    """R-2.5."""
    response = tenant.client().get(f"/v1/indexes/{other_tenant.index.id}")

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_deleted_index_is_unavailable_at_once(tenant):
    """R-4.1."""
    assert tenant.client().delete(f"/v1/indexes/{tenant.index.id}").status_code == 204

    assert tenant.client().get(f"/v1/indexes/{tenant.index.id}").status_code == 404
    assert AuditEvent.objects.filter(action="index.deleted", target=tenant.index.id, actor=tenant.key.id).count() == 1


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


# --- permission matrix of the index routes (R-2.7, R-4.2, R-2.5, R-2.1) ----------------------


def index_state() -> tuple:
    return (
        tuple(KnowledgeIndex.objects.order_by("id").values_list("id", "name", "deleted_at")),
        MemoryStore.objects.count(),
        AuditEvent.objects.count(),
    )


def test_a_key_without_knowledge_is_a_403_on_every_index_route_and_writes_nothing(tenant):
    """R-2.7: `/v1/indexes…` needs `knowledge`."""
    client, _ = tenant.key_client(capabilities=("threads", "management"))
    before = index_state()

    responses = [
        client.get("/v1/indexes"),
        client.post("/v1/indexes", {"name": "new"}, format="json"),
        client.get(f"/v1/indexes/{tenant.index.id}"),
        client.delete(f"/v1/indexes/{tenant.index.id}"),
    ]

    assert [response.status_code for response in responses] == [403, 403, 403, 403]
    assert index_state() == before


def test_an_index_the_policy_does_not_name_is_a_404_and_is_not_listed_or_deleted(tenant):
    """R-4.2: available means named by the policy; anything else is absent."""
    named = make_index(tenant.organisation, name="named")
    client, _ = tenant.key_client(read=(named.id,), write=(named.id,))
    before = index_state()

    assert [row["id"] for row in client.get("/v1/indexes").json()["data"]] == [named.id]
    assert client.get(f"/v1/indexes/{tenant.index.id}").status_code == 404
    assert client.delete(f"/v1/indexes/{tenant.index.id}").status_code == 404
    assert index_state() == before


def test_deleting_an_index_needs_the_write_right(tenant):
    """R-5.2: a read-only policy may see the index but not delete it."""
    client, _ = tenant.key_client(read=(tenant.index.id,), write=())
    before = index_state()

    assert client.get(f"/v1/indexes/{tenant.index.id}").status_code == 200
    assert client.delete(f"/v1/indexes/{tenant.index.id}").status_code == 403
    assert index_state() == before


def test_another_organisation_cannot_delete_an_index(tenant, other_tenant):
    """R-2.5: a 404, and the index stays."""
    before = index_state()

    assert other_tenant.client().delete(f"/v1/indexes/{tenant.index.id}").status_code == 404
    assert index_state() == before


def test_no_credential_creates_and_deletes_nothing(tenant, anonymous):
    """R-2.1."""
    before = index_state()

    assert anonymous.post("/v1/indexes", {"name": "new"}, format="json").status_code == 401
    assert anonymous.delete(f"/v1/indexes/{tenant.index.id}").status_code == 401
    assert index_state() == before


def test_an_index_is_a_store_of_separate_records_unless_created_as_a_conversation(tenant):
    """A conversation index reads each record with its neighbours in search; it is opted into."""
    plain = tenant.client().post("/v1/indexes", {"name": "feiten"}, format="json").json()
    turns = tenant.client().post("/v1/indexes", {"name": "gesprekken", "conversation": True}, format="json")

    assert plain["conversation"] is False
    assert turns.status_code == 201
    assert turns.json()["conversation"] is True
    assert KnowledgeIndex.objects.get(pk=turns.json()["id"]).conversation is True
    assert tenant.client().get(f"/v1/indexes/{turns.json()['id']}").json()["conversation"] is True


@pytest.mark.parametrize("value", ["true", 1, None, "ja"])
def test_conversation_that_is_not_a_boolean_is_a_400_naming_it(tenant, value):
    count = KnowledgeIndex.objects.count()

    response = tenant.client().post("/v1/indexes", {"name": "gesprekken", "conversation": value}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "conversation"
    assert KnowledgeIndex.objects.count() == count
