from __future__ import annotations

import pytest

from core_memory.webhooks.delivery import webhook_delivery_run
from core_memory.webhooks.models import WebhookDelivery
from tests.webhook_receiver import WebhookReceiver


@pytest.fixture
def receiver(settings):
    """A real receiver on loopback, which the operator's switch lets subscriptions point at."""
    settings.CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS = True
    settings.CORE_WEBHOOKS_TIMEOUT_SECONDS = 2
    with WebhookReceiver() as running:
        yield running


def deliver_queued() -> list:
    """What the delivery tasks do after a commit (a test's transaction never commits): one attempt
    at every queued delivery, oldest first."""
    queued = WebhookDelivery.objects.unscoped().filter(status="queued").order_by("id").values_list("id", flat=True)
    return [webhook_delivery_run(delivery_id=delivery_id) for delivery_id in queued]


def subscribe(tenant, url: str, events=("record.created",)) -> dict:
    answer = tenant.client().post("/v1/webhooks", {"url": url, "events": list(events)}, format="json")
    assert answer.status_code == 201, answer.json()
    return answer.json()
