"""Issue 32: a proposal changed before it is applied, and several decided at once — the services
(maintenance.services.proposals) and the console's pages over them (maintenance.admin): checked as
a record's write is, audited as a single decision is, all or nothing, another organisation's a 404."""
from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.utils import translation

from audit.models import AuditEvent
from core_memory.base.callers import Caller
from core_memory.base.errors import ApplicationError, Conflict
from maintenance.models import Proposal
from maintenance.services.proposals import (
    proposal_apply_by_administrator,
    proposal_changes,
    proposal_reject_by_administrator,
    proposals_decide_by_administrator,
)
from memory.models import MemoryRecord
from tests.core_memory.console.world import propose

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

PROPOSALS = "/console/maintenance/proposal/"


@pytest.fixture
def anna(tenant):
    return Caller.console(organisation_id=tenant.organisation.id, actor="console:anna")


@pytest.fixture
def proposed(tenant, write):
    """proposed(text) -> a pending proposal resting on Bram's and Carla's records of `text`."""

    def _proposed(text: str) -> Proposal:
        return propose(tenant.index, [write(text, subject="bram"), write(text, subject="carla")])

    return _proposed


def test_applying_with_changes_writes_the_changed_record_and_audits_what_it_said_before(anna, proposed):
    proposal = proposed("Declaraties gaan voor de 25e naar financien.")

    proposal_apply_by_administrator(
        caller=anna, proposal_id=proposal.pk, changes={"text": "Declaraties gaan vóór de 25e naar Financiën.", "type": "behaviour", "confidence": 0.8}
    )

    proposal.refresh_from_db()
    shared = MemoryRecord.objects.get(pk=proposal.applied_record_id)
    assert (shared.subject, shared.text, shared.type, shared.confidence) == (None, "Declaraties gaan vóór de 25e naar Financiën.", "behaviour", 0.8)
    assert (proposal.status, proposal.text, proposal.type) == ("applied", shared.text, "behaviour")
    edited = AuditEvent.objects.get(action="proposal.edited")
    assert (edited.actor, edited.target, sorted(edited.details["fields"])) == ("console:anna", proposal.pk, ["confidence", "text", "type"])
    assert edited.details["before"] == {"text": "Declaraties gaan voor de 25e naar financien.", "type": "fact", "confidence": 1.0}
    assert AuditEvent.objects.filter(action="proposal.applied", target=proposal.pk).exists()


@pytest.mark.parametrize(
    ("changes", "param"),
    [({"type": "recipe"}, "type"), ({"confidence": 1.5}, "confidence"), ({"text": "   "}, "text"), ({"subject": "anna"}, "subject")],
)
def test_a_change_a_write_would_refuse_names_its_field_and_nothing_is_applied(anna, proposed, changes, param):
    proposal = proposed("Het kantoor is dicht op zondag.")
    records = MemoryRecord.objects.count()

    with pytest.raises(ApplicationError) as refused:
        proposal_apply_by_administrator(caller=anna, proposal_id=proposal.pk, changes=changes)

    assert refused.value.param == param
    proposal.refresh_from_db()
    assert (proposal.status, proposal.text) == ("pending", "Het kantoor is dicht op zondag.")
    assert MemoryRecord.objects.count() == records
    assert not AuditEvent.objects.filter(action__startswith="proposal.").exists()


def test_the_check_of_changes_speaks_the_readers_language(anna, proposed):
    proposal = proposed("Het kantoor is dicht op zondag.")

    with translation.override("nl"), pytest.raises(ApplicationError) as refused:
        proposal_changes(caller=anna, proposal_id=proposal.pk, changes={"confidence": 2.0})

    assert refused.value.message == "Zorg ervoor dat deze waarde kleiner is dan of gelijk is aan 1.0."


def test_several_proposals_decided_at_once_are_each_audited_as_on_their_own(anna, proposed):
    first, second = proposed("De lunch is om twaalf uur."), proposed("Parkeren kan in de garage.")

    decided = proposals_decide_by_administrator(caller=anna, proposal_ids=[first.pk, second.pk], apply=True)

    assert sorted(proposal.pk for proposal in decided) == sorted([first.pk, second.pk])
    for proposal in (first, second):
        proposal.refresh_from_db()
        assert proposal.status == "applied" and MemoryRecord.objects.get(pk=proposal.applied_record_id).subject is None
    events = AuditEvent.objects.filter(action="proposal.applied").order_by("target")
    assert [(event.target, event.actor) for event in events] == sorted([(first.pk, "console:anna"), (second.pk, "console:anna")])


def test_one_already_decided_among_several_decides_none(anna, proposed):
    first, second = proposed("De lunch is om twaalf uur."), proposed("Parkeren kan in de garage.")
    proposal_reject_by_administrator(caller=anna, proposal_id=second.pk)

    with pytest.raises(Conflict):
        proposals_decide_by_administrator(caller=anna, proposal_ids=[first.pk, second.pk], apply=True)

    first.refresh_from_db()
    assert first.status == "pending"
    assert not AuditEvent.objects.filter(action="proposal.applied").exists()


def test_in_the_console_a_changed_proposal_is_applied_after_a_page_that_shows_the_change(console, proposed):
    proposal = proposed("Declaraties gaan voor de 25e naar financien.")
    url = f"{PROPOSALS}{quote(proposal.pk)}/apply-changed/"
    data = {"text": "Declaraties gaan voor de 25e naar Financiën.", "type": "fact", "confidence": "1"}

    confirm = console.post(url, data)

    assert confirm.status_code == 200
    assert [(str(label), before, after) for label, before, after in confirm.context["changes"]] == [
        ("tekst", "Declaraties gaan voor de 25e naar financien.", "Declaraties gaan voor de 25e naar Financiën.")
    ]
    proposal.refresh_from_db()
    assert proposal.status == "pending"

    console.post(url, {**data, "confirmed": "1"})

    proposal.refresh_from_db()
    assert (proposal.status, MemoryRecord.objects.get(pk=proposal.applied_record_id).text) == ("applied", "Declaraties gaan voor de 25e naar Financiën.")


def test_in_the_console_a_refused_change_shows_on_the_form_in_dutch(console, proposed):
    proposal = proposed("Het kantoor is dicht op zondag.")

    page = console.post(f"{PROPOSALS}{quote(proposal.pk)}/apply-changed/", {"text": "Dicht op zondag.", "type": "fact", "confidence": "3"})

    assert page.status_code == 200
    assert page.context["changes_form"].errors == {"confidence": ["Zorg ervoor dat deze waarde kleiner is dan of gelijk is aan 1.0."]}
    proposal.refresh_from_db()
    assert proposal.status == "pending"


def test_in_the_console_selected_proposals_are_rejected_after_a_page_that_lists_them(console, proposed):
    first, second = proposed("De lunch is om twaalf uur."), proposed("Parkeren kan in de garage.")
    chosen = {"action": "reject_proposals", "_selected_action": [first.pk, second.pk]}

    confirm = console.post(PROPOSALS, chosen)

    assert [proposal.pk for proposal, _type in confirm.context["proposals"]] == [second.pk, first.pk]
    assert Proposal.objects.filter(status="pending").count() == 2

    console.post(PROPOSALS, {**chosen, "post": "yes"})

    assert sorted(Proposal.objects.values_list("status", flat=True)) == ["rejected", "rejected"]
    assert AuditEvent.objects.filter(action="proposal.rejected", actor="console:anna").count() == 2


def test_an_unknown_or_another_organisations_proposal_is_the_consoles_404(console, other_tenant, other_write):
    theirs = propose(other_tenant.index, [other_write("Bert drinkt thee", subject="bert"), other_write("Bert drinkt thee", subject="bob")])

    for proposal_id in ("prop_00000000000000000000000000", theirs.pk):
        response = console.post(f"{PROPOSALS}{quote(proposal_id)}/apply-changed/", {"text": "x", "type": "fact", "confidence": "1", "confirmed": "1"})
        assert response.status_code == 404 and "admin/console_404.html" in [template.name for template in response.templates]
    theirs.refresh_from_db()
    assert theirs.status == "pending"
