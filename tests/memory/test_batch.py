"""`POST /v1/memory/batch` and `POST /v1/memory/batch/delete`: many writes in one request, each
as a single write makes it."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from core_memory.webhooks.models import WebhookEvent, WebhookSubscription
from core_memory.webhooks.services import webhook_secret_new
from memory.batches.apis import MAX_BATCH_RECORDS
from memory.models import MemoryRecord
from memory.services.batches import records_write_batch
from memory.services.writes import RecordDraft


def _batch(client, index_id: str, records: list, **headers):
    return client.post("/v1/memory/batch", {"index_id": index_id, "records": records}, format="json", **headers)


def test_a_500_record_batch_lands_in_one_request_with_an_answer_per_item_in_order(tenant):
    records = [{"type": "fact", "text": f"Fact number {number}"} for number in range(500)]
    records[10] = {"type": "fact", "text": "fact number 3."}  # the same text as item 3: confirms it
    records[20] = {"type": "episode", "text": "Core writes these"}
    records[30] = {"type": "fact", "text": "Bad confidence", "confidence": 7}
    records[40] = {"type": "preference", "text": "Due", "due_at": "2027-01-01T00:00:00+00:00"}
    records[50] = "not an object"

    answer = _batch(tenant.client(subject="anna"), tenant.index.id, records)

    assert answer.status_code == 200
    results = answer.json()["results"]
    assert len(results) == 500
    assert [result["status"] for result in results[:4]] == ["created"] * 4
    assert results[10]["status"] == "confirmed" and results[10]["memory_id"] == results[3]["memory_id"] and results[10]["status_code"] == 200
    assert (results[20]["status_code"], results[20]["error"]["param"]) == (422, "records[20].type")
    assert (results[30]["status_code"], results[30]["error"]["param"]) == (400, "records[30].confidence")
    assert (results[40]["status_code"], results[40]["error"]["param"]) == (400, "records[40].due_at")
    assert (results[50]["status_code"], results[50]["error"]["param"]) == (400, "records[50]")
    assert results[0] == {
        "memory_id": results[0]["memory_id"], "status": "created", "status_code": 201, "type": "fact", "text": "Fact number 0",
        "confidence": 1.0, "subject": "anna", "index_id": tenant.index.id, "created_at": results[0]["created_at"],
    }
    created = [result["memory_id"] for result in results if result["status"] == "created"]
    assert len(created) == 495
    assert MemoryRecord.objects.filter(subject="anna").count() == 495
    assert MemoryRecord.objects.get(pk=results[3]["memory_id"]).confirmations == 1


def test_a_batch_confirms_and_corrects_as_single_writes_do(tenant, write):
    """R-5.4: a text she has is confirmed, `replaces` ends the record it corrects."""
    tea = write("Likes tea", subject="anna")
    home = write("Lives in Delft", subject="anna")

    results = _batch(tenant.client(subject="anna"), tenant.index.id, [
        {"type": "fact", "text": "likes tea."},
        {"type": "fact", "text": "Lives in Leiden", "replaces": home.id},
        {"type": "fact", "text": "Lives in Gouda", "replaces": home.id},
    ]).json()["results"]

    assert [result["status"] for result in results] == ["confirmed", "corrected", "error"]
    assert results[0]["memory_id"] == tea.id
    assert (results[2]["status_code"], results[2]["error"]["param"]) == (409, "records[2].replaces")
    home.refresh_from_db()
    assert (home.status, home.replaced_by_id) == ("ended", results[1]["memory_id"])
    assert not MemoryRecord.objects.filter(text="Lives in Gouda").exists()


def _items(*, home: str, until: str) -> list[dict]:
    return [
        {"type": "fact", "text": "Likes tea"},
        {"type": "fact", "text": "Works at Acme"},
        {"type": "fact", "text": "likes tea."},  # a repeat of the first item
        {"type": "fact", "text": "Has a bike"},  # a record she had
        {"type": "fact", "text": "Lives in Leiden", "replaces": home},
        {"type": "fact", "text": "lives in Leiden!"},  # a repeat of the correction
        {"type": "preference", "text": "Tea without sugar", "expires_at": until},
        {"type": "fact", "text": "   "},
        {"type": "fact", "text": "Lives in Gouda", "replaces": home},  # already corrected
        {"type": "episode", "text": "Core writes these"},
        {"type": "fact", "text": "works at acme"},
        {"type": "preference", "text": "Tea without sugar"},
    ]


def _what_happened(subject: str, answers: list[tuple[str, int, str | None]]) -> dict:
    """Her answers, records, versions and events, record ids read as the order they were made in."""
    records = list(MemoryRecord.objects.filter(subject=subject).order_by("id"))
    number = {record.id: f"record {position}" for position, record in enumerate(records)}
    return {
        "answers": [(status, code, number.get(value, value)) for status, code, value in answers],
        "records": [
            (record.type, record.text, record.status, record.confirmations, record.expires_at is not None, number.get(record.replaced_by_id))
            for record in records
        ],
        "versions": [[version.history_change_reason for version in record.history.order_by("history_id")] for record in records],
        "events": [
            (event.kind, number[event.payload["data"]["record_id"]], event.payload["data"]["change"], event.payload["data"]["status"])
            for event in WebhookEvent.objects.filter(subject=subject).order_by("id")
        ],
    }


def test_a_batch_answers_writes_versions_and_tells_each_item_as_single_writes_would(tenant, write):
    """R-5.4, R-5.5: the same items written in a batch for Anna and one by one for Ben give the
    same answers, the same records (confirmed, corrected, expiring), the same versions and the
    same webhook events in the same order."""
    WebhookSubscription.objects.create(
        organisation=tenant.organisation, url="https://hooks.example.com/core", events=["record.created", "record.updated"],
        secret=webhook_secret_new(),
    )
    until = (timezone.now() + timedelta(days=3)).isoformat()
    happened = {}
    for subject in ("anna", "ben"):
        home = write("Lives in Delft", subject=subject).id
        write("Has a bike", subject=subject)
        items = _items(home=home, until=until)
        client = tenant.client(subject=subject)
        if subject == "anna":
            results = _batch(client, tenant.index.id, items).json()["results"]
            answers = [
                (result["status"], result["status_code"], result.get("memory_id") or result["error"]["param"].split(".")[-1])
                for result in results
            ]
        else:
            singles = [client.post("/v1/memory", {"index_id": tenant.index.id, **item}, format="json") for item in items]
            answers = [
                (single.json()["status"], single.status_code, single.json()["memory_id"]) if single.status_code < 400
                else ("error", single.status_code, single.json()["error"]["param"])
                for single in singles
            ]
        happened[subject] = _what_happened(subject, answers)

    assert happened["anna"] == happened["ben"]
    assert [status for status, _, _ in happened["anna"]["answers"]] == [
        "created", "created", "confirmed", "confirmed", "corrected", "confirmed", "created", "error", "error", "error", "confirmed", "confirmed",
    ]


@pytest.mark.parametrize("size", [10, 300])
def test_a_batch_of_new_records_takes_the_same_statements_whatever_its_size(tenant, django_assert_num_queries, size):
    """R-12.5 for batches: its own savepoint (in a test's transaction), the store's types and
    lifetimes, the repeats looked up, a savepoint, the records and their versions inserted, the
    webhook subscriptions read."""
    drafts = [RecordDraft(type="fact", text=f"Fact number {number}") for number in range(size)]

    with django_assert_num_queries(10):
        results = records_write_batch(caller=Caller(key=tenant.key, subject="anna"), index=tenant.index, drafts=drafts)

    assert [result.status for result in results] == ["created"] * size
    assert MemoryRecord.history.filter(subject="anna", history_type="+").count() == size


def test_one_idempotency_key_covers_the_whole_batch(tenant):
    """R-2.6."""
    client = tenant.client(subject="anna")
    records = [{"type": "fact", "text": f"Fact {number}"} for number in range(5)]

    first = _batch(client, tenant.index.id, records, HTTP_IDEMPOTENCY_KEY="sync-1")
    again = _batch(client, tenant.index.id, records, HTTP_IDEMPOTENCY_KEY="sync-1")
    other = _batch(client, tenant.index.id, records[:2], HTTP_IDEMPOTENCY_KEY="sync-1")

    assert again.status_code == 200 and again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert other.status_code == 422 and other.json()["error"]["param"] == "Idempotency-Key"
    assert MemoryRecord.objects.count() == 5


def test_a_key_that_may_not_write_the_index_is_refused_the_whole_batch_and_audited(tenant):
    """R-5.2."""
    client, key = tenant.key_client(read=(tenant.index.id,), write=())

    answer = _batch(client, tenant.index.id, [{"type": "fact", "text": "One"}, {"type": "fact", "text": "Two"}])

    assert answer.status_code == 403
    assert not MemoryRecord.objects.exists()
    assert list(AuditEvent.objects.filter(action="memory.write_denied").values_list("target", "details")) == [
        (tenant.index.id, {"key_id": key.id})
    ]


def test_another_organisations_index_is_a_404_and_writes_nothing(tenant, other_tenant):
    answer = _batch(other_tenant.client(), tenant.index.id, [{"type": "fact", "text": "One"}])

    assert answer.status_code == 404 and answer.json()["error"]["param"] == "index_id"
    assert not MemoryRecord.objects.exists()


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"index_id": "idx_x", "records": []}, "records"),
        ({"index_id": "idx_x", "records": [{"type": "fact", "text": "x"}] * (MAX_BATCH_RECORDS + 1)}, "records"),
        ({"index_id": "idx_x"}, "records"),
        ({"records": [{"type": "fact", "text": "x"}]}, "index_id"),
    ],
)
def test_a_batch_outside_its_bounds_is_a_400_naming_the_field(tenant, body, param):
    answer = tenant.client().post("/v1/memory/batch", body, format="json")

    assert answer.status_code == 400 and answer.json()["error"]["param"] == param
    assert not MemoryRecord.objects.exists()


def test_a_batch_delete_answers_each_id_as_a_single_delete_would(tenant, write):
    hers = write("Likes tea", subject="anna")
    bobs = write("Likes coffee", subject="bob")
    shared = write("The office closes at six")

    answer = tenant.client(subject="anna").post(
        "/v1/memory/batch/delete", {"ids": [hers.id, bobs.id, hers.id, shared.id, "mem_nothing"]}, format="json"
    )

    assert answer.status_code == 200
    assert [(result["status"], result["status_code"]) for result in answer.json()["results"]] == [
        ("deleted", 204), ("error", 404), ("error", 404), ("error", 404), ("error", 404),
    ]
    assert answer.json()["results"][1]["error"]["param"] == "ids[1]"
    assert dict(MemoryRecord.objects.values_list("id", "status")) == {hers.id: "deleted", bobs.id: "active", shared.id: "active"}
    assert list(AuditEvent.objects.filter(action="memory.deleted").values_list("target", flat=True)) == [hers.id]


def test_a_batch_delete_where_the_policy_may_not_write_is_a_403_per_item_audited(tenant, write):
    record = write("Likes tea")
    client, key = tenant.key_client(read=(tenant.index.id,), write=())

    answer = client.post("/v1/memory/batch/delete", {"ids": [record.id]}, format="json")

    assert answer.json()["results"][0]["status_code"] == 403
    assert MemoryRecord.objects.get().status == "active"
    assert AuditEvent.objects.filter(action="memory.write_denied", details={"key_id": key.id}).count() == 1
