"""Sending an event to a subscription: one attempt at one delivery, retries with backoff, and a
subscription paused when a delivery has used all its attempts.

A delivery is durable work (core_memory.base.work): one worker at a time claims it, the attempt
posts outside any transaction, and its end is written with the attempt's log entry in one
transaction that first locks the delivery by its claim. A worker killed mid-attempt leaves a
claim that runs out; the dispatcher hands the delivery out again. The receiver may so get an
event twice, never with another `webhook-id`: Standard Webhooks asks receivers to drop repeats.

Each attempt is signed afresh (`webhook-timestamp` is the attempt's time, so a receiver's
tolerance window holds for a retry a day later) over the same body. After a failed attempt the
delivery is tried again after `RETRY_AFTER[n]` (within a minute of it: the dispatcher runs every
minute); after the last one the subscription is paused, its owner told in the audit log
(`webhook.paused`) and on the console, and its deliveries wait until she resumes it.

The log is kept `CORE_WEBHOOKS_LOG_DAYS`: a nightly purge removes the older events that wait for
no delivery any more, with their deliveries and attempts (`webhook_log_purge`).
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.base.work.claims import FAILED, QUEUED, work_to_hand_out_again
from core_memory.base.work.dispatch import Dispatch
from core_memory.base.work.runner import End, WorkFailed, WorkRunner
from core_memory.webhooks.addresses import AddressRefused, Destination, webhook_destination
from core_memory.webhooks.models import DELIVERED, WebhookAttempt, WebhookDelivery, WebhookEvent, WebhookSubscription

logger = logging.getLogger(__name__)

# How long after each failed attempt the next one is made: eight attempts over about 28 hours,
# the schedule Standard Webhooks' reference implementation uses.
RETRY_AFTER = (
    timedelta(seconds=5),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=5),
    timedelta(hours=10),
    timedelta(hours=10),
)
MAX_ATTEMPTS = len(RETRY_AFTER) + 1
USER_AGENT = "Core-Geheugen-Webhooks/1"
ACTOR = "core:webhooks"
PERSON_ERASED = "person.erased"
ERASED_MARK = "[erased]"
# Events purged from the delivery log per transaction.
PURGE_CHUNK = 500


@dataclass(frozen=True)
class Answered:
    """What one attempt got back: the receiver's status code (None: no answer) and how long it
    took. A delivery spends no model tokens; the runner adds these zeros to its counts."""

    status_code: int | None
    duration_ms: int
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Prepared:
    destination: Destination
    body: str
    headers: dict[str, str]


@dataclass(frozen=True)
class DeliveryOutcome:
    delivery_id: str
    index_id: str | None  # the subscription: the framework's name for a unit's owner
    status: str
    error_code: str = ""


def delivery_body(event: WebhookEvent) -> str:
    """The bytes every attempt posts and signs: the event's payload as compact JSON."""
    return json.dumps(event.payload, separators=(",", ":"), ensure_ascii=False)


def delivery_headers(*, event: WebhookEvent, secret: str, body: str, at: datetime) -> dict[str, str]:
    """Standard Webhooks' headers for one attempt: the event's id, the attempt's time, the signature."""
    signature = Webhook(secret).sign(msg_id=event.id, timestamp=at, data=body)
    return {
        "webhook-id": event.id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


def _post(prepared: Prepared) -> Answered:
    """Posts to the checked address itself (not to a second look-up of the name), with the
    name in `Host` and, for https, in the TLS handshake, whose certificate must match it.
    Redirects are not followed: one could lead anywhere."""
    destination = prepared.destination
    address = f"[{destination.address}]" if destination.address.version == 6 else str(destination.address)
    parts = urlsplit(destination.url)
    url = urlunsplit((parts.scheme, f"{address}:{destination.port}", parts.path or "/", parts.query, ""))
    headers = {**prepared.headers, "host": parts.netloc.rpartition("@")[2]}
    extensions = {"sni_hostname": destination.host} if destination.scheme == "https" else {}
    started = time.monotonic()

    def answered(status_code: int | None = None) -> Answered:
        return Answered(status_code=status_code, duration_ms=int((time.monotonic() - started) * 1000))

    try:
        with httpx.Client(timeout=settings.CORE_WEBHOOKS_TIMEOUT_SECONDS, follow_redirects=False, trust_env=False) as client:
            response = client.post(url, content=prepared.body.encode(), headers=headers, extensions=extensions)
    except httpx.TimeoutException:
        raise WorkFailed("timeout", "The receiver did not answer in time.", usage=answered()) from None
    except httpx.HTTPError as error:
        raise WorkFailed("connection_error", f"The receiver could not be reached: {type(error).__name__}.", usage=answered()) from None
    if not 200 <= response.status_code < 300:
        code = response.status_code
        raise WorkFailed(f"http_{code}", f"The receiver answered {code}.", usage=answered(code))
    return answered(response.status_code)


class DeliveryRunner(WorkRunner):
    unit_model = WebhookDelivery
    run_model = WebhookEvent
    noun = "delivery"
    events = "webhooks.delivery"
    done_status = DELIVERED
    max_attempts = MAX_ATTEMPTS
    related = ("subscription", "run")

    def lease(self) -> timedelta:
        # Resolving, connecting and the answer each get the timeout, with room to write the end.
        return timedelta(seconds=settings.CORE_WEBHOOKS_TIMEOUT_SECONDS * 3 + 30)

    def owner(self, unit: WebhookDelivery, now: datetime) -> WebhookSubscription | None:
        """The subscription while it is active: a paused one's deliveries wait, queued."""
        subscription = unit.subscription
        return subscription if subscription.status == WebhookSubscription.Status.ACTIVE else None

    def prepare(self, unit: WebhookDelivery, owner: WebhookSubscription, now: datetime) -> Prepared:
        try:
            destination = webhook_destination(owner.url)
        except AddressRefused as refused:
            raise WorkFailed("address_refused", refused.message) from None
        body = delivery_body(unit.run)
        return Prepared(destination=destination, body=body, headers=delivery_headers(event=unit.run, secret=owner.secret, body=body, at=timezone.now()))

    def asks(self, prepared: Prepared) -> bool:
        return True

    def limit_reached(self, unit: WebhookDelivery, owner: WebhookSubscription, now: datetime) -> bool:
        return False

    def ask(self, unit: WebhookDelivery, owner: WebhookSubscription, prepared: Prepared, now: datetime):
        answered = _post(prepared)
        return answered, answered

    def write(self, unit: WebhookDelivery, prepared: Prepared, answer: Answered, now: datetime) -> Mapping[str, int]:
        return {"written": 1}

    def run_counts(self, unit: WebhookDelivery, end: End) -> Mapping[str, int]:
        return {}

    def counted(self, unit: WebhookDelivery, end: End) -> None:
        """Inside the end's transaction: the attempt's log entry, and after a failure the next
        attempt's time or, after the last, the subscription paused."""
        super().counted(unit, end)
        answered = end.usage if isinstance(end.usage, Answered) else Answered(status_code=None, duration_ms=0)
        WebhookAttempt.objects.create(
            organisation_id=unit.organisation_id, delivery=unit, number=unit.attempts, at=timezone.now(),
            status_code=answered.status_code, duration_ms=answered.duration_ms, error_code=end.code, error_message=end.message[:500],
        )
        unit.next_attempt_at = None
        if end.status != FAILED:
            _payload_scrub_when_done(unit)
            return
        if unit.attempts < MAX_ATTEMPTS:
            unit.next_attempt_at = timezone.now() + RETRY_AFTER[unit.attempts - 1]
        else:
            _subscription_pause(subscription_id=unit.subscription_id, organisation_id=unit.organisation_id, delivery=unit, code=end.code)

    def outcome(self, unit_id: str, unit: WebhookDelivery | None, end: End | None) -> DeliveryOutcome:
        subscription_id = unit.subscription_id if unit is not None else None
        if end is None:
            return DeliveryOutcome(delivery_id=unit_id, index_id=subscription_id, status="skipped")
        return DeliveryOutcome(delivery_id=unit_id, index_id=subscription_id, status=end.status, error_code=end.code)


def _payload_scrub_when_done(unit: WebhookDelivery) -> None:
    """`person.erased` names her so that subscribers can erase her too; once every delivery of
    it has been sent, Core keeps no copy of her name."""
    event = unit.run
    if event.kind != PERSON_ERASED:
        return
    open_deliveries = WebhookDelivery.objects.for_organisation(unit.organisation_id).filter(run=event).exclude(pk=unit.pk)
    if open_deliveries.exclude(status=DELIVERED).exists():
        return
    event.payload = {**event.payload, "data": {**event.payload["data"], "subject": ERASED_MARK}}
    event.save(update_fields=["payload"])


def _subscription_pause(*, subscription_id: str, organisation_id: str, delivery: WebhookDelivery, code: str) -> None:
    """A delivery used its last attempt: the subscription is paused (unless it already is) and
    the audit log tells its owner why. The console shows paused subscriptions with the reason."""
    subscription = WebhookSubscription.objects.for_organisation(organisation_id).select_for_update().filter(pk=subscription_id).first()
    if subscription is None or subscription.status == WebhookSubscription.Status.PAUSED:
        return
    subscription.status = WebhookSubscription.Status.PAUSED
    subscription.paused_at = timezone.now()
    subscription.paused_reason = f"Delivery {delivery.id} failed {delivery.attempts} times (last: {code})."[:500]
    subscription.save(update_fields=["status", "paused_at", "paused_reason", "updated_at"])
    audit_event_record(
        caller=Caller.system(organisation_id=organisation_id, actor=ACTOR), action="webhook.paused", target=subscription.id,
        details={"delivery_id": delivery.id, "attempts": delivery.attempts, "error_code": code},
    )
    logger.warning("webhooks.subscription.paused", extra={"subscription": subscription.id, "code": code})


RUNNER = DeliveryRunner()


def webhook_delivery_run(*, delivery_id: str, now: datetime | None = None) -> DeliveryOutcome:
    """One attempt at the delivery if it is there to be sent (the module's docstring). Safe to
    call for any delivery any number of times, from any number of workers: only a claim sends."""
    return RUNNER.run(unit_id=delivery_id, now=now)


@dataclass(frozen=True)
class RetryPlan:
    """The deliveries whose next attempt is due, queued again (the framework's plan of a dispatch)."""

    unit_ids: list[str]
    run_id: str | None = None


def deliveries_requeue(deliveries, *, now: datetime) -> list[str]:
    """Inside the caller's transaction: `deliveries` queued again, and each one's event waiting
    for it again. Answers their ids."""
    delivery_ids = list(deliveries.values_list("pk", flat=True))
    if not delivery_ids:
        return []
    queued = WebhookDelivery.objects.unscoped().filter(pk__in=delivery_ids)
    per_event = dict(queued.order_by().values_list("run_id").annotate(count=Count("id")))
    queued.update(status=QUEUED, queued_at=now, next_attempt_at=None, claim_token=None, lease_until=None)
    for event_id, count in per_event.items():
        WebhookEvent.objects.unscoped().filter(pk=event_id).update(pending=F("pending") + count, finished_at=None)
    return delivery_ids


def deliveries_due(*, now: datetime) -> list[str]:
    """The failed deliveries of active subscriptions whose next attempt is due, queued again."""
    due = WebhookDelivery.objects.unscoped().filter(
        status=FAILED, next_attempt_at__lte=now, subscription__status=WebhookSubscription.Status.ACTIVE
    )
    return deliveries_requeue(due, now=now)


def webhooks_recoverable():
    """Deliveries of active subscriptions: those the dispatcher may hand out again."""
    return WebhookDelivery.objects.unscoped().filter(subscription__status=WebhookSubscription.Status.ACTIVE)


def webhooks_dispatch(*, now: datetime | None = None) -> Dispatch:
    """The retries due at `now` queued again, and deliveries left behind by a dead worker (or
    a lost message) handed out again; the caller sends each one's task."""
    now = now or timezone.now()
    with transaction.atomic(durable=True):
        due = deliveries_due(now=now)
        recovered = work_to_hand_out_again(webhooks_recoverable(), clock=timezone.now(), lease=RUNNER.lease())
    if recovered:
        logger.warning("webhooks.delivery.recovered", extra={"units": len(recovered)})
    return Dispatch(plans=[RetryPlan(unit_ids=due)], recovered=recovered)


def webhook_log_purge(*, now: datetime | None = None) -> int:
    """The delivery log's old part, across organisations: every event made more than
    `CORE_WEBHOOKS_LOG_DAYS` before `now` that no delivery waits for any more (each delivered,
    or none left: its subscription was deleted) goes, with its deliveries and their attempts.
    An event with a delivery still to send — queued, being sent, to be retried, or waiting for
    a paused subscription — is kept whole however old, so resuming loses nothing and the log
    still says why it waits. Answers how many events went; short transactions of `PURGE_CHUNK`."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.CORE_WEBHOOKS_LOG_DAYS)
    waiting = WebhookDelivery.objects.unscoped().filter(run=OuterRef("pk")).exclude(status=DELIVERED)
    purged = 0
    while True:
        with transaction.atomic(durable=True):
            old = WebhookEvent.objects.unscoped().filter(created_at__lt=cutoff).exclude(Exists(waiting))
            # No lock: a delivered delivery never changes again, and nothing adds one to an old event.
            chunk = list(old.order_by("created_at").values_list("pk", flat=True)[:PURGE_CHUNK])
            WebhookEvent.objects.unscoped().filter(pk__in=chunk).delete()
        purged += len(chunk)
        if len(chunk) < PURGE_CHUNK:
            return purged
