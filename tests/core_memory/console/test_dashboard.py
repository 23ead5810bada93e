"""The console's home page (core_memory.console.site, issue 13 item 7): memory at a glance, audited."""
from __future__ import annotations

import pytest

from audit.models import AuditEvent
from tests.core_memory.console.world import contest
from tests.factories import console_client, make_index, staff_without_organisation

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def test_the_home_page_counts_records_per_index_and_type_contested_and_reads_today(console, tenant, other_tenant, write, other_write):
    second = make_index(tenant.organisation, name="archief")
    coffee = write("Anna drinkt koffie", subject="anna")
    tea = write("Anna drinkt thee", subject="anna", type="preference")
    write("Oud", subject="anna", index=second)
    contest(coffee, tea)
    old = write("Anna woont in Delft", subject="anna")
    write("Anna woont in Utrecht", subject="anna", replaces=old.id)  # the ended one is not counted
    other_write("Bert drinkt thee")  # another organisation's: never counted
    console.get("/console/memory/memoryrecord/")  # one read today

    response = console.get("/console/")

    figures = response.context["dashboard"]
    assert [(index.name, index.types, index.records, index.contested) for index in figures.indexes] == [
        ("archief", {"fact": 1}, 1, 0),
        ("memory", {"fact": 2, "preference": 1}, 3, 2),
    ]
    assert (figures.records, figures.contested, figures.reads_today) == (4, 2, 1)
    page = response.content.decode()
    assert "Geheugen in één oogopslag" in page and "voorkeur: 1" in page
    assert other_tenant.index.id not in page
    event = AuditEvent.objects.filter(action="memory.console_read").latest("id")
    assert (event.actor, event.details["page"], event.details["shown"]["contested"]) == ("console:anna", "dashboard", 2)


def test_there_is_no_view_site_link(console):
    """Issue 13: "View site" led to a bare 404."""
    page = console.get("/console/").content.decode()

    assert "Site bekijken" not in page and "View site" not in page


def test_a_staff_user_of_no_organisation_gets_no_dashboard(tenant, write):
    write("Anna drinkt koffie", subject="anna")
    response = console_client(staff_without_organisation(with_permissions=True)).get("/console/")

    assert response.context["dashboard"] is None
    assert not AuditEvent.objects.filter(action="memory.console_read").exists()
