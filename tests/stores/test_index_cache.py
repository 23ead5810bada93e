"""A process keeps the indexes (and stores) it has read for a key while the organisation's
configuration version stands (docs/decisions.md "Caches"); any change to them is seen by the
very next request (R-4.1: a deleted index is unavailable at once)."""
from __future__ import annotations

from django.db import connection

from core_memory.keys.authentication import caller_for_secret
from core_memory.base.callers import Caller
from memory.models import MemoryRecord
from stores.selectors import index_find_available
from tests.factories import make_key


def _sql(statement: str, *parameters) -> None:
    """A change made outside Django, as another process or an operator might make it."""
    with connection.cursor() as cursor:
        cursor.execute(statement, parameters)


def _write(client, index_id: str, type_name: str = "fact"):
    return client.post("/v1/memory", {"index_id": index_id, "type": type_name, "text": f"a {type_name}"}, format="json")


def test_an_index_deleted_after_being_used_is_unavailable_at_once(tenant):
    """R-4.1."""
    client = tenant.client()
    assert _write(client, tenant.index.id).status_code == 201

    assert client.delete(f"/v1/indexes/{tenant.index.id}").status_code == 204

    response = _write(client, tenant.index.id, "preference")
    assert response.status_code == 404
    assert MemoryRecord.objects.unscoped().filter(type="preference").count() == 0


def test_an_index_deleted_in_the_database_by_another_process_is_unavailable_at_once(tenant):
    """R-4.1: the change needs no help from the process that had read the index."""
    client = tenant.client()
    assert _write(client, tenant.index.id).status_code == 201

    _sql("UPDATE stores_knowledgeindex SET deleted_at = now() WHERE id = %s", tenant.index.id)

    assert _write(client, tenant.index.id, "preference").status_code == 404


def test_an_index_taken_out_of_the_keys_policy_is_unavailable_at_once(tenant):
    """R-4.2."""
    client = tenant.client()
    assert _write(client, tenant.index.id).status_code == 201

    _sql("""UPDATE keys_apikey SET policy = '{"read": [], "write": []}' WHERE id = %s""", tenant.key.id)

    assert _write(client, tenant.index.id, "preference").status_code == 404


def test_the_stores_known_types_count_at_once(tenant):
    """R-5.3: the types an extraction switch names are the store's from the moment it is set."""
    client = tenant.client()
    assert _write(client, tenant.index.id, "preference").status_code == 201

    _sql("""UPDATE stores_memorystore SET known_types = '["fact", "recipe"]' WHERE index_id = %s""", tenant.index.id)

    assert _write(client, tenant.index.id, "recipe").status_code == 201
    assert _write(client, tenant.index.id, "behaviour").status_code == 422


def test_a_key_read_at_one_version_reuses_the_index_it_read_then(tenant, django_assert_num_queries):
    """R-12.5: the index and its store are read once per configuration version, not per request."""
    first = caller_for_secret(tenant.secret).key
    index_find_available(caller=Caller(key=first), index_id=tenant.index.id)
    again = caller_for_secret(tenant.secret).key

    with django_assert_num_queries(0):
        found = index_find_available(caller=Caller(key=again), index_id=tenant.index.id)

    assert found.id == tenant.index.id
    assert found.resolved_for(again)
    assert found.store.injection == tenant.index.store.injection


def test_an_index_read_for_one_key_is_never_handed_to_another(tenant):
    """R-4.2: what one key may use says nothing about another key's policy."""
    owner = caller_for_secret(tenant.secret).key
    assert index_find_available(caller=Caller(key=owner), index_id=tenant.index.id) is not None
    _other, secret = make_key(tenant.organisation, read=[], write=[])

    assert index_find_available(caller=caller_for_secret(secret).acting_for(None), index_id=tenant.index.id) is None
