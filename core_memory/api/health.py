"""`/healthz`: the database and the broker are reachable. `/readyz`: this process can serve
(the database reachable and migrated, the broker reachable, the embedding model inside Core loaded
where an index embeds with it), naming what is not ready."""
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from core_memory.api.middleware import RETRY_AFTER_SECONDS
from core_memory.celery import app
from core_memory.llm.embedding_models import IN_PROCESS
from core_memory.llm.embeddings import embedding_model_ready, embeddings_enabled
from memory.embedding.selectors import embedding_indexes


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except Exception:  # noqa: BLE001 — any failure means unhealthy
        return False


def _broker_ok() -> bool:
    try:
        with app.connection_for_write() as broker:
            broker.ensure_connection(max_retries=1, timeout=2)
        return True
    except Exception:  # noqa: BLE001
        return False


@require_GET
def healthz(request):
    checks = {"database": _database_ok(), "broker": _broker_ok()}
    healthy = all(checks.values())
    response = JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": checks, "broker": settings.CELERY_BROKER_URL.split("://")[0]},
        status=200 if healthy else 503,
    )
    if not healthy:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


# Once migrated, a process stays so (a later release's migrations come with a restart).
_migrated: list[bool] = []


def _migrations_applied() -> bool:
    if not _migrated:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            return False
        _migrated.append(True)
    return True


def _embedding_model_ok() -> bool:
    if not embeddings_enabled() or not embedding_indexes().filter(embedding_model=IN_PROCESS).exists():
        return True
    return embedding_model_ready()


def _not_ready() -> list[str]:
    if not _database_ok():
        not_ready = ["database"]
    else:
        not_ready = [name for name, check in (("migrations", _migrations_applied), ("embedding_model", _embedding_model_ok)) if not check()]
    if not _broker_ok():
        not_ready.append("broker")
    return not_ready


@require_GET
def readyz(request):
    """200 when this process can serve, else a 503 naming what is not ready (`not_ready`)."""
    not_ready = _not_ready()
    response = JsonResponse({"status": "unavailable" if not_ready else "ready", "not_ready": not_ready}, status=503 if not_ready else 200)
    if not_ready:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
