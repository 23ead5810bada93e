"""R-11.1: events older than each organisation's `audit_retention_days` are purged, by a scheduled task."""
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_retention_purge
from core_memory.beat import BEAT_SCHEDULE
from core_memory.celery import app
from audit.chain import audit_chains_verify
from tests.audit.builders import audit_event_at
from tests.factories import OrganisationFactory

pytestmark = pytest.mark.django_db


def test_purge_removes_only_events_older_than_each_organisations_retention():
    """R-11.1: each organisation's own retention; events are written oldest first, as they happen."""
    short, long = OrganisationFactory(audit_retention_days=30), OrganisationFactory()
    now = timezone.now()
    short_old = audit_event_at(organisation_id=short.id, at=now - timedelta(days=30, minutes=1))
    short_recent = audit_event_at(organisation_id=short.id, at=now - timedelta(days=29, hours=23))
    long_old = audit_event_at(organisation_id=long.id, at=now - timedelta(days=366))
    long_kept = audit_event_at(organisation_id=long.id, at=now - timedelta(days=364))

    purged = audit_retention_purge(now=now)

    assert purged == 2
    remaining = set(AuditEvent.objects.filter(organisation_id__in=[short.id, long.id]).values_list("id", flat=True))
    assert remaining == {short_recent.id, long_kept.id}
    assert not remaining & {short_old.id, long_old.id}
    assert all(report.intact for report in audit_chains_verify())


def test_the_purge_removes_the_start_of_a_chain_only():
    """R-11.1 with a hash chain: an expired event written after a younger one (a clock that went
    back) waits until the younger one expires too, so a purge never cuts a chain in the middle."""
    now = timezone.now()
    organisation = OrganisationFactory(audit_retention_days=30)
    young = audit_event_at(organisation_id=organisation.id, at=now - timedelta(days=1))
    late_old = audit_event_at(organisation_id=organisation.id, at=now - timedelta(days=40))

    assert audit_retention_purge(now=now) == 0
    assert audit_retention_purge(now=now + timedelta(days=30)) == 0  # the future is not the purge's to choose

    assert set(AuditEvent.objects.filter(organisation_id=organisation.id).values_list("id", flat=True)) == {young.id, late_old.id}


def test_events_of_an_organisation_that_no_longer_exists_are_purged_after_a_year(tenant):
    now = timezone.now()
    old = audit_event_at(organisation_id="org_gone", at=now - timedelta(days=366))
    recent = audit_event_at(organisation_id="org_gone", at=now - timedelta(days=100))

    assert audit_retention_purge(now=now) == 1

    assert set(AuditEvent.objects.filter(organisation_id="org_gone").values_list("id", flat=True)) == {recent.id}
    assert not AuditEvent.objects.filter(pk=old.pk).exists()


def test_every_beat_entry_names_a_registered_task():
    """The schedule in core_memory/beat.py runs tasks that exist (R-11.1's purge among them)."""
    app.loader.import_default_modules()

    missing = [entry["task"] for entry in BEAT_SCHEDULE.values() if entry["task"] not in app.tasks]

    assert missing == []
    assert "audit.tasks.audit_retention_purge_task" in {entry["task"] for entry in BEAT_SCHEDULE.values()}
