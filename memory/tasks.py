"""Memory's Celery tasks: a record's vector, after the write that made it committed (R-4.1)."""
from celery import shared_task
from django.db import InterfaceError, OperationalError

from memory.embedding.services import record_embeddings_refresh


@shared_task(
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    max_retries=5,
    retry_backoff=True,
    soft_time_limit=60,
    time_limit=90,
)
def record_embed_task(record_id: str) -> dict:
    outcome = record_embeddings_refresh(record_ids=[record_id])
    return {"record_id": record_id, "embedded": outcome.embedded, "unchanged": outcome.unchanged, "skipped": outcome.skipped}
