"""Webhooks in the console: made, paused, resumed and read with their delivery log, through the same services as the API."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from core_memory.webhooks.delivery import MAX_ATTEMPTS, webhooks_dispatch
from core_memory.webhooks.models import WebhookDelivery, WebhookSubscription
from tests.core_memory.webhooks.conftest import deliver_queued, subscribe

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

PAGES = "/console/webhooks/webhooksubscription/"
# The page's delivery log is an inline: the browser posts its (empty) management form.
NO_DELIVERIES = {"deliveries-TOTAL_FORMS": "0", "deliveries-INITIAL_FORMS": "0", "deliveries-MIN_NUM_FORMS": "0", "deliveries-MAX_NUM_FORMS": "0"}


def test_an_administrator_subscribes_and_is_shown_the_secret_once(console, tenant, receiver):
    answer = console.post(f"{PAGES}add/", {"url": receiver.url, "events": ["record.created", "record.deleted"], "description": "CRM", **NO_DELIVERIES}, follow=True)

    assert answer.status_code == 200
    subscription = WebhookSubscription.objects.get()
    assert subscription.organisation_id == tenant.organisation.id and subscription.events == ["record.created", "record.deleted"]
    assert subscription.secret in answer.content.decode()
    assert subscription.secret not in console.get(f"{PAGES}{subscription.pk}/change/").content.decode()
    assert AuditEvent.objects.get(action="webhook.created").actor == "console:anna"


def test_a_private_address_is_a_form_error_on_the_address(console, tenant, settings):
    settings.CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS = False

    answer = console.post(f"{PAGES}add/", {"url": "http://10.0.0.1/hooks", "events": ["record.created"], **NO_DELIVERIES})

    assert answer.status_code == 200
    assert "not a public address" in answer.context["adminform"].form.errors["url"][0]
    assert not WebhookSubscription.objects.exists()


def test_a_paused_webhook_is_flagged_and_shows_every_attempt_and_resumes_from_the_console(console, tenant, receiver):
    subscription = subscribe(tenant, receiver.url)
    receiver.status = 500
    tenant.client().post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": "Likes tea"}, format="json")
    later = timezone.now()
    for _ in range(MAX_ATTEMPTS):
        deliver_queued()
        later += timedelta(hours=11)
        webhooks_dispatch(now=later)

    listed = console.get(PAGES).content.decode()
    assert "1 webhook is gepauzeerd" in listed and "failed 8 times (last: http_500)" in listed  # the console speaks Dutch
    page = console.get(f"{PAGES}{subscription['id']}/change/").content.decode()
    assert page.count("antwoordde 500") >= MAX_ATTEMPTS and "8. " in page  # each failed attempt, in words

    receiver.status = 204
    form = {"url": receiver.url, "events": ["record.created"], "description": "", "status": "active",
            "deliveries-TOTAL_FORMS": "1", "deliveries-INITIAL_FORMS": "1", "deliveries-MIN_NUM_FORMS": "0", "deliveries-MAX_NUM_FORMS": "0"}
    assert console.post(f"{PAGES}{subscription['id']}/change/", form).status_code == 302
    deliver_queued()

    assert WebhookSubscription.objects.get().status == "active"
    assert WebhookDelivery.objects.get().status == "delivered"
    assert AuditEvent.objects.filter(action="webhook.updated", target=subscription["id"]).get().details == {"fields": ["status"]}
