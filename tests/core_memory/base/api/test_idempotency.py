"""`Idempotency-Key` (R-2.6): a retry replays the first answer, and only to the one it answered."""
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection

from core_memory.base.api.idempotency import idempotency_lock_id, request_fingerprint
from core_memory.base.api.models import IdempotentRequest
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


@contextmanager
def running_elsewhere(tenant, idempotency_key: str, body: bytes):
    """A first request with `idempotency_key` still running in another process: its claim, and
    the lock it holds on its own connection while it runs."""
    IdempotentRequest.objects.create(
        organisation_id=tenant.organisation.id,
        key_id=tenant.key.id,
        idempotency_key=idempotency_key,
        method="POST",
        path="/v1/indexes",
        request_hash=request_fingerprint(method="POST", path="/v1/indexes", body=body),
    )
    settings = connection.settings_dict
    with psycopg.connect(dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"], host=settings["HOST"], port=settings["PORT"] or None) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [idempotency_lock_id(key_id=tenant.key.id, idempotency_key=idempotency_key)])
        yield


def test_a_retry_while_the_first_request_still_runs_is_a_409_and_writes_nothing(tenant):
    """R-2.6: the first request holds the key until it answers."""
    with running_elsewhere(tenant, "running", b'{"name": "slow"}'):
        response = tenant.client().post("/v1/indexes", {"name": "slow"}, format="json", HTTP_IDEMPOTENCY_KEY="running")

    assert response.status_code == 409
    assert response.json()["error"] == {
        "type": "conflict_error",
        "message": "A request with this Idempotency-Key is still running.",
        "param": "Idempotency-Key",
    }
    assert not KnowledgeIndex.objects.filter(name="slow").exists()


def test_a_retry_with_another_body_while_the_first_still_runs_is_a_422(tenant):
    """R-2.6: the key was used with another request, running or not."""
    with running_elsewhere(tenant, "running", b'{"name": "slow"}'):
        response = tenant.client().post("/v1/indexes", {"name": "other"}, format="json", HTTP_IDEMPOTENCY_KEY="running")

    assert (response.status_code, response.json()["error"]["param"]) == (422, "Idempotency-Key")
    assert not KnowledgeIndex.objects.filter(name="other").exists()


def test_a_retry_of_a_request_that_died_with_its_claim_runs_once(tenant):
    """R-2.6, issue 11: a request whose worker was killed, or whose database crashed under it,
    left its claim behind unanswered; the retry with the same key was a 409 for a day. Its lock
    went with its connection, so the retry takes the claim over, runs, and is replayed after."""
    IdempotentRequest.objects.create(
        organisation_id=tenant.organisation.id,
        key_id=tenant.key.id,
        idempotency_key="died",
        method="POST",
        path="/v1/indexes",
        request_hash=request_fingerprint(method="POST", path="/v1/indexes", body=b'{"name": "survivor"}'),
    )
    client = tenant.client()

    retry = client.post("/v1/indexes", {"name": "survivor"}, format="json", HTTP_IDEMPOTENCY_KEY="died")
    replay = client.post("/v1/indexes", {"name": "survivor"}, format="json", HTTP_IDEMPOTENCY_KEY="died")

    assert retry.status_code == 201, retry.content
    assert (replay.status_code, replay["Idempotent-Replayed"], replay.json()) == (201, "true", retry.json())
    assert KnowledgeIndex.objects.filter(name="survivor").count() == 1
    assert IdempotentRequest.objects.filter(idempotency_key="died", state="completed").count() == 1


def test_answers_kept_longer_than_a_day_are_purged_by_the_scheduled_task(tenant):
    """R-2.6 (docs/decisions.md: kept 24 hours): stored answers, whole turns among them,
    do not pile up for keys that are never retried."""
    from datetime import timedelta

    from django.utils import timezone

    from core_memory.base.api.tasks import idempotency_purge_task
    from core_memory.beat import BEAT_SCHEDULE

    client = tenant.client()
    client.post("/v1/indexes", {"name": "old"}, format="json", HTTP_IDEMPOTENCY_KEY="old")
    client.post("/v1/indexes", {"name": "new"}, format="json", HTTP_IDEMPOTENCY_KEY="new")
    IdempotentRequest.objects.filter(idempotency_key="old").update(created_at=timezone.now() - timedelta(hours=25))

    assert idempotency_purge_task() == {"purged": 1}
    assert list(IdempotentRequest.objects.values_list("idempotency_key", flat=True)) == ["new"]
    # The beat schedule and queued work know the task by its name, kept when its module moved.
    assert idempotency_purge_task.name in {entry["task"] for entry in BEAT_SCHEDULE.values()}


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
    from core_memory.api import stores as apis

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


def test_a_body_of_a_type_the_api_does_not_read_is_a_415_with_an_idempotency_key_too(tenant):
    """R-2.3: never a 500. The fuzz step found one: with an Idempotency-Key, storing the 415
    asked the unreadable body which persons it named, and that raised again."""
    client = tenant.client(subject="anna")

    answer = client.post("/v1/memory", data='{"text": "x"}', content_type="text/plain", HTTP_IDEMPOTENCY_KEY="plain")
    retry = client.post("/v1/memory", data='{"text": "x"}', content_type="text/plain", HTTP_IDEMPOTENCY_KEY="plain")

    assert (answer.status_code, retry.status_code) == (415, 415)


@pytest.mark.parametrize(
    ("method", "path"),
    [("post", "/v1/threads/thr_missing/items"), ("patch", "/v1/tenants/org_missing/keys/key_missing")],
)
def test_a_404_before_the_body_is_read_is_a_404_with_an_idempotency_key_and_a_nul_in_the_body(tenant, method, path):
    """R-2.3: never a 500. The fuzz step found one: the path's object does not exist, so the
    answer is a 404 given before the body is read; storing it with the Idempotency-Key read the
    body then, whose NUL refused to parse, and that error escaped."""
    client = tenant.client(subject="anna")
    body = '{"items": [{"role": "user", "content": "x\\u0000"}], "name": "k\\u0000"}'

    answer = getattr(client, method)(path, data=body, content_type="application/json", HTTP_IDEMPOTENCY_KEY=f"nul-{method}")

    assert answer.status_code == 404
    assert not IdempotentRequest.objects.filter(idempotency_key=f"nul-{method}", state="completed").exists()
