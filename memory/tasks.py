"""Memory's Celery tasks: a record's vector (or a batch's), after the write that made it committed, every
vector of an index that has just switched embeddings on, and an index's switch to another
embedding model as durable work (core_memory.base.work.tasks: a dispatcher on beat, one task per
batch, which only the attempt that claims the batch runs)."""
from celery import shared_task
from django.db import InterfaceError, OperationalError

from memory.embedding.selectors import embeddable_record_ids, embedding_indexes
from memory.embedding.services import record_embeddings_refresh
from core_memory.base.work.tasks import durable_tasks
from memory.embedding.switching import LEASE, embedding_batch_run, embedding_switches_dispatch


class EmbeddingsMissing(Exception):
    """A model served elsewhere failed for some records: the task runs again later."""


# A vector's task: retried while the database is unreachable, acknowledged once done.
EMBED_OPTIONS = {
    "acks_late": True, "reject_on_worker_lost": True, "autoretry_for": (OperationalError, InterfaceError), "max_retries": 5,
    "retry_backoff": True,
}


@shared_task(**EMBED_OPTIONS, soft_time_limit=60, time_limit=90)
def record_embed_task(record_id: str) -> dict:
    outcome = record_embeddings_refresh(record_ids=[record_id])
    if outcome.failed:
        # The embedding model served elsewhere is down or answered nonsense: try again, backing
        # off; `embed_records` catches up with what is still missing after the last try.
        raise record_embed_task.retry(exc=EmbeddingsMissing(record_id), countdown=min(600, 10 * 2**record_embed_task.request.retries))
    return {"record_id": record_id, "embedded": outcome.embedded, "unchanged": outcome.unchanged, "skipped": outcome.skipped}


@shared_task(**EMBED_OPTIONS, soft_time_limit=120, time_limit=150)
def records_embed_task(record_ids: list[str]) -> dict:
    """The vectors of records written together (a batch), a few dozen at a time; retried as
    `record_embed_task` is when a model served elsewhere failed for some."""
    outcome = record_embeddings_refresh(record_ids=record_ids)
    if outcome.failed:
        raise records_embed_task.retry(exc=EmbeddingsMissing(record_ids[0]), countdown=min(600, 10 * 2**records_embed_task.request.retries))
    return {"records": len(record_ids), "embedded": outcome.embedded, "unchanged": outcome.unchanged, "skipped": outcome.skipped}


@shared_task(**EMBED_OPTIONS)
def index_embed_task(index_id: str) -> dict:
    """The backfill `manage.py embed_records --index` runs, for one index: records whose vector
    is current are skipped, so a retry or a second switch repeats nothing."""
    embedded = unchanged = skipped = 0
    for record_ids in embeddable_record_ids(indexes=embedding_indexes(index_ids=[index_id]), batch=64):
        outcome = record_embeddings_refresh(record_ids=record_ids)
        embedded, unchanged, skipped = embedded + outcome.embedded, unchanged + outcome.unchanged, skipped + outcome.skipped
    return {"index_id": index_id, "embedded": embedded, "unchanged": unchanged, "skipped": skipped}


def _batch_run(*, unit_id: str):
    return embedding_batch_run(batch_id=unit_id)


# `memory.tasks.memory_batch_task(batch_id)` and beat's `memory.tasks.memory_dispatch_task()`.
embedding_batch_task, embedding_switches_dispatch_task = durable_tasks(
    app="memory", noun="batch", seconds=int(LEASE.total_seconds()), run=_batch_run, dispatch=embedding_switches_dispatch
)
