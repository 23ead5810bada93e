"""What a store lesson's request shows (R-9.3): her name and the personal data Core finds replaced,
and the answer restored."""
import pytest

from core_memory.pii.placeholders import RedactionError
from maintenance.pseudonyms import texts_pseudonymise


def test_her_name_in_any_case_and_her_personal_data_become_placeholders():
    texts, placeholders = texts_pseudonymise(
        texts=["Anna vroeg de factuur voor anna@example.nl", "ANNA belde vanaf 06-12345678; Annabel niet"], subject="anna"
    )

    assert texts == ["<PERSON_1> vroeg de factuur voor <EMAIL_1>", "<PERSON_1> belde vanaf <PHONE_1>; Annabel niet"]
    assert placeholders.restore("Mail <EMAIL_1> voor <PERSON_1>") == "Mail anna@example.nl voor anna"


def test_a_subject_that_is_an_email_address_is_one_placeholder():
    texts, _ = texts_pseudonymise(texts=["Stuur het naar anna@example.nl"], subject="anna@example.nl")

    assert texts == ["Stuur het naar <EMAIL_1>"]


def test_a_failing_detector_sends_nothing(monkeypatch):
    def broken(text):
        raise ValueError("detector bug")

    monkeypatch.setattr("core_memory.pii.placeholders.findings_in", broken)

    with pytest.raises(RedactionError):
        texts_pseudonymise(texts=["Anna"], subject="anna")
