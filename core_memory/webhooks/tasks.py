"""The webhook deliveries' Celery tasks: one per delivery, a dispatcher on beat that queues
the retries that are due and hands out deliveries left behind (core_memory.base.work.tasks),
and the delivery log's daily purge."""
from celery import shared_task
from django.conf import settings

from core_memory.base.work.tasks import durable_tasks
from core_memory.webhooks.delivery import webhook_delivery_run, webhook_log_purge, webhooks_dispatch

webhooks_delivery_task, webhooks_dispatch_task = durable_tasks(
    app="webhooks",
    noun="delivery",
    seconds=settings.CORE_WEBHOOKS_TIMEOUT_SECONDS * 3 + 30,
    run=lambda *, unit_id: webhook_delivery_run(delivery_id=unit_id),
    dispatch=lambda: webhooks_dispatch(),
)


@shared_task(acks_late=True, max_retries=3, autoretry_for=(Exception,), retry_backoff=True, soft_time_limit=300, time_limit=360)
def webhooks_log_purge_task() -> dict:
    return {"purged": webhook_log_purge()}
