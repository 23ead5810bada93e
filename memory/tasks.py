"""Memory's Celery tasks: a record's vector, after the write that made it committed,
and every vector of an index that has just switched embeddings on."""
from celery import shared_task
from django.db import InterfaceError, OperationalError

from memory.embedding.selectors import embeddable_record_ids, embedding_indexes
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


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError, InterfaceError), max_retries=5, retry_backoff=True)
def index_embed_task(index_id: str) -> dict:
    """The backfill `manage.py embed_records --index` runs, for one index: records whose vector
    is current are skipped, so a retry or a second switch repeats nothing."""
    embedded = unchanged = skipped = 0
    for record_ids in embeddable_record_ids(indexes=embedding_indexes(index_ids=[index_id]), batch=64):
        outcome = record_embeddings_refresh(record_ids=record_ids)
        embedded, unchanged, skipped = embedded + outcome.embedded, unchanged + outcome.unchanged, skipped + outcome.skipped
    return {"index_id": index_id, "embedded": embedded, "unchanged": unchanged, "skipped": skipped}
