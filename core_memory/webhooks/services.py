"""Webhook subscriptions and the events they are sent.

Services tell of what happened by calling `webhook_event_emit` inside their own transaction,
explicitly (no signals): the event and its deliveries commit with the change or not at all, and
each delivery's task is sent after the commit. A subscription is made, changed, paused, resumed
and deleted here, each audited in its transaction.
"""
from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.base.errors import InvalidRequest
from core_memory.base.work.claims import FAILED, QUEUED, RUNNING, work_erased
from core_memory.webhooks.addresses import webhook_destination
from core_memory.webhooks.delivery import ERASED_MARK, deliveries_requeue
from core_memory.webhooks.models import EVENT_KINDS, WebhookDelivery, WebhookEvent, WebhookSubscription
from core_memory.webhooks.selectors import webhook_subscription_get
from core_memory.webhooks.tasks import webhooks_delivery_task

SECRET_BYTES = 32
# Her record ids looked for in other events' payloads, so many at a time.
ERASURE_CHUNK = 200
CHANGEABLE = ("url", "events", "description", "status")


def webhook_secret_new() -> str:
    """`whsec_` and 32 random bytes in base64, as Standard Webhooks' libraries read a secret."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _events_check(events: Sequence[str]) -> list[str]:
    unknown = [kind for kind in events if kind not in EVENT_KINDS]
    if not events or unknown:
        raise InvalidRequest(f"Name one or more of the events {', '.join(EVENT_KINDS)}.", param="events")
    return sorted(set(events))


def _deliveries_send(delivery_ids: list[str]) -> None:
    """Each delivery's task, after the commit; a broker that is down loses only the message (the
    dispatcher hands a delivery out again once it has waited longer than a claim lasts)."""
    if delivery_ids:
        transaction.on_commit(lambda: [webhooks_delivery_task.delay(delivery_id) for delivery_id in delivery_ids], robust=True)


@transaction.atomic(durable=True)
def webhook_subscription_create(
    *, caller: Caller, url: str, events: Sequence[str], description: str = ""
) -> WebhookSubscription:
    """A subscription of the organisation's, with a new secret (on the answer, shown once). The
    address is checked as every delivery checks it (core_memory.webhooks.addresses)."""
    webhook_destination(url)
    subscription = WebhookSubscription.objects.create(
        organisation_id=caller.organisation_id, url=url, events=_events_check(events), description=description, secret=webhook_secret_new()
    )
    audit_event_record(
        caller=caller, action="webhook.created", target=subscription.id,
        details={"events": subscription.events},
    )
    return subscription


@transaction.atomic(durable=True)
def webhook_subscription_update(*, caller: Caller, subscription_id: str, changes: dict) -> WebhookSubscription:
    """Changes the address, the events, the description or the status. `status: active` resumes a
    paused subscription: its waiting deliveries go out now, those that used their attempts with
    a fresh set. `status: paused` pauses it by hand."""
    subscription = webhook_subscription_get(caller=caller, subscription_id=subscription_id, locked=True)
    fields = [field for field in CHANGEABLE if field in changes and changes[field] != getattr(subscription, field)]
    if "url" in fields:
        webhook_destination(changes["url"])
    if "events" in fields:
        changes = {**changes, "events": _events_check(changes["events"])}
    for field in fields:
        setattr(subscription, field, changes[field])
    if "status" in fields:
        _status_changed(subscription, actor=caller.actor)
        fields += ["paused_at", "paused_reason"]
    if fields:
        subscription.save(update_fields=[*fields, "updated_at"])
        audit_event_record(
            caller=caller, action="webhook.updated", target=subscription.id,
            details={"fields": [field for field in fields if field in CHANGEABLE]},
        )
    return subscription


def _status_changed(subscription: WebhookSubscription, *, actor: str) -> None:
    if subscription.status == WebhookSubscription.Status.PAUSED:
        subscription.paused_at = timezone.now()
        subscription.paused_reason = f"Paused by {actor}."[:500]
        return
    subscription.paused_at, subscription.paused_reason = None, ""
    waiting = WebhookDelivery.objects.for_organisation(subscription.organisation_id).filter(subscription=subscription)
    # Those that used their attempts start a fresh set; those queued meanwhile are sent now.
    exhausted = waiting.filter(status=FAILED, next_attempt_at__isnull=True)
    exhausted_ids = deliveries_requeue(exhausted, now=timezone.now())
    WebhookDelivery.objects.for_organisation(subscription.organisation_id).filter(pk__in=exhausted_ids).update(attempts=0)
    queued = list(waiting.filter(status=QUEUED).values_list("pk", flat=True))
    _deliveries_send(sorted(set(queued)))


@transaction.atomic(durable=True)
def webhook_subscription_delete(*, caller: Caller, subscription_id: str) -> None:
    """The subscription goes with its delivery log; its events no longer wait for it."""
    subscription = webhook_subscription_get(caller=caller, subscription_id=subscription_id, locked=True)
    deliveries = WebhookDelivery.objects.for_organisation(caller.organisation_id).filter(subscription=subscription)
    work_erased(deliveries, runs=WebhookEvent.objects.for_organisation(caller.organisation_id), now=timezone.now())
    subscription.delete()
    audit_event_record(caller=caller, action="webhook.deleted", target=subscription_id, details={})


def webhook_event_emit(*, caller: Caller, kind: str, data: dict, subject: str | None = None, now: datetime | None = None) -> WebhookEvent | None:
    """Inside the caller's transaction: the event, with a delivery for each subscription of the
    organisation that asked for `kind` (a paused one's waits). `data` names ids and kinds only,
    never what a record says. None when no one subscribed."""
    emitted = webhook_events_emit(events=[EventDraft(organisation_id=caller.organisation_id, kind=kind, data=data, subject=subject)], now=now)
    return emitted[0] if emitted else None


@dataclass(frozen=True)
class EventDraft:
    """An event to tell: its organisation, kind, what it names (`data`) and the person it is about."""

    organisation_id: str
    kind: str
    data: dict
    subject: str | None = None


def webhook_events_emit(*, events: Sequence[EventDraft], now: datetime | None = None) -> list[WebhookEvent]:
    """`webhook_event_emit` for many events at once, in their order: per organisation one read of
    its subscriptions, then one insert of the events and one of their deliveries. Answers the
    events someone subscribed to."""
    now = now or timezone.now()
    written: list[tuple[WebhookEvent, list[str]]] = []
    for organisation_id in dict.fromkeys(event.organisation_id for event in events):
        told = [event for event in events if event.organisation_id == organisation_id]
        subscriptions = list(
            WebhookSubscription.objects.for_organisation(organisation_id)
            .filter(events__overlap=sorted({event.kind for event in told}))
            .values_list("pk", "events")
        )
        written += _events_for(told=told, subscriptions=subscriptions, now=now)
    return _events_write(written, now=now)


def webhook_event_emit_to(*, event: EventDraft, subscription_ids: Sequence[str], now: datetime | None = None) -> list[WebhookEvent]:
    """`webhook_events_emit` for one event whose subscribers the caller read already, in this
    transaction (`webhook_subscribers_statement`)."""
    now = now or timezone.now()
    return _events_write(_events_for(told=[event], subscriptions=[(pk, [event.kind]) for pk in subscription_ids], now=now), now=now)


def _events_for(
    *, told: Sequence[EventDraft], subscriptions: list[tuple[str, list[str]]], now: datetime
) -> list[tuple[WebhookEvent, list[str]]]:
    """The unsaved events of one organisation that a subscription asked for, each with the ids of those that did."""
    written = []
    for event in told:
        subscription_ids = [pk for pk, asked in subscriptions if event.kind in asked]
        if subscription_ids:
            payload = {"type": event.kind, "timestamp": now.isoformat(), "data": event.data}
            row = WebhookEvent(
                organisation_id=event.organisation_id, kind=event.kind, subject=event.subject, payload=payload, started_at=now,
                pending=len(subscription_ids),
            )
            written.append((row, subscription_ids))
    return written


def _events_write(written: list[tuple[WebhookEvent, list[str]]], *, now: datetime) -> list[WebhookEvent]:
    """One insert of the events and one of their deliveries, each delivery's task sent after the commit."""
    if not written:
        return []
    WebhookEvent.objects.bulk_create([event for event, _ in written])
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(organisation_id=event.organisation_id, run=event, subscription_id=subscription_id, queued_at=now)
        for event, subscription_ids in written
        for subscription_id in subscription_ids
    )
    _deliveries_send([delivery.pk for delivery in deliveries])
    return [event for event, _ in written]


def person_webhook_events_erase(*, caller: Caller, subject: str, record_ids: Sequence[str] = ()) -> int:
    """Inside the erasure's transaction: every event about her, with its deliveries (waiting or
    sent) and their log; answers how many events went. Another event that names one of her
    records (a proposal resting on it, a shared record correcting it) keeps going, her record's
    id blanked in it. A delivery being sent holds its row, so this waits for it."""
    events = WebhookEvent.objects.for_organisation(caller.organisation_id).filter(subject=subject)
    in_flight = WebhookDelivery.objects.for_organisation(caller.organisation_id).filter(run__in=events, status=RUNNING)
    list(in_flight.select_for_update().values_list("pk", flat=True))
    _, deleted = events.delete()
    _record_ids_blank(organisation_id=caller.organisation_id, record_ids=set(record_ids))
    return deleted.get(WebhookEvent._meta.label, 0)


def _record_ids_blank(*, organisation_id: str, record_ids: set[str]) -> None:
    ids = sorted(record_ids)
    for start in range(0, len(ids), ERASURE_CHUNK):
        naming = Q()
        for record_id in ids[start:start + ERASURE_CHUNK]:
            naming |= Q(text__contains=record_id)
        events = WebhookEvent.objects.for_organisation(organisation_id).annotate(text=Cast("payload", TextField())).filter(naming)
        for event in events.select_for_update(of=("self",)):
            event.payload = _blanked(event.payload, record_ids)
            event.save(update_fields=["payload"])


def _blanked(value, record_ids: set[str]):
    if isinstance(value, dict):
        return {name: _blanked(inner, record_ids) for name, inner in value.items()}
    if isinstance(value, list):
        return [_blanked(inner, record_ids) for inner in value]
    return ERASED_MARK if isinstance(value, str) and value in record_ids else value

