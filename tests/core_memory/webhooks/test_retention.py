"""The delivery log is kept CORE_WEBHOOKS_LOG_DAYS: older events every subscriber received go
with their deliveries and attempts; one still waiting to be sent stays, however old."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from core_memory.beat import BEAT_SCHEDULE
from core_memory.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEvent
from core_memory.webhooks.delivery import webhook_log_purge
from core_memory.webhooks.tasks import webhooks_log_purge_task
from tests.core_memory.webhooks.conftest import deliver_queued, subscribe


def _write(tenant, text: str, *, deliver: bool = True) -> None:
    """A record written, and the event about it sent (one attempt) unless `deliver` is false."""
    answer = tenant.client(subject="anna").post("/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": text}, format="json")
    assert answer.status_code == 201, answer.json()
    if deliver:
        deliver_queued()


def _aged(days: float) -> None:
    """Every event so far made `days` ago."""
    WebhookEvent.objects.unscoped().update(created_at=timezone.now() - timedelta(days=days))


def test_old_delivered_events_go_with_their_attempts_and_recent_ones_stay(tenant, receiver, settings):
    settings.CORE_WEBHOOKS_LOG_DAYS = 30
    subscribe(tenant, receiver.url)
    _write(tenant, "Likes tea")
    _aged(31)
    _write(tenant, "Likes coffee")
    recent = WebhookEvent.objects.unscoped().order_by("-id").first()

    assert webhook_log_purge() == 1

    assert list(WebhookEvent.objects.unscoped().values_list("pk", flat=True)) == [recent.pk]
    assert list(WebhookDelivery.objects.unscoped().values_list("run_id", flat=True)) == [recent.pk]
    assert WebhookAttempt.objects.unscoped().count() == 1
    assert webhook_log_purge() == 0


def test_an_old_event_still_waiting_for_a_delivery_is_kept_whole(tenant, receiver, settings):
    """A paused subscription's deliveries wait until it is resumed (issue 31: a receiver's downtime
    loses nothing), and their attempts say why: neither goes, however old."""
    settings.CORE_WEBHOOKS_LOG_DAYS = 1
    subscribe(tenant, receiver.url)
    receiver.status = 503
    _write(tenant, "Likes tea")
    _write(tenant, "Likes coffee", deliver=False)  # queued, never tried
    _aged(10)

    assert webhook_log_purge() == 0

    assert WebhookEvent.objects.unscoped().count() == 2
    assert list(WebhookDelivery.objects.unscoped().order_by("id").values_list("status", flat=True)) == ["failed", "queued"]
    assert WebhookAttempt.objects.unscoped().count() == 1


def test_the_log_purge_runs_nightly_on_beat(tenant, receiver, settings):
    settings.CORE_WEBHOOKS_LOG_DAYS = 7
    subscribe(tenant, receiver.url)
    _write(tenant, "Likes tea")
    _aged(8)

    assert webhooks_log_purge_task() == {"purged": 1}
    assert webhooks_log_purge_task.name in {entry["task"] for entry in BEAT_SCHEDULE.values()}
