"""Proposals in the console (maintenance.admin, R-9.5, R-9.7, R-10.2, R-10.3; issue 13 item 5): the
queue with the records each rests on, applied or rejected through the services; scoped and audited."""
from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote

from audit.models import AuditEvent
from maintenance.models import Proposal
from memory.models import MemoryRecord
from core_memory.console.services import console_administrator_create
from tests.factories import CONSOLE_PASSWORD, console_client, staff_without_organisation
from tests.maintenance.builders import promotion_on

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

EXPENSES = "Declaraties gaan voor de 25e naar financiën."
PROPOSALS = "/console/maintenance/proposal/"


def proposal_url(proposal: Proposal, page: str = "change") -> str:
    return f"{PROPOSALS}{quote(proposal.pk)}/{page}/"


@pytest.fixture
def proposal(tenant, write, fake_model, run_store):
    """A several-persons proposal resting on Anna's and Bram's records, as maintenance makes one."""
    promotion_on(tenant.index, doelgroep="iedereen")
    write(EXPENSES, subject="anna")
    write(EXPENSES, subject="bram")
    run_store()
    return Proposal.objects.get()


def test_the_queue_and_a_proposal_show_the_records_it_rests_on_and_are_audited(console, tenant, proposal):
    """R-9.5, R-10.2."""
    sources = sorted(MemoryRecord.objects.filter(text=EXPENSES).values_list("id", flat=True))

    listing = console.get(PROPOSALS)
    page = console.get(proposal_url(proposal))

    assert [shown.pk for shown in listing.context["cl"].result_list] == [proposal.pk]
    assert sorted(source["record"].pk for source in page.context["sources"]) == sources
    assert page.context["may_decide"] is True
    reads = AuditEvent.objects.filter(action="memory.console_read", details__page__in=["proposals", "proposal"]).order_by("id")
    assert [(event.details["page"], sorted(event.details["record_ids"])) for event in reads] == [("proposals", sources), ("proposal", sources)]
    assert console.get("/console/").context["dashboard"].pending_proposals == 1


def test_applying_in_the_console_writes_a_shared_record_and_is_audited(console, tenant, proposal):
    """R-9.5: a new shared record of nobody in particular, with the store's labels; hers stay hers."""
    response = console.post(proposal_url(proposal, "decide"), {"decision": "apply"})

    assert response.status_code == 302
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by) == ("applied", "console:anna")
    shared = MemoryRecord.objects.get(pk=proposal.applied_record_id)
    assert (shared.subject, shared.text, shared.metadata, shared.source) == (None, EXPENSES, {"doelgroep": "iedereen"}, "promotion")
    assert MemoryRecord.objects.filter(text=EXPENSES, subject__in=["anna", "bram"], status="active").count() == 2
    event = AuditEvent.objects.get(action="proposal.applied")
    assert (event.actor, event.target) == ("console:anna", proposal.pk)


def test_rejecting_in_the_console_writes_no_record_and_a_decided_proposal_stays_decided(console, tenant, proposal):
    """R-9.5, R-9.7."""
    records = MemoryRecord.objects.count()

    console.post(proposal_url(proposal, "decide"), {"decision": "reject"})
    again = console.post(proposal_url(proposal, "decide"), {"decision": "apply"}, follow=True)

    proposal.refresh_from_db()
    assert proposal.status == "rejected"
    assert MemoryRecord.objects.count() == records
    assert AuditEvent.objects.filter(action="proposal.rejected", actor="console:anna").count() == 1
    assert not AuditEvent.objects.filter(action="proposal.applied").exists()
    assert [str(message) for message in again.context["messages"]][-1] == "Dit voorstel is al afgewezen."


def test_another_organisations_proposal_is_a_404_and_nothing_is_written(tenant, other_tenant, proposal):
    """R-2.5, R-12.1: an administrator of the other organisation."""
    stranger = console_client(console_administrator_create(organisation=other_tenant.organisation, username="bert", password=CONSOLE_PASSWORD).user)
    events = AuditEvent.objects.count()

    assert stranger.get(proposal_url(proposal)).status_code == 404
    assert stranger.post(proposal_url(proposal, "decide"), {"decision": "apply"}).status_code == 404
    assert EXPENSES not in stranger.get(PROPOSALS).content.decode()
    proposal.refresh_from_db()
    assert proposal.status == "pending"
    assert AuditEvent.objects.exclude(action="memory.console_read").count() == events


def test_who_administers_nothing_sees_no_proposal(tenant, proposal):
    client = console_client(staff_without_organisation(with_permissions=True))

    assert client.get(PROPOSALS).status_code == 403
    assert client.post(proposal_url(proposal, "decide"), {"decision": "apply"}).status_code == 404
    proposal.refresh_from_db()
    assert proposal.status == "pending"


def test_the_store_page_shows_its_latest_maintenance_run(console, tenant, proposal):
    page = console.get(f"/console/stores/memorystore/{tenant.index.id}/change/").content.decode()

    assert "laatste run" in page and "1 voorstel gedaan" in page
