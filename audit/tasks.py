from celery import shared_task

from audit.services import audit_retention_purge


@shared_task(acks_late=True, max_retries=3, autoretry_for=(Exception,), retry_backoff=True, soft_time_limit=300, time_limit=360)
def audit_retention_purge_task() -> dict:
    return {"purged": audit_retention_purge()}
