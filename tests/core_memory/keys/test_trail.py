from datetime import timedelta

import pytest
from django.utils import timezone

from core_memory.base.callers import Caller
from core_memory.keys.models import KeyTrailEntry
from core_memory.keys.selectors import key_was_issued
from core_memory.keys.services import key_delete, key_trail_purge, keys_expiry_record
from core_memory.keys.tasks import keys_expiry_record_task
from tests.factories import make_key

pytestmark = pytest.mark.django_db


def trail(key_id: str) -> set[str]:
    return set(KeyTrailEntry.objects.filter(key_id=key_id).values_list("event", flat=True))


def test_expiry_is_written_to_the_trail_once_at_the_keys_expiry(tenant):
    """R-3.5: expiries are kept in the key trail."""
    now = timezone.now()
    expired, _ = make_key(tenant.organisation, expires_at=now - timedelta(hours=1))
    later, _ = make_key(tenant.organisation, expires_at=now + timedelta(hours=1))

    assert keys_expiry_record(now=now) == 1
    assert keys_expiry_record(now=now) == 0

    entry = KeyTrailEntry.objects.get(key_id=expired.id, event="expired")
    assert entry.at == expired.expires_at
    assert trail(later.id) == {"created"}


def test_a_deleted_key_counts_as_issued_within_the_retention_period(tenant):
    """R-3.5."""
    key, _ = make_key(tenant.organisation)
    key_id = key.id
    key_delete(caller=Caller.system(organisation_id=key.organisation_id, actor="test"), key_id=key.id)

    assert key_was_issued(organisation=tenant.organisation, key_id=key_id) is True
    assert trail(key_id) == {"created", "deleted"}


def test_a_key_deleted_longer_ago_than_the_retention_counts_as_never_issued(tenant, other_tenant):
    """R-3.5: the purge reads each organisation's own `audit_retention_days` on PostgreSQL."""
    tenant.organisation.audit_retention_days = 10
    tenant.organisation.save()
    keys = {}
    for name, owner in (("short", tenant), ("long", other_tenant)):
        key, _ = make_key(owner.organisation)
        keys[name] = key.id
        key_delete(caller=Caller.system(organisation_id=key.organisation_id, actor="test"), key_id=key.id)
    KeyTrailEntry.objects.filter(key_id__in=keys.values()).update(at=timezone.now() - timedelta(days=11))
    live, _ = make_key(tenant.organisation)
    KeyTrailEntry.objects.filter(key_id=live.id).update(at=timezone.now() - timedelta(days=11))

    purged = key_trail_purge()

    assert purged == 2  # the short-retention key's "created" and "deleted"
    assert key_was_issued(organisation=tenant.organisation, key_id=keys["short"]) is False
    assert key_was_issued(organisation=other_tenant.organisation, key_id=keys["long"]) is True
    assert trail(live.id) == {"created"}
    assert key_was_issued(organisation=tenant.organisation, key_id=live.id) is True


def test_another_organisations_key_was_never_issued_to_this_one(tenant, other_tenant):
    """R-2.5."""
    assert key_was_issued(organisation=tenant.organisation, key_id=other_tenant.key.id) is False


def test_the_hourly_task_records_expiries_and_forgets_old_deletions(tenant):
    """R-3.5: the beat task runs both halves of the trail's upkeep."""
    expired, _ = make_key(tenant.organisation, expires_at=timezone.now() - timedelta(minutes=1))
    gone, _ = make_key(tenant.organisation)
    gone_id = gone.id
    key_delete(caller=Caller.system(organisation_id=gone.organisation_id, actor="test"), key_id=gone.id)
    KeyTrailEntry.objects.filter(key_id=gone_id).update(at=timezone.now() - timedelta(days=366))

    assert keys_expiry_record_task.apply().get() == {"expired": 1, "forgotten": 2}
    assert trail(expired.id) == {"created", "expired"}
    assert trail(gone_id) == set()
