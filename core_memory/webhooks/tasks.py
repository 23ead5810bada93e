"""The webhook deliveries' Celery tasks: one per delivery, and a dispatcher on beat that queues
the retries that are due and hands out deliveries left behind (core_memory.base.work.tasks)."""
from django.conf import settings

from core_memory.base.work.tasks import durable_tasks
from core_memory.webhooks.delivery import webhook_delivery_run, webhooks_dispatch

webhooks_delivery_task, webhooks_dispatch_task = durable_tasks(
    app="webhooks",
    noun="delivery",
    seconds=settings.CORE_WEBHOOKS_TIMEOUT_SECONDS * 3 + 30,
    run=lambda *, unit_id: webhook_delivery_run(delivery_id=unit_id),
    dispatch=lambda: webhooks_dispatch(),
)
