"""The console's home page (core_memory.console.site, issue 13 item 7): memory at a glance, audited."""
from __future__ import annotations

import pytest

from audit.models import AuditEvent
from core_memory.llm.metering import token_usage_record
from core_memory.llm.protocol import TokenCount
from tests.core_memory.console.world import contest
from core_memory.console.services import console_administrator_create
from tests.factories import CONSOLE_PASSWORD, console_client, make_index, staff_without_organisation

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]


def test_the_home_page_counts_records_per_index_and_type_contested_and_others_reads_today(console, tenant, other_tenant, write, other_write):
    """Issue 32: "reads today" counts the other administrators' console reads, not the viewer's own browsing."""
    second = make_index(tenant.organisation, name="archief")
    coffee = write("Anna drinkt koffie", subject="anna")
    tea = write("Anna drinkt thee", subject="anna", type="preference")
    write("Oud", subject="anna", index=second)
    contest(coffee, tea)
    old = write("Anna woont in Delft", subject="anna")
    write("Anna woont in Utrecht", subject="anna", replaces=old.id)  # the ended one is not counted
    other_write("Bert drinkt thee")  # another organisation's: never counted
    console.get("/console/memory/memoryrecord/")  # her own read: no news to her
    bert = console_administrator_create(organisation=tenant.organisation, username="bert", password=CONSOLE_PASSWORD).user
    console_client(bert).get("/console/memory/memoryrecord/")  # another administrator's read today

    response = console.get("/console/")

    figures = response.context["dashboard"]
    assert [(index.name, index.types, index.records, index.contested) for index in figures.indexes] == [
        ("archief", {"fact": 1}, 1, 0),
        ("memory", {"fact": 2, "preference": 1}, 3, 2),
    ]
    assert (figures.records, figures.contested, figures.reads_today) == (4, 2, 1)
    page = response.content.decode()
    assert "Geheugen in één oogopslag" in page and '<span class="chart-label">voorkeur</span>' in page
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


def test_the_home_page_charts_growth_per_week_and_tokens_against_the_monthly_limit(console, tenant, write):
    """Issue 24: records made per week in the organisation's zone, this month's tokens against its limit."""
    tenant.organisation.monthly_token_limit = 1000
    tenant.organisation.save(update_fields=["monthly_token_limit"])
    token_usage_record(organisation=tenant.organisation, usage=TokenCount(input_tokens=200, output_tokens=50, total_tokens=250))
    write("Anna drinkt koffie", subject="anna")
    write("Anna drinkt thee", subject="anna")

    figures = console.get("/console/").context["dashboard"]

    assert len(figures.weeks) == 8 and [count for _week, count in figures.weeks] == [0, 0, 0, 0, 0, 0, 0, 2]
    assert figures.weeks[-1][0].weekday() == 0  # weeks start on Monday
    assert (figures.tokens_used, figures.token_limit, figures.token_percent) == (250, 1000, 25)
