"""Promotion analyses (R-9.4, R-9.6, R-13.4): proposals to share a person's fact, when several
persons hold it the same way or when the analysis model judges it general knowledge; never a fact
about a person, an address, a telephone number, a link or a lesson; never twice for a record."""
from __future__ import annotations

import pytest

from core_memory.base.callers import Caller
from core_memory.persons.services import person_update
from maintenance.models import PromotionReview, Proposal, ProposalSource
from memory.models import MemoryRecord
from tests.factories import make_record
from tests.fake_model import completion
from tests.maintenance.builders import PROMOTION, asked, general, improvements_on, promotion_on, sections, shown

pytestmark = pytest.mark.django_db

EXPENSES = "Declaraties gaan voor de 25e naar financiën."


@pytest.fixture
def promotion(tenant):
    promotion_on(tenant.index, doelgroep="iedereen")


def proposals() -> list[tuple[str, str, list[str]]]:
    return [
        (proposal.reason, proposal.text, sorted(proposal.sources.values_list("record__subject", flat=True)))
        for proposal in Proposal.objects.order_by("id")
    ]


def test_a_fact_several_persons_hold_the_same_way_is_proposed_without_a_model_call(tenant, write, promotion, fake_model, run_store):
    """R-9.4: the same type and normalised text (R-5.4) in two persons' memories."""
    write(EXPENSES, subject="anna")
    write("declaraties gaan voor de 25e naar financiën", subject="bram")

    summary = run_store()

    assert proposals() == [("several_persons", EXPENSES, ["anna", "bram"])]
    assert (summary["proposals"], asked(fake_model, PROMOTION)) == (1, [])


def test_one_persons_fact_the_model_judges_general_knowledge_is_proposed(tenant, write, promotion, fake_model, run_store):
    """R-9.4, R-13.4: one call per person shows her candidate facts; the ids it names are proposed."""
    expenses = write(EXPENSES, subject="anna")
    lunch = write("De kantine sluit om 14 uur.", subject="anna")
    write("Houdt van jazz.", type="preference", subject="anna")
    fake_model.answer(general(expenses.id), format_name=PROMOTION)

    summary = run_store()

    (request,) = asked(fake_model, PROMOTION)
    assert request.body["response_format"]["json_schema"]["strict"] is True
    assert shown(request) == {
        "records": [{"id": expenses.id, "type": "fact", "text": EXPENSES}, {"id": lunch.id, "type": "fact", "text": "De kantine sluit om 14 uur."}]
    }
    assert proposals() == [("general_knowledge", EXPENSES, ["anna"])]
    assert set(PromotionReview.objects.values_list("record_id", "general")) == {(expenses.id, True), (lunch.id, False)}
    assert summary["proposals"] == 1


@pytest.mark.parametrize(
    "text",
    [
        "Het kantoor is op Keizersgracht 123.",
        "Post gaat naar Postbus 1234, 2500 AB Den Haag.",
        "The office is at 221B Baker Street.",
        "De helpdesk is bereikbaar op 020-1234567.",
        "Support answers on (415) 555-2671.",
        "Het rooster staat op intranet.acme.nl/rooster.",
        "Expenses are explained at https://wiki.example.com/expenses.",
        "Vragen over declaraties naar finance@acme.nl.",
        "Woont in Delft.",
        "Has two children.",
        "Her manager is Piet.",
        "Mijn manager is Piet.",
        "Anna's team meets on Mondays.",
    ],
)
def test_a_fact_about_a_person_or_with_an_address_phone_number_or_link_is_never_proposed(tenant, write, promotion, fake_model, run_store, text):
    """R-9.4: neither by several persons holding it nor by the model's judgement; it is never even shown."""
    anna, bram = write(text, subject="anna"), write(text, subject="bram")
    fake_model.answer(general(anna.id, bram.id), format_name=PROMOTION, times=2)

    run_store()

    assert (proposals(), asked(fake_model, PROMOTION)) == ([], [])


def test_lessons_preferences_and_contested_records_are_never_proposed(tenant, write, promotion, fake_model, run_store):
    """R-9.6: lessons never; nor what is about her by its type, nor what contradicts another record."""
    for subject in ("anna", "bram"):
        make_record(tenant.index, "Eerst het klantnummer vragen.", type="lesson", subject=subject)
        write("Facturen per mail.", type="preference", subject=subject)
        write("De kantine sluit om 14 uur.", subject=subject)
    MemoryRecord.objects.filter(text="De kantine sluit om 14 uur.").update(contested=True)

    run_store()

    assert (proposals(), asked(fake_model, PROMOTION)) == ([], [])


def test_a_record_is_never_proposed_twice(tenant, write, promotion, fake_model, run_store):
    """Issue 9: a rejected proposal's record is not proposed again, whoever else comes to hold it."""
    write(EXPENSES, subject="anna")
    write(EXPENSES, subject="bram")
    run_store()
    tenant.client().post(f"/v1/memory/proposals/{Proposal.objects.get().id}/reject")
    write(EXPENSES, subject="carl")
    fake_model.answer(general(), format_name=PROMOTION, times=None)

    run_store()

    assert [proposal[0] for proposal in proposals()] == ["several_persons"]
    assert ProposalSource.objects.count() == 2
    assert asked(fake_model, PROMOTION) == []


def test_a_fact_the_store_already_shares_is_not_proposed(tenant, write, promotion, fake_model, run_store):
    write(EXPENSES)
    write(EXPENSES, subject="anna")
    write(EXPENSES, subject="bram")

    run_store()

    assert (proposals(), asked(fake_model, PROMOTION)) == ([], [])


def test_a_judged_record_is_not_asked_about_again_until_it_changes(tenant, write, promotion, fake_model, run_store):
    """Issue 9: the review is remembered while the record stands as it was."""
    lunch = write("De kantine sluit om 14 uur.", subject="anna")
    run_store()
    run_store()
    assert len(asked(fake_model, PROMOTION)) == 1

    tenant.client(subject="anna").patch(f"/v1/memory/{lunch.id}", {"text": "De kantine sluit om 15 uur."}, format="json")
    run_store()

    assert [shown(request)["records"][0]["text"] for request in asked(fake_model, PROMOTION)] == [
        "De kantine sluit om 14 uur.", "De kantine sluit om 15 uur."
    ]


def test_her_rules_keep_her_facts_from_the_model_but_not_from_the_several_persons_analysis(tenant, write, promotion, fake_model, run_store):
    """R-3.4: nothing of hers is sent to the helper model; counting who holds a fact sends nothing."""
    person_update(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), organisation=tenant.organisation, subject="anna", helper_model_may_read=False)
    write("De kantine sluit om 14 uur.", subject="anna")
    write(EXPENSES, subject="anna")
    write(EXPENSES, subject="bram")

    run_store()

    assert asked(fake_model, PROMOTION) == []
    assert proposals() == [("several_persons", EXPENSES, ["anna", "bram"])]


@pytest.mark.parametrize(
    "setup",
    [
        lambda index: sections(index, promotion={"enabled": False}),
        lambda index: (improvements_on(index.organisation), index.organisation.__setattr__("capabilities", []), index.organisation.save()),
        lambda index: (index.organisation.__setattr__("improvements", {"enabled": False}), index.organisation.save()),
    ],
    ids=["section-off", "no-improvements-capability", "improvements-off"],
)
def test_promotion_needs_the_section_the_capability_and_the_improvements_settings(tenant, write, promotion, fake_model, run_store, setup):
    """R-9.4: `promotion.enabled`, and an organisation with `improvements` and `improvements.enabled`."""
    tenant.index.organisation.refresh_from_db()
    setup(tenant.index)
    write(EXPENSES, subject="anna")
    write(EXPENSES, subject="bram")

    summary = run_store()

    assert (summary["analyses"]["promotion"], proposals(), asked(fake_model, PROMOTION)) == (False, [], [])


@pytest.mark.parametrize("content", ['{"general": "mem_x"}', '{"general": [3]}', "{"])
def test_an_answer_of_the_wrong_shape_proposes_nothing_and_reviews_nothing(tenant, write, promotion, fake_model, run_store, content):
    """R-13."""
    write("De kantine sluit om 14 uur.", subject="anna")
    fake_model.answer(completion(content), format_name=PROMOTION)

    summary = run_store()

    assert (summary["errors"], proposals(), PromotionReview.objects.count()) == ({"invalid_model_output": 1}, [], 0)


def test_an_id_it_was_not_shown_is_ignored(tenant, write, promotion, fake_model, run_store):
    """R-13: another person's record named in her call is not proposed."""
    write("De kantine sluit om 14 uur.", subject="anna")
    brams = write("Het parkeerterrein sluit om 20 uur.", subject="bram")
    fake_model.answer(general(brams.id), format_name=PROMOTION)
    fake_model.answer(general(), format_name=PROMOTION)

    run_store()

    assert proposals() == []
