"""Every periodic task, in one reviewed place (installed into django-celery-beat at start)."""
from celery.schedules import crontab

BEAT_SCHEDULE = {
    "audit-retention-purge": {
        "task": "audit.tasks.audit_retention_purge_task",
        "schedule": crontab(minute=17, hour=3),
    },
    "keys-expiry-trail": {
        "task": "core_memory.keys.tasks.keys_expiry_record_task",
        "schedule": crontab(minute=5),
    },
    # Every minute: plan the extraction switches that are due (each runs every
    # `schedule_minutes`) and hand out windows left behind by a dead worker.
    "extraction-dispatch": {
        "task": "extraction.tasks.extraction_dispatch_task",
        "schedule": crontab(),
    },
    # Every minute: plan the stores whose maintenance is due (each every
    # CORE_MAINTENANCE_MINUTES) and hand out jobs left behind by a dead worker.
    "maintenance-dispatch": {
        "task": "maintenance.tasks.maintenance_dispatch_task",
        "schedule": crontab(),
    },
    # Every minute: queue the webhook deliveries whose retry is due and hand out those left
    # behind by a dead worker (core_memory.webhooks.delivery).
    "webhooks-dispatch": {
        "task": "webhooks.tasks.webhooks_dispatch_task",
        "schedule": crontab(),
    },
    # Daily: the delivery log's events older than CORE_WEBHOOKS_LOG_DAYS that wait for nothing go.
    "webhooks-log-purge": {
        "task": "core_memory.webhooks.tasks.webhooks_log_purge_task",
        "schedule": crontab(minute=47, hour=3),
    },
    # Every 15 minutes: end the records whose `expires_at` passed more than the grace period ago.
    "records-expired-end": {
        "task": "maintenance.tasks.records_expired_end_task",
        "schedule": crontab(minute="*/15"),
    },
    # Every minute: plan the indexes switching their embedding model (the records still without
    # the next model's vector, in batches) and hand out batches left behind by a dead worker.
    "embedding-switches-dispatch": {
        "task": "memory.tasks.memory_dispatch_task",
        "schedule": crontab(),
    },
    "idempotency-purge": {
        "task": "core_memory.api.tasks.idempotency_purge_task",
        "schedule": crontab(minute=35),
    },
}
