from datetime import datetime, timezone

import pytest

from audit.models import AuditEvent
from tests.audit.builders import audit_event_at

pytestmark = pytest.mark.django_db


def at(day: int) -> datetime:
    return datetime(2026, 11, day, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def events(tenant, other_tenant):
    """Three events of the tenant on 1, 2 and 3 November and one of another organisation."""
    own = [
        audit_event_at(organisation_id=tenant.organisation.id, at=at(1), action="key.updated"),
        audit_event_at(organisation_id=tenant.organisation.id, at=at(2), action="person.erased"),
        audit_event_at(organisation_id=tenant.organisation.id, at=at(3), action="key.updated"),
    ]
    audit_event_at(organisation_id=other_tenant.organisation.id, at=at(2), action="key.updated")
    return own


def listed(client, query: str = "") -> list[str]:
    response = client.get(f"/v1/audit{query}")
    assert response.status_code == 200
    return [row["id"] for row in response.json()["data"]]


def test_audit_lists_only_the_own_organisations_events_newest_first(tenant, events):
    """R-11.3, R-12.1: the fixture's own setup events (key.created, index.created) come too."""
    response = tenant.client().get("/v1/audit?limit=500")

    rows = response.json()["data"]
    setup = list(AuditEvent.objects.filter(organisation_id=tenant.organisation.id, actor="test").exclude(
        id__in=[event.id for event in events]
    ).order_by("-id").values_list("id", flat=True))
    assert [row["id"] for row in rows] == [events[2].id, events[1].id, events[0].id, *setup]
    assert [row["action"] for row in rows] == ["key.updated", "person.erased", "key.updated", "index.created", "key.created"]


def test_an_event_shows_when_who_what_and_which(tenant, events):
    """R-11.1: `at`, `actor`, `action`, `target`, `details`."""
    row = tenant.client().get("/v1/audit?action=person.erased").json()["data"][0]

    assert row == {
        "id": events[1].id,
        "at": "2026-11-02T12:00:00Z",
        "actor": "test",
        "action": "person.erased",
        "target": "",
        "details": {},
    }


def test_audit_filters_by_action(tenant, events):
    """R-11.3."""
    assert listed(tenant.client(), "?action=key.updated") == [events[2].id, events[0].id]


def test_audit_filters_by_after_and_before_exclusively(tenant, events):
    """R-11.3: `after`/`before` with an offset; 13:00+01:00 is 12:00 UTC."""
    query = "?after=2026-11-01T13:00:00%2B01:00&before=2026-11-03T12:00:00Z"

    assert listed(tenant.client(), query) == [events[1].id]


@pytest.mark.parametrize("field", ["after", "before"])
@pytest.mark.parametrize("value", ["2026-11-01T12:00:00", "yesterday"])
def test_a_time_without_offset_or_not_a_time_is_a_400_on_the_field(tenant, events, field, value):
    """R-2.4, R-2.3."""
    response = tenant.client().get(f"/v1/audit?{field}={value}")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == field


def test_audit_is_paginated_with_a_cursor(tenant, events):
    """R-2.4."""
    first = tenant.client().get("/v1/audit?action=key.updated&limit=1").json()
    second = tenant.client().get(f"/v1/audit?action=key.updated&limit=1&cursor={first['next_cursor']}").json()

    assert [row["id"] for row in first["data"] + second["data"]] == [events[2].id, events[0].id]
    assert second["next_cursor"] is None


def test_audit_needs_management_and_a_credential(tenant, anonymous, events):
    """R-2.7, R-2.1."""
    client, _ = tenant.key_client(capabilities=("knowledge", "memory", "threads", "trust_envelope"))

    assert client.get("/v1/audit").status_code == 403
    assert anonymous.get("/v1/audit").status_code == 401


# Valid ISO 8601 with an offset, but outside the years Python can read back in every zone.
UNREADABLE_TIMES = ["9999-12-31T23:00:00-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31T12:00:00Z"]


@pytest.mark.parametrize("after", UNREADABLE_TIMES)
def test_an_audit_bound_outside_the_readable_years_is_a_400(tenant, after):
    """R-12.3, R-11.3."""
    response = tenant.client().get("/v1/audit", {"after": after})

    assert (response.status_code, response.json()["error"]["param"]) == (400, "after")
