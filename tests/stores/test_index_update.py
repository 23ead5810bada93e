"""`PATCH /v1/indexes/{id}` (issue 20): the README's "embed_records after switching embeddings
on" needs a way to switch them on; switched on, the records it holds get their vectors."""
import pytest

from audit.models import AuditEvent
from core_memory.celery import app as celery_app
from core_memory.base.callers import Caller
from memory.models import MemoryRecord, RecordEmbedding
from memory.services.writes import RecordDraft, record_write
from stores.models import KnowledgeIndex

pytestmark = pytest.mark.django_db


def test_switching_embeddings_on_embeds_the_records_the_index_holds(tenant, vectors, monkeypatch, django_capture_on_commit_callbacks):
    """R-4.1: the backfill runs by itself (the worker's task, here where it is sent)."""
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    written = [
        record_write(caller=Caller(key=tenant.key, subject="anna", actor="test"), index=tenant.index, draft=RecordDraft(type="fact", text=text)).record
        for text in ("Anna woont in Utrecht.", "Anna fietst naar haar werk.")
    ]
    assert not RecordEmbedding.objects.filter(record_id__in=[record.id for record in written]).exists()

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant.client().patch(f"/v1/indexes/{tenant.index.id}", {"embeddings": True}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["embeddings"] is True
    assert KnowledgeIndex.objects.get(pk=tenant.index.pk).embeddings is True
    assert set(RecordEmbedding.objects.values_list("record_id", flat=True)) == {record.id for record in written}
    event = AuditEvent.objects.get(action="index.updated")
    assert (event.actor, event.target, event.details) == (tenant.key.id, tenant.index.id, {"embeddings": True})


def test_a_rename_is_audited_and_a_change_to_nothing_new_writes_nothing(tenant):
    client = tenant.client()

    renamed = client.patch(f"/v1/indexes/{tenant.index.id}", {"name": "klanten"}, format="json")
    again = client.patch(f"/v1/indexes/{tenant.index.id}", {"name": "klanten"}, format="json")

    assert renamed.status_code == again.status_code == 200
    assert renamed.json()["name"] == "klanten"
    assert list(AuditEvent.objects.filter(action="index.updated").values_list("details", flat=True)) == [{"name": "klanten"}]


@pytest.mark.parametrize(
    "body, param",
    [({"embeddings": "soms"}, "embeddings"), ({"name": ""}, "name"), ({"pipeline": "x"}, "pipeline")],
)
def test_a_bad_change_is_a_400_naming_the_field_and_changes_nothing(tenant, body, param):
    response = tenant.client().patch(f"/v1/indexes/{tenant.index.id}", body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert KnowledgeIndex.objects.get(pk=tenant.index.pk).embeddings is False
    assert not AuditEvent.objects.filter(action="index.updated").exists()


def test_without_the_write_right_or_for_another_organisation_nothing_changes(tenant, other_tenant):
    reader, _ = tenant.key_client(write=())

    refused = reader.patch(f"/v1/indexes/{tenant.index.id}", {"embeddings": True}, format="json")
    foreign = other_tenant.client().patch(f"/v1/indexes/{tenant.index.id}", {"embeddings": True}, format="json")

    assert refused.status_code == 403
    assert foreign.status_code == 404
    assert KnowledgeIndex.objects.get(pk=tenant.index.pk).embeddings is False
    assert MemoryRecord.objects.count() == 0


def test_a_patch_with_nothing_to_change_answers_the_index_as_it_is_and_audits_nothing(tenant):
    """A PATCH without a body is valid by the API's document: nothing changes, no 400."""
    response = tenant.client().patch(f"/v1/indexes/{tenant.index.id}")

    assert response.status_code == 200 and response.json()["id"] == tenant.index.id
    assert not AuditEvent.objects.filter(action="index.updated").exists()
