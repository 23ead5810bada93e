from celery import shared_task

from core_memory.api.idempotency import idempotency_purge


@shared_task(acks_late=True, max_retries=3, autoretry_for=(Exception,), retry_backoff=True, soft_time_limit=120, time_limit=180)
def idempotency_purge_task() -> dict:
    return {"purged": idempotency_purge()}
