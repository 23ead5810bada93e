"""Placeholders and restoring them (core_memory.pii.placeholders, R-8.8), without a database."""
import phonenumbers
import pytest

from core_memory.pii.placeholders import PlaceholderAssignment, Placeholders, RedactionError, findings_of


def redacted(texts: list[str], placeholders: Placeholders | None = None) -> tuple[list[str], PlaceholderAssignment]:
    assignment = PlaceholderAssignment(placeholders or Placeholders())
    return [assignment.redact(text, found) for text, found in zip(texts, findings_of(texts))], assignment


def test_each_kind_gets_its_placeholder():
    texts, assignment = redacted(
        ["mail a@example.nl, bel 020-1234567, IBAN NL20INGB0001234567, kaart 4111 1111 1111 1111, "
         "ip 10.0.0.5, zie www.example.nl/x, BSN 123456782."]
    )

    assert texts == [
        "mail <EMAIL_1>, bel <PHONE_1>, IBAN <IBAN_1>, kaart <CREDIT_CARD_1>, ip <IP_ADDRESS_1>, zie <URL_1>, BSN <BSN_1>."
    ]
    assert dict(assignment.placeholders.counters) == {
        "EMAIL": 1, "PHONE": 1, "IBAN": 1, "CREDIT_CARD": 1, "IP_ADDRESS": 1, "URL": 1, "BSN": 1
    }


def test_numbers_count_per_kind_and_a_value_keeps_its_number_across_texts():
    texts, assignment = redacted(
        ["Mail jan@example.nl of bel 06-12345678", "Of toch piet@example.nl? Jan is jan@example.nl", "Nieuw 06-87654321, oud 06-12345678"]
    )

    assert texts == ["Mail <EMAIL_1> of bel <PHONE_1>", "Of toch <EMAIL_2>? Jan is <EMAIL_1>", "Nieuw <PHONE_2>, oud <PHONE_1>"]
    assert dict(assignment.placeholders.values) == {
        "<EMAIL_1>": "jan@example.nl", "<PHONE_1>": "06-12345678", "<EMAIL_2>": "piet@example.nl", "<PHONE_2>": "06-87654321"
    }


def test_one_value_written_differently_shares_its_placeholder_and_restores_as_first_written():
    texts, assignment = redacted(
        ["Bel 06-12345678 of +31 6 12345678 of 0031612345678; IBAN nl91abna0417164300 = NL91 ABNA 0417 1643 00; "
         "JAN@example.NL is jan@example.nl; https://Example.nl/a/ is https://example.nl/a"]
    )

    assert texts == ["Bel <PHONE_1> of <PHONE_1> of <PHONE_1>; IBAN <IBAN_1> = <IBAN_1>; <EMAIL_1> is <EMAIL_1>; <URL_1> is <URL_1>"]
    assert assignment.placeholders.restore("<PHONE_1>, <IBAN_1>") == "06-12345678, nl91abna0417164300"


def test_a_known_value_adds_nothing_to_store():
    _, first = redacted(["mail a@example.nl"])

    texts, again = redacted(["nog eens a@example.nl, zonder meer"], first.placeholders)

    assert texts == ["nog eens <EMAIL_1>, zonder meer"]
    assert again.changed is False
    assert first.changed is True


def test_a_typed_look_alike_stays_and_is_never_restored_into_a_value():
    texts, assignment = redacted(["Het sjabloon gebruikt <EMAIL_1>; mijn adres is jan@example.nl"])

    assert texts == ["Het sjabloon gebruikt <EMAIL_1>; mijn adres is <EMAIL_2>"]
    assert assignment.placeholders.restore("<EMAIL_1> / <EMAIL_2>") == "<EMAIL_1> / jan@example.nl"
    assert dict(assignment.placeholders.counters) == {"EMAIL": 2}


def test_a_look_alike_alone_is_remembered_so_a_later_value_skips_its_number():
    _, first = redacted(["Vul <PHONE_3> in op het formulier"])

    texts, _ = redacted(["Bel 06-12345678"], first.placeholders)

    assert first.changed is True
    assert texts == ["Bel <PHONE_4>"]


def test_look_alikes_of_kinds_core_does_not_give_are_not_remembered():
    texts, assignment = redacted(["Beste <NAME_1>, zie <TICKET_40>."])

    assert texts == ["Beste <NAME_1>, zie <TICKET_40>."]
    assert assignment.changed is False


def test_text_without_personal_data_is_unchanged():
    text = "De afspraak is op 30-11-2026 om 14:30, bedrag € 1.234,56, postcode 1234 AB."

    texts, assignment = redacted([text])

    assert texts == [text]
    assert assignment.changed is False


@pytest.mark.parametrize(
    "answer",
    ["Ik mail <EMAIL_1>.", "Ik mail <email_1>.", "Ik mail < EMAIL_1 >.", "Ik mail &lt;EMAIL_1&gt;.", "Ik mail \\<EMAIL_1\\>."],
)
def test_restore_finds_a_placeholder_as_models_rewrite_it(answer):
    placeholders = Placeholders(values={"<EMAIL_1>": "jan@example.nl"}, counters={"EMAIL": 1})

    assert placeholders.restore(answer) == "Ik mail jan@example.nl."


def test_restore_leaves_unknown_placeholders_and_tags_alone():
    placeholders = Placeholders(values={"<EMAIL_1>": "jan@example.nl"}, counters={"EMAIL": 1})

    assert placeholders.restore("<EMAIL_7>, <NAME_1>, <b>EMAIL_1</b> en <EMAIL_1>") == "<EMAIL_7>, <NAME_1>, <b>EMAIL_1</b> en jan@example.nl"


def test_restore_walks_parsed_json_keys_and_values_and_leaves_other_types():
    placeholders = Placeholders(values={"<EMAIL_1>": 'jan"quote@example.nl', "<PHONE_1>": "06-12345678"})

    restored = placeholders.restore({"text": "Mail <EMAIL_1>", "<PHONE_1>": ["bel <PHONE_1>", 3, None, True], "n": 1.5})

    assert restored == {"text": 'Mail jan"quote@example.nl', "06-12345678": ["bel 06-12345678", 3, None, True], "n": 1.5}
    assert placeholders.restore(None) is None


def test_placeholders_cannot_be_changed_by_their_reader():
    placeholders = Placeholders(values={"<EMAIL_1>": "jan@example.nl"})

    with pytest.raises(TypeError):
        placeholders.values["<EMAIL_2>"] = "x"


def test_a_failing_detection_is_a_redaction_error_that_names_no_value(monkeypatch):
    """R-8.8: `pii_redaction_failed` — and the value that could not be checked is not in the error."""

    def broken(*args, **kwargs):
        raise ValueError("cannot read 06-12345678")

    monkeypatch.setattr(phonenumbers, "PhoneNumberMatcher", broken)

    with pytest.raises(RedactionError) as raised:
        findings_of(["Bel 06-12345678"])

    assert raised.value.code == "pii_redaction_failed"
    assert str(raised.value) == "ValueError"
    assert raised.value.as_dict() == {
        "code": "pii_redaction_failed", "message": "Personal data could not be redacted; nothing was sent to the model."
    }
