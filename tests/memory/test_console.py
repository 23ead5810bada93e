"""Every read of records in the console is audited (audit.console, R-10.2): one event per page
and organisation shown, and no page without its event."""
from __future__ import annotations

import pytest
from django.db import DatabaseError

from tests.factories import console_client
from tests.memory.conftest import RECORDS, read_events, record_url

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def test_a_list_read_writes_one_event_with_the_ids_filters_and_search_shown(console, tenant, write):
    """R-10.2."""
    first = write("Anna drinkt koffie", subject="anna")
    second = write("Anna drinkt zwarte koffie", subject="anna")
    write("Bert drinkt koffie", subject="bert")

    console.get(RECORDS, {"q": "koffie", "person": "anna"})

    (event,) = read_events()
    assert (event.organisation_id, event.actor, event.target) == (tenant.organisation.id, "console:anna", "")
    assert event.details == {
        "page": "list",
        "record_ids": [second.id, first.id],
        "filters": {"person": ["anna"]},
        "search": "koffie",
        "page_number": 1,
    }


def test_an_empty_list_read_is_also_an_event(console, tenant):
    """R-10.2: she saw that there was nothing."""
    console.get(RECORDS)

    (event,) = read_events()
    assert (event.organisation_id, event.details["record_ids"]) == (tenant.organisation.id, [])


@pytest.mark.parametrize("page", ["change", "history", "delete"])
def test_a_record_read_writes_one_event_naming_the_record(console, tenant, write, page):
    """R-10.2: the record page, its history and its delete confirmation all show it."""
    record = write("Anna drinkt koffie")

    response = console.get(record_url(record, page))

    assert response.status_code == 200
    (event,) = read_events()
    assert (event.organisation_id, event.actor, event.target) == (tenant.organisation.id, "console:anna", record.id)
    assert event.details == {"page": {"change": "record"}.get(page, page), "record_ids": [record.id]}


def test_a_failed_audit_write_shows_no_data(console, write, monkeypatch):
    """R-10.2: no read without its event."""
    record = write("Geheim van Anna")

    def refuse(**kwargs):
        raise DatabaseError("audit unavailable")

    monkeypatch.setattr("audit.console.audit_event_record", refuse)

    for url in (RECORDS, record_url(record)):
        with pytest.raises(DatabaseError):
            console.get(url)


def test_a_superusers_list_read_is_logged_in_each_organisation_it_showed(tenant, other_tenant, write, other_write, superuser):
    """R-10.2, R-11.1: each organisation's log names only its own records."""
    own = write("Anna drinkt koffie")
    foreign = other_write("Bert drinkt thee")
    client = console_client(superuser)

    client.get(RECORDS)

    events = {event.organisation_id: event for event in read_events()}
    assert set(events) == {tenant.organisation.id, other_tenant.organisation.id}
    assert events[tenant.organisation.id].details["record_ids"] == [own.id]
    assert events[other_tenant.organisation.id].details["record_ids"] == [foreign.id]
    assert {event.actor for event in events.values()} == {"console:root"}
