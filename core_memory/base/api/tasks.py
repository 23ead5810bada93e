from celery import shared_task

from core_memory.base.api.idempotency import idempotency_purge


# The name it had before the module moved down to the ground floor: queued work and the beat
# schedule know it by that name.
@shared_task(name="core_memory.api.tasks.idempotency_purge_task", acks_late=True, max_retries=3, autoretry_for=(Exception,), retry_backoff=True, soft_time_limit=120, time_limit=180)
def idempotency_purge_task() -> dict:
    return {"purged": idempotency_purge()}
