"""Reading webhook subscriptions and their delivery log, always within one organisation."""
from __future__ import annotations

from functools import cache

from django.db.models import Prefetch, QuerySet

from core_memory.base.callers import Caller
from core_memory.base.errors import NotFound
from core_memory.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEvent, WebhookSubscription


def webhook_subscription_get(*, caller: Caller, subscription_id: str, locked: bool = False) -> WebhookSubscription:
    """The organisation's subscription; another organisation's is as missing as one never made."""
    subscriptions = WebhookSubscription.objects.for_organisation(caller.organisation_id)
    if locked:
        subscriptions = subscriptions.select_for_update()
    subscription = subscriptions.filter(pk=subscription_id).first()
    if subscription is None:
        raise NotFound("No such webhook.")
    return subscription


@cache
def webhook_subscribers_statement() -> str:
    """The SELECT of the ids of an organisation's subscriptions that ask for one kind of event, with
    two parameters (the organisation's id, the kind), as the ORM writes it: for a caller that reads
    them inside a statement of its own (a new record's insert) and tells `webhook_event_emit_to`."""
    query = WebhookSubscription.objects.for_organisation("organisation").filter(events__overlap=["kind"]).values("pk").query
    statement, _params = query.sql_with_params()
    return statement


def webhook_subscriptions_list(*, caller: Caller) -> QuerySet[WebhookSubscription]:
    return WebhookSubscription.objects.for_organisation(caller.organisation_id).order_by("-id")


def webhook_deliveries_list(*, subscription: WebhookSubscription) -> QuerySet[WebhookDelivery]:
    """The subscription's deliveries, newest first, each with its event and its attempts."""
    attempts = WebhookAttempt.objects.for_organisation(subscription.organisation_id).order_by("number")
    return (
        WebhookDelivery.objects.for_organisation(subscription.organisation_id)
        .filter(subscription=subscription)
        .select_related("run")
        .prefetch_related(Prefetch("log", queryset=attempts))
        .order_by("-id")
    )


def webhooks_paused_counted(*, caller: Caller) -> int:
    """How many of the organisation's subscriptions are paused (the console's notice)."""
    return WebhookSubscription.objects.for_organisation(caller.organisation_id).filter(status=WebhookSubscription.Status.PAUSED).count()


def person_webhook_events_counted(*, caller: Caller, subject: str) -> int:
    return WebhookEvent.objects.for_organisation(caller.organisation_id).filter(subject=subject).count()
