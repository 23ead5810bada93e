"""The console's audit log (audit.admin, R-11.1): read-only, for a superuser too."""
from __future__ import annotations

import pytest

from audit.models import AuditEvent
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
