"""The retention purge runs through a real broker and worker (R-11.1, R-1.4's beat path)."""
import os
import uuid
from datetime import timedelta

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from django.utils import timezone

import audit.tasks  # noqa: F401 — registers the shared task with every app
from audit.models import AuditEvent
from tests.audit.builders import audit_event_at
from tests.factories import OrganisationFactory

REDIS_URL = os.environ.get("REDIS_URL", "")

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is unset: no Redis broker to run a real worker against"),
]


@pytest.fixture
def broker_app():
    """An app on the Redis at REDIS_URL with a queue of its own, so a colleague's worker cannot take our task."""
    test_app = Celery("core_memory_worker_test", set_as_current=False)
    test_app.config_from_object("django.conf:settings", namespace="CELERY")
    test_app.conf.update(
        broker_url=REDIS_URL,
        result_backend=REDIS_URL,
        broker_transport_options={},
        task_default_queue=f"test-{uuid.uuid4().hex}",
    )
    yield test_app
    test_app.close()


def test_retention_purge_task_round_trip_through_redis_and_a_worker(broker_app):
    organisation = OrganisationFactory(audit_retention_days=1)
    old = audit_event_at(organisation_id=organisation.id, at=timezone.now() - timedelta(days=2))
    recent = audit_event_at(organisation_id=organisation.id, at=timezone.now())

    with start_worker(broker_app, perform_ping_check=False, shutdown_timeout=30):
        result = broker_app.tasks["audit.tasks.audit_retention_purge_task"].delay()
        answer = result.get(timeout=60)

    assert answer == {"purged": 1}
    assert not AuditEvent.objects.filter(pk=old.pk).exists()
    assert AuditEvent.objects.filter(pk=recent.pk).exists()
