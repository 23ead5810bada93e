from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import MemoryRecord
from tests.memory.conftest import age

pytestmark = pytest.mark.django_db

RECORD_FIELDS = {
    "id", "index_id", "subject", "type", "text", "metadata", "confidence", "effective_confidence", "contested",
    "status", "confirmations", "last_confirmed_at", "retrieval_count", "source", "trusted", "provenance", "due_at",
    "done", "expires_at", "structured", "replaces", "replaced_by", "created_at", "updated_at",
}


def _ids(response):
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["data"]]


def _list(client, index, query=""):
    return client.get(f"/v1/memory?index_id={index.id}{query}")


def test_a_record_is_shown_in_the_r_5_6_shape(tenant, write):
    """R-5.6."""
    record = write(
        "Offerte sturen aan Acme", type="commitment", subject="anna", metadata={"klant": "acme"}, confidence=0.9,
        due_at=timezone.now() + timedelta(days=2),
        provenance={"thread_id": "thr_1", "item_ids": ["itm_1", "itm_2"], "response_id": "resp_1"},
    )

    body = tenant.client(subject="anna").get(f"/v1/memory/{record.id}").json()

    assert set(body) == RECORD_FIELDS
    assert body["provenance"] == {"thread_id": "thr_1", "item_ids": ["itm_1", "itm_2"], "response_id": "resp_1"}
    assert (body["type"], body["subject"], body["confidence"], body["effective_confidence"]) == ("commitment", "anna", 0.9, 0.9)
    assert (body["status"], body["source"], body["trusted"], body["done"], body["contested"]) == ("active", "api", True, False, False)
    assert body["metadata"] == {"klant": "acme"}
    assert body["due_at"] == record.due_at.isoformat().replace("+00:00", "Z")


def test_index_id_is_required_to_list(tenant):
    """R-5.6."""
    response = tenant.client().get("/v1/memory")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "index_id"


def test_unknown_filter_is_a_400_naming_it(tenant):
    response = _list(tenant.client(), tenant.index, "&colour=red")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "colour"


def test_a_person_sees_her_records_and_the_shared_ones(tenant, write):
    """R-5.6."""
    annas = write("a", subject="anna")
    shared = write("s")
    brams = write("b", subject="bram")

    assert _ids(_list(tenant.client(subject="anna"), tenant.index)) == [shared.id, annas.id]
    assert _ids(_list(tenant.client(), tenant.index)) == [brams.id, shared.id, annas.id]


def test_a_persons_subject_filter_cannot_reach_another_person(tenant, write):
    write("b", subject="bram")
    assert _ids(_list(tenant.client(subject="anna"), tenant.index, "&subject=bram")) == []


def test_filters_type_subject_contested_and_metadata(tenant, write):
    """R-5.6: `type` repeats; `metadata.<key>=<value>` compares as text."""
    fact = write("f", subject="anna", metadata={"klant": "acme", "prioriteit": 2})
    preference = write("p", type="preference", subject="anna", metadata={"klant": "bolt"})
    behaviour = write("g", type="behaviour", subject="bram")
    MemoryRecord.objects.filter(pk=behaviour.pk).update(contested=True)
    client = tenant.client()

    assert _ids(_list(client, tenant.index, "&type=fact&type=preference")) == [preference.id, fact.id]
    assert _ids(_list(client, tenant.index, "&subject=anna")) == [preference.id, fact.id]
    assert _ids(_list(client, tenant.index, "&contested=true")) == [behaviour.id]
    assert _ids(_list(client, tenant.index, "&metadata.klant=acme")) == [fact.id]
    assert _ids(_list(client, tenant.index, "&metadata.prioriteit=2")) == [fact.id]
    assert _ids(_list(client, tenant.index, "&metadata.klant=acme&metadata.prioriteit=3")) == []


def test_status_defaults_to_active_and_ended_records_are_listed_on_request(tenant, write):
    """R-5.6: `status` default active."""
    old = write("Woont in Delft", subject="anna")
    new = write("Woont in Leiden", subject="anna", replaces=old.id)

    assert _ids(_list(tenant.client(), tenant.index)) == [new.id]
    assert _ids(_list(tenant.client(), tenant.index, "&status=ended")) == [old.id]


def test_deleted_records_are_invisible_everywhere(tenant, write):
    """R-5.8 (decision: a soft delete): not listed, not readable, not searchable."""
    record = write("Acme wil facturen per e-mail")
    tenant.client().delete(f"/v1/memory/{record.id}")

    assert _ids(_list(tenant.client(), tenant.index)) == []
    assert tenant.client().get(f"/v1/memory/{record.id}").status_code == 404
    assert _list(tenant.client(), tenant.index, "&status=deleted").status_code == 400
    search = tenant.client().post("/v1/memory/search", {"index_id": tenant.index.id, "query": "facturen"}, format="json")
    assert search.json()["data"] == []


def test_after_and_before_filter_on_created_at(tenant, write):
    """Decision 4: `after`/`before` filter on created_at."""
    old = write("oud")
    new = write("nieuw")
    MemoryRecord.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=10))
    cut = (timezone.now() - timedelta(days=5)).isoformat()
    client = tenant.client()

    assert _ids(client.get("/v1/memory", {"index_id": tenant.index.id, "after": cut})) == [new.id]
    assert _ids(client.get("/v1/memory", {"index_id": tenant.index.id, "before": cut})) == [old.id]


def test_a_time_without_an_offset_is_a_400_on_that_field(tenant):
    """R-2.4."""
    response = tenant.client().get("/v1/memory", {"index_id": tenant.index.id, "after": "2026-01-01T00:00:00"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "after"


def test_min_confidence_filters_on_the_effective_value(tenant, write):
    """R-5.6, R-5.9: with a 10-day half-life, a 1.0 preference 10 days old is 0.5."""
    client, key = tenant.key_client(memory={"decay": {"half_life_days": {"preference": 10}}})
    old = age(write("oud", type="preference"), days=10)
    fresh = write("vers", type="preference", confidence=0.7)
    fact = age(write("feit", confidence=0.6), days=1000)

    assert _ids(_list(client, tenant.index, "&min_confidence=0.55")) == [fact.id, fresh.id]
    assert _ids(_list(client, tenant.index, "&min_confidence=0.45")) == [fact.id, fresh.id, old.id]
    # the owner key has no half-lives: nothing decays for it
    assert _ids(_list(tenant.client(), tenant.index, "&min_confidence=0.65")) == [fresh.id, old.id]


def test_q_filters_on_full_text_with_every_word(tenant, write):
    """R-5.6 `q`: the list's filter needs every meaningful word (search is the OR)."""
    acme = write("Acme wil facturen per e-mail")
    write("Bolt wil facturen per post")

    assert _ids(_list(tenant.client(), tenant.index, "&q=acme factuur")) == [acme.id]


def test_list_is_newest_first_and_paginated_with_a_cursor(tenant, write):
    """R-2.4."""
    records = [write(f"feit {number}") for number in range(5)]
    first = _list(tenant.client(), tenant.index, "&limit=3").json()
    second = tenant.client().get(f"/v1/memory?index_id={tenant.index.id}&limit=3&cursor={first['next_cursor']}").json()

    listed = [row["id"] for row in first["data"] + second["data"]]
    # Ids are time-ordered only to the millisecond; the list's order is the ids' order.
    assert listed == sorted((record.id for record in records), reverse=True)
    assert second["next_cursor"] is None


@pytest.mark.parametrize("page_size", [5, 200])
def test_listing_takes_the_same_number_of_queries_for_any_page_size(tenant, write, django_assert_num_queries, page_size):
    """No per-row queries (style: N+1)."""
    for number in range(12):
        write(f"feit {number}", subject="anna" if number % 2 else None)
    client = tenant.client()
    _list(client, tenant.index, "&q=feit")  # the index and the query's words, read once per process
    with django_assert_num_queries(2):
        response = _list(client, tenant.index, f"&limit={page_size}&q=feit")
    assert response.status_code == 200
    assert len(response.json()["data"]) == min(page_size, 12)
