"""`Idempotency-Key` (R-2.6): a retry replays the first answer, and only to the one it answered."""
import pytest

from core_memory.api.idempotency import request_fingerprint
from core_memory.api.models import IdempotentRequest
from memory.models import MemoryRecord
from stores.models import KnowledgeIndex
from tests.factories import client_for

pytestmark = pytest.mark.django_db


def record_body(tenant) -> dict:
    return {"index_id": tenant.index.id, "type": "preference", "text": "Wants invoices by e-mail."}


def token_client(tenant, subject: str):
    token = tenant.client().post("/v1/subject-tokens", {"subject": subject}, format="json").json()["token"]
    return client_for(token)


def test_another_persons_token_with_the_same_key_and_body_gets_no_replay_of_her_answer(tenant):
    """R-12.1, R-2.6: the key is the same, the person is not; her record is never shown to him."""
    body = record_body(tenant)
    anna = token_client(tenant, "anna").post("/v1/memory", body, format="json", HTTP_IDEMPOTENCY_KEY="same")

    bob = token_client(tenant, "bob").post("/v1/memory", body, format="json", HTTP_IDEMPOTENCY_KEY="same")

    assert anna.status_code == 201
    assert bob.status_code == 422
    assert bob.json()["error"] == {
        "type": "idempotency_error",
        "message": "This Idempotency-Key was used with another request; use a new key.",
        "param": "Idempotency-Key",
    }
    assert list(MemoryRecord.objects.values_list("subject", flat=True)) == ["anna"]


def test_the_same_key_speaking_for_another_person_by_header_gets_no_replay(tenant):
    """R-12.1, R-2.6: X-Core-Subject is part of the request."""
    body = record_body(tenant)
    tenant.client(subject="anna").post("/v1/memory", body, format="json", HTTP_IDEMPOTENCY_KEY="same")

    bob = tenant.client(subject="bob").post("/v1/memory", body, format="json", HTTP_IDEMPOTENCY_KEY="same")

    assert bob.status_code == 422
    assert list(MemoryRecord.objects.values_list("subject", flat=True)) == ["anna"]


def test_the_same_persons_retry_still_replays(tenant):
    """R-2.6."""
    body = record_body(tenant)
    client = token_client(tenant, "anna")
    first = client.post("/v1/memory", body, format="json", HTTP_IDEMPOTENCY_KEY="again")

    again = client.post("/v1/memory", body, format="json", HTTP_IDEMPOTENCY_KEY="again")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert MemoryRecord.objects.count() == 1


def test_a_retry_while_the_first_request_still_runs_is_a_409_and_writes_nothing(tenant):
    """R-2.6: the first request holds the key until it answers."""
    IdempotentRequest.objects.create(
        key_id=tenant.key.id,
        idempotency_key="running",
        method="POST",
        path="/v1/indexes",
        request_hash=request_fingerprint(method="POST", path="/v1/indexes", body=b'{"name": "slow"}'),
    )

    response = tenant.client().post("/v1/indexes", {"name": "slow"}, format="json", HTTP_IDEMPOTENCY_KEY="running")

    assert response.status_code == 409
    assert response.json()["error"] == {
        "type": "conflict_error",
        "message": "A request with this Idempotency-Key is still running.",
        "param": "Idempotency-Key",
    }
    assert not KnowledgeIndex.objects.filter(name="slow").exists()


def test_answers_kept_longer_than_a_day_are_purged_by_the_scheduled_task(tenant):
    """R-2.6 (docs/decisions.md: kept 24 hours): stored answers, whole turns among them,
    do not pile up for keys that are never retried."""
    from datetime import timedelta

    from django.utils import timezone

    from core_memory.api.tasks import idempotency_purge_task
    from core_memory.beat import BEAT_SCHEDULE

    client = tenant.client()
    client.post("/v1/indexes", {"name": "old"}, format="json", HTTP_IDEMPOTENCY_KEY="old")
    client.post("/v1/indexes", {"name": "new"}, format="json", HTTP_IDEMPOTENCY_KEY="new")
    IdempotentRequest.objects.filter(idempotency_key="old").update(created_at=timezone.now() - timedelta(hours=25))

    assert idempotency_purge_task() == {"purged": 1}
    assert list(IdempotentRequest.objects.values_list("idempotency_key", flat=True)) == ["new"]
    assert "core_memory.api.tasks.idempotency_purge_task" in {entry["task"] for entry in BEAT_SCHEDULE.values()}


def test_an_idempotent_request_with_a_long_query_string_is_kept_and_replayed(tenant):
    """R-2.6: the retry of any mutating request replays, however long its address."""
    path = "/v1/indexes?" + "note=" + "x" * 600
    first = tenant.client().post(path, {"name": "long"}, format="json", HTTP_IDEMPOTENCY_KEY="long-1")
    again = tenant.client().post(path, {"name": "long"}, format="json", HTTP_IDEMPOTENCY_KEY="long-1")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert KnowledgeIndex.objects.filter(name="long").count() == 1


def test_a_request_that_fails_unexpectedly_releases_its_idempotency_key(tenant, monkeypatch):
    """R-2.6: a failed answer is not kept, so the corrected retry runs instead of a 409 for a day."""
    from stores import apis

    def broken(**kwargs):
        raise RuntimeError("boom")

    client = tenant.client()
    client.raise_request_exception = False
    monkeypatch.setattr(apis, "index_create", broken)
    assert client.post("/v1/indexes", {"name": "retried"}, format="json", HTTP_IDEMPOTENCY_KEY="retry-1").status_code == 500
    monkeypatch.undo()

    retry = client.post("/v1/indexes", {"name": "retried"}, format="json", HTTP_IDEMPOTENCY_KEY="retry-1")

    assert retry.status_code == 201
    assert IdempotentRequest.objects.filter(idempotency_key="retry-1", state="completed").count() == 1
