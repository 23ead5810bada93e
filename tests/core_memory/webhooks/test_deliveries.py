"""Webhooks: subscriptions, signed deliveries to a real receiver, retries, pausing, erasure."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from audit.models import AuditEvent
from core_memory.flows.erasure import person_erase
from core_memory.base.callers import Caller
from core_memory.webhooks.delivery import MAX_ATTEMPTS, webhooks_dispatch
from core_memory.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEvent, WebhookSubscription
from memory.services.changes import record_delete
from memory.services.contradictions import records_contradiction_mark_within
from tests.core_memory.webhooks.conftest import deliver_queued, subscribe


def _verified(received, secret: str) -> dict:
    """The body, once its Standard Webhooks signature checks out with the subscription's secret."""
    return Webhook(secret).verify(received.body, received.headers)


def _write(tenant, text: str, *, subject: str | None = "anna"):
    answer = tenant.client(subject=subject).post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": text}, format="json")
    assert answer.status_code in (200, 201), answer.json()
    return answer.json()["memory_id"]


def test_a_written_record_reaches_the_receiver_signed_with_ids_and_never_its_text(tenant, receiver):
    subscription = subscribe(tenant, receiver.url)
    record_id = _write(tenant, "Anna's IBAN is NL91ABNA0417164300.")

    outcomes = deliver_queued()

    assert [outcome.status for outcome in outcomes] == ["delivered"]
    [received] = receiver.received
    assert received.path == "/hooks"
    body = _verified(received, subscription["secret"])
    assert body["type"] == "record.created"
    assert body["data"] == {
        "record_id": record_id, "index_id": tenant.index.id, "subject": "anna", "type": "fact", "status": "active",
        "change": "created", "replaces": None,
    }
    assert "NL91" not in received.body.decode()
    event = WebhookEvent.objects.get()
    assert received.headers["webhook-id"] == event.id
    assert event.finished_at is not None and event.pending == 0


def test_a_signature_made_with_another_secret_does_not_verify(tenant, receiver):
    subscribe(tenant, receiver.url)
    _write(tenant, "Likes tea")
    deliver_queued()

    with pytest.raises(Exception, match="No matching signature"):
        Webhook("whsec_" + "A" * 44).verify(receiver.received[0].body, receiver.received[0].headers)


def test_only_the_subscribed_kinds_are_sent(tenant, receiver):
    subscribe(tenant, receiver.url, events=["record.deleted"])
    record_id = _write(tenant, "Likes tea")
    assert not WebhookEvent.objects.exists()

    record_delete(caller=Caller(key=tenant.key, subject="anna", actor="test"), record_id=record_id)
    deliver_queued()

    assert [json.loads(received.body)["type"] for received in receiver.received] == ["record.deleted"]


def test_a_patch_a_confirmation_and_a_contradiction_are_told(tenant, receiver, write):
    subscribe(tenant, receiver.url, events=["record.updated", "record.contested"])
    first, second = write("Lives in Delft", subject="anna"), write("Lives in Leiden", subject="anna")
    client = tenant.client(subject="anna")
    assert client.patch(f"/v1/memory/{first.id}", {"confidence": 0.5}, format="json").status_code == 200
    write("lives in delft.", subject="anna")
    records_contradiction_mark_within(caller=Caller.system(organisation_id=tenant.organisation.id, actor="maintenance"), pairs=[(first.id, second.id)])

    deliver_queued()

    told = [(body["type"], body["data"]["record_id"], body["data"]["change"]) for body in map(lambda r: json.loads(r.body), receiver.received)]
    assert told == [
        ("record.updated", first.id, "updated"),
        ("record.updated", first.id, "confirmed"),
        ("record.contested", first.id, "contested"),
        ("record.contested", second.id, "contested"),
    ]


def test_a_receiver_that_was_down_gets_every_event_once_it_is_back(tenant, receiver):
    """Nothing is lost while the receiver is down: each failed attempt is logged and tried again
    after its backoff; once the receiver is back every event arrives, each with its own id."""
    subscribe(tenant, receiver.url)
    receiver.stop()
    written = [_write(tenant, f"Fact {number}") for number in range(3)]

    assert [outcome.error_code for outcome in deliver_queued()] == ["connection_error"] * 3
    failed = list(WebhookDelivery.objects.order_by("id"))
    assert {delivery.status for delivery in failed} == {"failed"}
    assert all(delivery.next_attempt_at > timezone.now() for delivery in failed)
    assert webhooks_dispatch(now=timezone.now()).unit_ids == []  # not before its backoff

    receiver.start()
    assert len(webhooks_dispatch(now=timezone.now() + timedelta(minutes=1)).unit_ids) == 3
    deliver_queued()

    bodies = [json.loads(received.body) for received in receiver.received]
    assert sorted(body["data"]["record_id"] for body in bodies) == sorted(written)
    assert len({received.headers["webhook-id"] for received in receiver.received}) == 3
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}
    log = list(WebhookAttempt.objects.order_by("delivery_id", "number").values_list("number", "status_code", "error_code"))
    assert log == [(1, None, "connection_error"), (2, 204, "")] * 3


def _fail_every_attempt(receiver) -> None:
    """Runs the delivery through all its attempts, the clock moved past each backoff."""
    later = timezone.now()
    for _ in range(MAX_ATTEMPTS):
        deliver_queued()
        later += timedelta(hours=11)
        webhooks_dispatch(now=later)


def test_a_subscription_whose_delivery_used_every_attempt_is_paused_and_resumes_without_loss(tenant, receiver):
    subscription = subscribe(tenant, receiver.url)
    receiver.status = 500
    _write(tenant, "First fact")

    _fail_every_attempt(receiver)

    paused = WebhookSubscription.objects.get()
    assert paused.status == "paused" and "failed 8 times (last: http_500)" in paused.paused_reason
    event = AuditEvent.objects.get(action="webhook.paused")
    assert event.target == subscription["id"] and event.details["error_code"] == "http_500"
    assert WebhookAttempt.objects.count() == MAX_ATTEMPTS
    _write(tenant, "Second fact")
    assert [outcome.status for outcome in deliver_queued()] == ["skipped"]  # waits while paused
    assert len(receiver.received) == MAX_ATTEMPTS

    receiver.status = 200
    resumed = tenant.client().patch(f"/v1/webhooks/{subscription['id']}", {"status": "active"}, format="json")
    assert resumed.status_code == 200 and resumed.json()["paused_reason"] == ""
    deliver_queued()

    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}
    texts = [json.loads(received.body)["data"]["record_id"] for received in receiver.received[MAX_ATTEMPTS:]]
    assert len(texts) == 2


def test_the_delivery_log_shows_every_attempt(tenant, receiver):
    subscription = subscribe(tenant, receiver.url)
    receiver.status = 503
    _write(tenant, "Likes tea")
    deliver_queued()
    receiver.status = 200
    webhooks_dispatch(now=timezone.now() + timedelta(minutes=1))
    deliver_queued()

    answer = tenant.client().get(f"/v1/webhooks/{subscription['id']}/deliveries")

    assert answer.status_code == 200
    [delivery] = answer.json()["data"]
    assert delivery["status"] == "delivered" and delivery["event"] == "record.created"
    assert [(attempt["number"], attempt["status_code"], attempt["error_code"]) for attempt in delivery["attempts"]] == [
        (1, 503, "http_503"), (2, 200, ""),
    ]


def test_an_erased_persons_waiting_deliveries_go_with_her_and_her_erasure_is_told(tenant, receiver):
    """R-3.4: events about her, waiting or sent, are erased with her; subscribers are told she was erased."""
    subscribe(tenant, receiver.url, events=["record.created", "person.erased"])
    receiver.stop()
    _write(tenant, "Anna likes tea", subject="anna")
    _write(tenant, "Bram likes coffee", subject="bram")
    deliver_queued()
    receiver.start()

    answer = person_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject="anna")
    assert answer["erased"]["webhook_events"] == 1
    webhooks_dispatch(now=timezone.now() + timedelta(minutes=1))
    deliver_queued()

    told = sorted((body["type"], body["data"].get("subject")) for body in (json.loads(r.body) for r in receiver.received))
    assert told == [("person.erased", "anna"), ("record.created", "bram")]
    assert not WebhookEvent.objects.filter(subject="anna").exists()
    # Sent: Core keeps no copy of her name.
    assert WebhookEvent.objects.get(kind="person.erased").payload["data"] == {"subject": "[erased]"}


def test_an_address_that_became_private_is_refused_at_delivery(tenant, receiver, settings):
    subscribe(tenant, receiver.url)
    settings.CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS = False
    _write(tenant, "Likes tea")

    [outcome] = deliver_queued()

    assert outcome.error_code == "address_refused"
    assert receiver.received == []
    assert "127.0.0.1" in WebhookAttempt.objects.get().error_message
