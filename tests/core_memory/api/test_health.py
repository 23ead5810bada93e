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


def test_readyz_is_ready_when_the_database_is_migrated_and_the_broker_reachable():
    """Issue 30: `/readyz` says whether this process can serve; `/healthz` stays liveness."""
    response = Client().get("/readyz")

    assert response.status_code == 200
    assert response.json() == {"status": "ready", "not_ready": []}


def test_readyz_names_the_broker_when_it_is_unreachable(monkeypatch):
    from core_memory.celery import app

    monkeypatch.setattr(app.conf, "broker_write_url", "redis://127.0.0.1:1/0")

    response = Client().get("/readyz")

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "not_ready": ["broker"]}
    assert response["Retry-After"] == "5"


def test_readyz_names_migrations_not_applied(monkeypatch):
    from core_memory.api import health

    monkeypatch.setattr(health, "_migrated", [])
    monkeypatch.setattr(health.MigrationExecutor, "migration_plan", lambda self, targets: [("a migration", False)])

    response = Client().get("/readyz")

    assert response.status_code == 503
    assert response.json()["not_ready"] == ["migrations"]


def test_readyz_names_the_embedding_model_when_an_index_embeds_and_it_cannot_load(embedding_index, monkeypatch):
    from core_memory.llm import embeddings

    def cannot_load():
        raise OSError("no model")

    monkeypatch.setattr(embeddings, "_engine", cannot_load)

    response = Client().get("/readyz")

    assert response.status_code == 503
    assert response.json()["not_ready"] == ["embedding_model"]


def test_readyz_loads_the_embedding_model_where_an_index_embeds(embedding_index):
    response = Client().get("/readyz")

    assert response.status_code == 200
