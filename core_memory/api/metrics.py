"""`/metrics`: Prometheus's text format, served only to the scraper the operator names (the bearer
token in `CORE_METRICS_TOKEN`; without it, or with another token, the address does not exist: 404).

The counters and histograms come from where things happen (core_memory.base.telemetry.metrics),
added up over the processes when `PROMETHEUS_MULTIPROC_DIR` is set. The gauges of shared state
are read at scrape time: the broker's queue depth and oldest task age, extraction windows and
maintenance jobs by state, the embeddings backlog, the database's connections by state and the
audit chains' last verification. Each source is read on its own: one that fails is left out of
the answer (and logged), the others still are."""
from __future__ import annotations

import hmac
import logging
import os
import time
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.http import Http404, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

from audit.verification import audit_verification_last
from core_memory.celery import app
from core_memory.llm.embedding_models import IN_PROCESS
from core_memory.llm.embeddings import embeddings_enabled
from extraction.models import ExtractionWindow
from maintenance.models import MaintenanceJob
from memory.embedding.storage import embedding_storage_ready
from memory.models import MemoryRecord, RecordEmbedding
from stores.models import KnowledgeIndex

logger = logging.getLogger(__name__)

# The most a scrape's own reads may take in the database.
READ_TIMEOUT_MILLISECONDS = 2000
_BACKLOG = f"""
    SELECT count(*) FROM {MemoryRecord._meta.db_table} record
    JOIN {KnowledgeIndex._meta.db_table} knowledge_index ON knowledge_index.id = record.index_id
    WHERE knowledge_index.embeddings AND knowledge_index.embedding_model = %s AND knowledge_index.deleted_at IS NULL AND record.status = %s
      AND NOT EXISTS (SELECT 1 FROM {RecordEmbedding._meta.db_table} embedding WHERE embedding.record_id = record.id)
"""


def _by_state(table: str) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT status, count(*) FROM {table} GROUP BY status")
        return dict(cursor.fetchall())


def _work_gauges():
    for name, model, documentation in (
        ("core_extraction_windows", ExtractionWindow, "Extraction windows by state."),
        ("core_maintenance_jobs", MaintenanceJob, "Maintenance jobs by state."),
    ):
        family = GaugeMetricFamily(name, documentation, labels=["state"])
        counts = _by_state(model._meta.db_table)
        for state in model.Status.values:
            family.add_metric([state], counts.get(state, 0))
        yield family


def _embedding_gauges():
    family = GaugeMetricFamily("core_embeddings_backlog", "Active records of indexes that embed with the model inside Core, without their vector yet.")
    if embeddings_enabled() and embedding_storage_ready():
        with connection.cursor() as cursor:
            cursor.execute(_BACKLOG, [IN_PROCESS, MemoryRecord.Status.ACTIVE])
            family.add_metric([], cursor.fetchone()[0])
    else:
        family.add_metric([], 0)
    yield family


def _connection_gauges():
    family = GaugeMetricFamily("core_database_connections", "Connections to Core's database, by state (pg_stat_activity).", labels=["state"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(state, 'unknown'), count(*) FROM pg_stat_activity WHERE datname = current_database() GROUP BY 1")
        for state, count in cursor.fetchall():
            family.add_metric([state], count)
    yield family


def _audit_gauges():
    at, intact = audit_verification_last()
    last = GaugeMetricFamily("core_audit_chain_last_verification_timestamp_seconds", "When the audit chains were last verified (0: not since the broker's store began).")
    last.add_metric([], at or 0)
    whole = GaugeMetricFamily("core_audit_chain_intact", "Whether every audit chain was intact at the last verification (1) or not (0).")
    whole.add_metric([], 1 if intact in (None, True) else 0)
    yield last
    yield whole


def _queue_gauges():
    depth = GaugeMetricFamily("core_celery_queue_depth", "Tasks waiting in the broker, by queue.", labels=["queue"])
    oldest = GaugeMetricFamily("core_celery_oldest_task_age_seconds", "Age of the oldest waiting task, by queue (0: none waits).", labels=["queue"])
    queue = app.conf.task_default_queue
    count, queued_at = _queue_state(queue)
    depth.add_metric([queue], count)
    oldest.add_metric([queue], max(0.0, time.time() - queued_at) if queued_at else 0.0)
    yield depth
    yield oldest


def _queue_state(queue: str) -> tuple[int, float | None]:
    """How many tasks wait and when the oldest was queued, on Redis or the file-system broker."""
    import json

    with app.connection_for_read() as broker:
        transport = broker.transport_options
        if broker.transport_cls in ("filesystem", "kombu.transport.filesystem:Transport") or settings.CELERY_BROKER_URL.startswith("filesystem"):
            folder = Path(transport["data_folder_in"])
            times = [entry.stat().st_mtime for entry in folder.iterdir() if entry.is_file()]
            return len(times), min(times) if times else None
        client = broker.default_channel.client
        count = client.llen(queue)
        oldest = client.lindex(queue, -1) if count else None
    if oldest is None:
        return count, None
    headers = json.loads(oldest).get("headers") or {}
    return count, headers.get("core_queued_at")


class _SharedStateCollector:
    """The gauges read at scrape time; a source that fails is left out."""

    sources = (_queue_gauges, _work_gauges, _embedding_gauges, _connection_gauges, _audit_gauges)

    def collect(self):
        for source in self.sources:
            try:
                with transaction.atomic():
                    with connection.cursor() as cursor:
                        cursor.execute(f"SET LOCAL statement_timeout = {READ_TIMEOUT_MILLISECONDS}")
                    families = list(source())
            except Exception:  # noqa: BLE001 — one source down must not hide the others
                logger.warning("metrics.source.failed", extra={"source": source.__name__}, exc_info=True)
                continue
            yield from families


def _exposition() -> bytes:
    """The processes' counts (every process's with `PROMETHEUS_MULTIPROC_DIR`, else this one's), then the shared state's gauges."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        counted = CollectorRegistry(auto_describe=False)
        MultiProcessCollector(counted)
    else:
        counted = REGISTRY
    shared = CollectorRegistry(auto_describe=False)
    shared.register(_SharedStateCollector())
    return generate_latest(counted) + generate_latest(shared)


def _scraper_named(request) -> bool:
    token = settings.CORE_METRICS_TOKEN
    if not token:
        return False
    scheme, _, sent = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(sent.strip().encode(), token.encode())


@require_GET
def metrics(request):
    if not _scraper_named(request):
        raise Http404
    return HttpResponse(_exposition(), content_type=CONTENT_TYPE_LATEST)
