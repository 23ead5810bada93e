"""`/healthz` (core_memory.api.health, R-1.5)."""
import os

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

# Redis when REDIS_URL is set, the filesystem broker of development otherwise.
BROKER = "redis" if os.environ.get("REDIS_URL") else "filesystem"


def test_healthz_reports_database_and_broker(settings):
    """R-1.5: `/healthz` answers 200 when the database and the broker (Redis when REDIS_URL is set) are reachable."""
    response = Client().get("/healthz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"database": True, "broker": True},
        "broker": BROKER,
    }


def test_healthz_is_a_503_when_the_broker_is_unreachable(monkeypatch):
    """R-1.5: a health check that cannot fail is no check."""
    from core_memory.celery import app

    monkeypatch.setattr(app.conf, "broker_write_url", "redis://127.0.0.1:1/0")

    response = Client().get("/healthz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": True, "broker": False},
        "broker": BROKER,
    }
