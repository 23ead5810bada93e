from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from memory.models import MemoryRecord
from tests.memory.conftest import age

pytestmark = pytest.mark.django_db


def test_patch_changes_the_whitelisted_fields_and_restarts_the_decay_age(tenant, write):
    """R-5.7, R-5.9: a PATCH is a change; the decay clock restarts."""
    record = age(write("Offerte sturen", type="commitment", subject="anna"), days=30)
    due = (timezone.now() + timedelta(days=3)).isoformat()
    before = timezone.now()

    response = tenant.client(subject="anna").patch(
        f"/v1/memory/{record.id}",
        {"text": "Offerte sturen aan Acme", "metadata": {"klant": "acme"}, "confidence": 0.6, "due_at": due, "done": True},
        format="json",
    )
    after = timezone.now()

    assert response.status_code == 200
    body = response.json()
    assert (body["text"], body["metadata"], body["confidence"], body["done"]) == ("Offerte sturen aan Acme", {"klant": "acme"}, 0.6, True)
    record.refresh_from_db()
    assert record.normalised_text == "offerte sturen aan acme"
    assert before <= record.changed_at <= after
    event = AuditEvent.objects.get(action="memory.updated")
    assert (event.actor, event.target) == (tenant.key.id, record.id)
    assert event.details == {"fields": ["text", "metadata", "confidence", "due_at", "done"]}


def test_patch_refuses_fields_outside_the_whitelist(tenant, write):
    """R-5.7."""
    record = write("x")
    response = tenant.client().patch(f"/v1/memory/{record.id}", {"type": "preference"}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "type"
    assert MemoryRecord.objects.get(pk=record.pk).type == "fact"


def test_done_is_only_for_commitments(tenant, write):
    """R-5.7."""
    record = write("x")
    response = tenant.client().patch(f"/v1/memory/{record.id}", {"done": True}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "done"
    assert MemoryRecord.objects.get(pk=record.pk).done is False
    assert not AuditEvent.objects.filter(action="memory.updated").exists()


def test_patching_to_the_text_of_another_active_record_is_a_409(tenant, write):
    write("koffie", subject="anna")
    thee = write("thee", subject="anna")

    response = tenant.client().patch(f"/v1/memory/{thee.id}", {"text": "Koffie."}, format="json")

    assert response.status_code == 409
    assert response.json()["error"] == {
        "type": "conflict_error",
        "message": "An active record of this person and type already has that text.",
        "param": "text",
    }
    assert MemoryRecord.objects.get(pk=thee.pk).text == "thee"


def test_an_ended_record_cannot_be_patched(tenant, write):
    old = write("a")
    write("b", replaces=old.id)
    response = tenant.client().patch(f"/v1/memory/{old.id}", {"text": "c"}, format="json")
    assert response.status_code == 409
    assert MemoryRecord.objects.get(pk=old.pk).text == "a"


def test_delete_hides_the_record_and_keeps_its_history(tenant, write):
    """R-5.8: soft delete, audited; 204; a second delete is a 404."""
    record = write("x", subject="anna")

    response = tenant.client(subject="anna").delete(f"/v1/memory/{record.id}")

    assert response.status_code == 204
    record.refresh_from_db()
    assert record.status == "deleted"
    assert [version.history_change_reason for version in record.history.all()] == [
        f"deleted by {tenant.key.id}", "created by test",
    ]
    assert AuditEvent.objects.get(action="memory.deleted").target == record.id
    assert tenant.client(subject="anna").delete(f"/v1/memory/{record.id}").status_code == 404


def test_a_request_without_a_person_may_delete_any_record_of_the_index(tenant, write):
    """R-5.8 applies its person rule only to person-scoped requests."""
    record = write("x", subject="anna")
    assert tenant.client().delete(f"/v1/memory/{record.id}").status_code == 204


def test_deleting_a_confirmed_record_removes_that_one_record(tenant, write):
    """R-5.8: there is no separate confirmation record."""
    record = write("x")
    write("X.")
    assert tenant.client().delete(f"/v1/memory/{record.id}").status_code == 204
    assert MemoryRecord.objects.exclude(status="deleted").count() == 0
    assert MemoryRecord.objects.count() == 1


def test_deleting_a_correction_does_not_bring_back_the_record_it_ended(tenant, write):
    """R-5.8."""
    old = write("Woont in Delft")
    new = write("Woont in Leiden", replaces=old.id)

    tenant.client().delete(f"/v1/memory/{new.id}")

    old.refresh_from_db()
    assert (old.status, old.replaced_by_id) == ("ended", new.id)
    assert tenant.client().get(f"/v1/memory?index_id={tenant.index.id}").json()["data"] == []


def test_after_a_delete_the_same_text_makes_a_new_record(tenant, write):
    record = write("x")
    tenant.client().delete(f"/v1/memory/{record.id}")
    response = tenant.client().post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "x"}, format="json")
    assert response.status_code == 201
    assert response.json()["memory_id"] != record.id


def test_history_shows_every_version_newest_first(tenant, write):
    """R-5.4: create, confirm, patch and the ending correction each leave a version."""
    client = tenant.client(subject="anna")
    created = client.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Woont in Delft"}, format="json")
    record_id = created.json()["memory_id"]
    client.post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "woont in delft"}, format="json")
    client.patch(f"/v1/memory/{record_id}", {"metadata": {"bron": "gesprek"}}, format="json")
    correction = client.post(
        "/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Woont in Leiden", "replaces": record_id}, format="json"
    ).json()["memory_id"]

    response = client.get(f"/v1/memory/{record_id}/history")

    assert response.status_code == 200
    versions = response.json()["data"]
    assert [version["change"] for version in versions] == ["ended", "updated", "confirmed", "created"]
    assert [version["actor"] for version in versions] == [tenant.key.id] * 4
    assert [version["confirmations"] for version in versions] == [1, 1, 1, 0]
    assert versions[0]["status"] == "ended"
    assert versions[0]["replaced_by"] == correction
    assert versions[1]["metadata"] == {"bron": "gesprek"}
    assert versions[3]["text"] == "Woont in Delft"
    assert client.get(f"/v1/memory/{correction}/history").json()["data"][0]["change"] == "corrected"
    assert response.json()["next_cursor"] is None


@pytest.mark.parametrize("versions", [2, 40])
def test_history_takes_the_same_number_of_queries_for_any_number_of_versions(tenant, write, django_assert_num_queries, versions):
    """No per-version queries (style: N+1)."""
    record = write("Koffie zwart", subject="anna")
    for _ in range(versions - 1):
        write("koffie zwart.", subject="anna")
    client = tenant.client(subject="anna")
    with django_assert_num_queries(3):
        response = client.get(f"/v1/memory/{record.id}/history", {"limit": 100})
    assert len(response.json()["data"]) == versions
