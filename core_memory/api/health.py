"""`/healthz`: the database and the broker are reachable."""
from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from core_memory.api.middleware import RETRY_AFTER_SECONDS
from core_memory.celery import app


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
