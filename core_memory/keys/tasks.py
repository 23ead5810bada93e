from celery import shared_task

from core_memory.keys.services import key_trail_purge, keys_expiry_record


@shared_task(acks_late=True, max_retries=3, autoretry_for=(Exception,), retry_backoff=True, soft_time_limit=120, time_limit=180)
def keys_expiry_record_task() -> dict:
    return {"expired": keys_expiry_record(), "forgotten": key_trail_purge()}
