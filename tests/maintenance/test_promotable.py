"""What may be proposed at all (R-9.4, R-9.6): never a fact about a person, an address, a telephone
number, a link or other personal data, a lesson, or what is about her by its type."""
import pytest

from maintenance.promotable import about_a_person, promotable


@pytest.mark.parametrize(
    "text",
    [
        "Woont in Delft.",
        "Heeft twee kinderen.",
        "Is allergisch voor noten.",
        "Lives in Delft.",
        "Has two children.",
        "Prefers tea in the morning.",
        "Mijn manager is Piet.",
        "Haar manager is Piet.",
        "Hij werkt op dinsdag thuis.",
        "Her manager is Piet.",
        "I work from home on Fridays.",
        "His car is a red Volvo.",
    ],
)
def test_a_fact_about_a_person_reads_as_one(text):
    assert about_a_person(text) is True


def test_a_fact_that_names_a_person_who_holds_it_is_about_her():
    assert about_a_person("Het team van Anna vergadert op maandag.", subjects=["anna"]) is True
    assert about_a_person("Het team van Anna vergadert op maandag.", subjects=["bram"]) is False


@pytest.mark.parametrize(
    "text",
    [
        "Declaraties gaan voor de 25e naar financiën.",
        "Expense claims go to finance before the 25th.",
        "Het kantoor gaat om 9 uur open.",
        "Facturen zijn binnen 30 dagen betaald.",
        "You submit expenses through the portal.",
        "De kantine sluit om 14 uur.",
    ],
)
def test_a_general_fact_does_not(text):
    assert about_a_person(text) is False


@pytest.mark.parametrize(
    "type_name, text, contested, expected",
    [
        ("fact", "Declaraties gaan voor de 25e naar financiën.", False, True),
        ("klantfeit", "Acme betaalt binnen 30 dagen.", False, True),
        ("fact", "Declaraties gaan voor de 25e naar financiën.", True, False),
        ("lesson", "Vraag eerst naar het klantnummer.", False, False),
        ("episode", "Factuur verstuurd.", False, False),
        ("preference", "Facturen per mail.", False, False),
        ("behaviour", "Antwoord in het Nederlands.", False, False),
        ("commitment", "Factuur voor vrijdag sturen.", False, False),
        ("fact", "Het IBAN voor declaraties is NL91ABNA0417164300.", False, False),
        ("fact", "Het kantoor is op Keizersgracht 123.", False, False),
    ],
)
def test_only_general_facts_of_shareable_types_that_hold_no_personal_data_are_promotable(type_name, text, contested, expected):
    assert promotable(type_name=type_name, text=text, contested=contested, subjects=["anna"]) is expected
