"""The console's audit log (core_memory.console.audit, R-11.1): read-only, for a superuser too."""
from __future__ import annotations

import pytest

from django.contrib.admin.utils import quote

from audit.models import AuditEvent
from audit.services import audit_event_record
from core_memory.base.callers import Caller
from tests.audit.builders import audit_event_of
from tests.factories import console_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


@pytest.mark.parametrize("who", ["administrator", "superuser"])
def test_the_audit_log_has_no_add_change_or_delete_even_for_a_superuser(request, tenant, who):
    """R-11.1: nothing in the application can change or remove an event."""
    client = console_client(request.getfixturevalue(who))
    event = audit_event_of(tenant, "key_x")
    events_before = AuditEvent.objects.count()

    assert client.get("/console/audit/auditevent/add/").status_code == 403
    assert client.post(f"/console/audit/auditevent/{event.id}/change/", {"target": "key_y"}).status_code == 403
    assert client.post(f"/console/audit/auditevent/{event.id}/delete/", {"post": "yes"}).status_code == 403
    changelist = client.post(
        "/console/audit/auditevent/", {"action": "delete_selected", "_selected_action": [event.id], "post": "yes"}
    )
    assert changelist.status_code == 200  # the list again: there is no delete action to run
    assert AuditEvent.objects.count() == events_before
    assert AuditEvent.objects.get(pk=event.pk).target == "key_x"
    page = client.get(f"/console/audit/auditevent/{event.id}/change/")
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()


def test_an_event_page_names_the_organisation_the_actor_and_links_the_records_a_read_showed(console, tenant, write):
    """Issue 13 item 8, R-10.2: "Organisation id: -" no more; a key by its name; records as links."""
    record = write("Anna drinkt koffie", subject="anna")
    console.get(f"/console/memory/memoryrecord/{record.id}/change/")
    read = AuditEvent.objects.get(action="memory.console_read")
    written = audit_event_record(caller=Caller(key=tenant.key), action="memory.updated", target=record.id)

    read_page = console.get(f"/console/audit/auditevent/{read.id}/change/").content.decode()
    written_page = console.get(f"/console/audit/auditevent/{written.id}/change/").content.decode()

    assert f"{tenant.organisation.name} ({tenant.organisation.id})" in read_page
    assert f'<a href="/console/memory/memoryrecord/{quote(record.id)}/change/">{record.id}</a>' in read_page
    assert f"sleutel “owner” ({tenant.key.id})" in written_page


def test_the_audit_log_filters_by_actor_and_target_typed_in(console, tenant):
    audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="key_a"), action="key.updated", target="key_x")
    wanted = audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="key_b"), action="key.updated", target="key_x")
    audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="key_b"), action="key.updated", target="key_y")

    response = console.get("/console/audit/auditevent/", {"actor": "key_b", "target": "key_x"})

    assert [event.id for event in response.context["cl"].result_list] == [wanted.id]
    page = response.content.decode()
    assert 'name="actor" value="key_b"' in page and 'name="target" value="key_x"' in page


def test_the_audit_log_counts_events(console, tenant):
    """Issue 13 item 8: "3 gebeurtenissen", not "3 auditlogboek"."""
    audit_event_of(tenant, "key_x")
    events = AuditEvent.objects.filter(organisation_id=tenant.organisation.id).count()  # the set-up's too

    page = console.get("/console/audit/auditevent/").content.decode()

    assert f"\n{events} gebeurtenissen\n" in page


def test_the_audit_list_names_each_actor_and_an_events_details_read_as_indented_json(console, tenant):
    """Issue 24: no raw key ids in the list; an event's page shows its details readably."""
    event = audit_event_record(caller=Caller(key=tenant.key), action="key.updated", target="key_x", details={"naam": "a"})
    audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="maintenance"), action="memory.contested", target="mem_x")

    page = console.get("/console/audit/auditevent/").content.decode()
    detail = console.get(f"/console/audit/auditevent/{event.id}/change/").content.decode()

    assert "sleutel “owner”" in page and "onderhoud (van Core zelf)" in page
    assert f'field-actor_shown">{tenant.key.id}' not in page
    assert '<pre class="audit-details">{\n  &quot;naam&quot;: &quot;a&quot;\n}</pre>' in detail
