"""Finding personal data (core_memory.pii.detection, R-8.8): what is found in Dutch and
English chat, and what is left alone — dates, amounts, postcodes, order and version numbers."""
import pytest

from core_memory.pii.detection import findings_in
from tests.core_memory.pii.labelled import COMPATIBILITY, COMPATIBILITY_CLEAN, DEVELOPMENT, HOLD_OUT, WRITINGS, parsed

LABELLED = DEVELOPMENT + HOLD_OUT + WRITINGS + COMPATIBILITY + COMPATIBILITY_CLEAN

# The two labelled values the rules do not find, by design (README "Personal data").
KNOWN_MISSES = {
    "My number is (415) 555-2671 if you're in the States.": [("PHONE", "(415) 555-2671")],  # foreign, no country code
    "Mijn nummer bij de gemeente is 691682483.": [("BSN", "691682483")],  # no BSN word, not dotted
}


def found(text: str) -> list[tuple[str, str]]:
    return [(finding.kind, finding.value) for finding in findings_in(text)]


@pytest.mark.parametrize("raw", LABELLED)
def test_each_labelled_message_yields_exactly_its_personal_data(raw):
    """R-8.8: nothing more than the labels (precision), nothing less but the known misses."""
    text, labels = parsed(raw)

    expected = [label for label in labels if label not in KNOWN_MISSES.get(text, [])]
    assert found(text) == expected


def test_the_labelled_sets_cover_every_kind_and_many_messages_without_personal_data():
    labelled = [parsed(raw) for raw in LABELLED]

    assert len(labelled) == 199 + 63 + 11
    assert sum(len(labels) for _, labels in labelled) == 145 + 63
    assert sum(1 for _, labels in labelled if not labels) == 75 + 11
    assert {kind for _, labels in labelled for kind, _ in labels} == {
        "EMAIL", "PHONE", "IBAN", "CREDIT_CARD", "IP_ADDRESS", "URL", "BSN"
    }


@pytest.mark.parametrize(
    "phone",
    [
        "06-12345678", "06 1234 5678", "0612345678", "+31 6 12345678", "0031612345678", "+31 (0)6 12345678",
        "020-1234567", "010 123 45 67", "085 303 2000", "06.12.34.56.78",
        "+44 20 7946 0958", "+1 (415) 555-2671", "+49 30 12345678", "+32 470 12 34 56",
    ],
)
def test_dutch_phone_numbers_and_any_with_a_country_code_are_found(phone):
    assert found(f"Bel {phone} vandaag") == [("PHONE", phone)]


@pytest.mark.parametrize(
    "iban", ["NL91 ABNA 0417 1643 00", "NL91ABNA0417164300", "nl91abna0417164300", "DE89 3704 0044 0532 0130 00", "GB29NWBK60161331926819"]
)
def test_an_iban_is_found_in_any_case_with_or_without_spaces(iban):
    assert found(f"IBAN {iban}.") == [("IBAN", iban)]


@pytest.mark.parametrize("card", ["4111 1111 1111 1111", "5500-0000-0000-0004", "3782 822463 10005", "4012888888881881", "2223 0031 2200 3222"])
def test_a_credit_card_number_with_a_brand_and_a_valid_luhn_check_is_found(card):
    assert found(f"kaart {card} graag") == [("CREDIT_CARD", card)]


@pytest.mark.parametrize("address", ["192.168.1.10", "8.8.8.8", "2001:db8:85a3::8a2e:370:7334", "fe80::1", "::1", "10.0.0.0/8"])
def test_ipv4_and_ipv6_addresses_are_found(address):
    assert found(f"host {address} is down") == [("IP_ADDRESS", address)]


@pytest.mark.parametrize(
    "url", ["https://www.example.nl/contact?ref=mail", "www.example.nl/path", "example.com/pricing", "jansen-fotografie.nl", "http://localhost:8000/admin"]
)
def test_urls_with_a_scheme_www_or_a_known_domain_are_found(url):
    assert found(f"zie {url}.") == [("URL", url)]


def test_an_email_address_is_one_email_not_a_url_of_its_domain():
    assert found("mail Jan.deVries@Example.nl of info@bakkerij-jansen.nl") == [
        ("EMAIL", "Jan.deVries@Example.nl"), ("EMAIL", "info@bakkerij-jansen.nl")
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mijn BSN is 123456782", [("BSN", "123456782")]),
        ("burgerservicenummer: 1234.56.782", [("BSN", "1234.56.782")]),
        ("123456782 is mijn sofinummer", [("BSN", "123456782")]),
        ("Het getal 1234.56.782", [("BSN", "1234.56.782")]),  # the official dotted form needs no word
        ("Het getal 123456782", []),  # passes the 11-proef, but nothing says it is a BSN
        ("Mijn BSN is 123456789", []),  # fails the 11-proef
    ],
)
def test_a_bsn_needs_the_eleven_test_and_a_bsn_word_near_it_or_the_dotted_form(text, expected):
    """docs/decisions.md "PII": the 11-proef alone passes one in eleven nine-digit numbers."""
    assert found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "De afspraak is op 30-11-2026 om 14:30.",
        "09-06-2019",  # a valid number in the 0906 range, and a date
        "The meeting moved to 10:30 on 2026-11-30.",
        "Totaal € 1.234,56 incl. btw, of $1,234,567.89.",
        "Mijn postcode is 1234 AB en het huisnummer 56.",
        "Factuur 2026-004512 staat open.",
        "Ordernummer 864623112 is onderweg.",  # passes the 11-proef
        "Bestelnummer 0201234567 is geannuleerd.",  # a valid Dutch phone number
        "Python 3.11.7 en Django 5.2.19, firmware versie 1.2.3.4 en v1.2.3.4.",
        "Open settings.py, README.md en rapport.pdf.",
        "IBAN NL91 ABNA 0417 1643 01 klopt niet.",  # mistyped: fails mod-97
        "Kaart 4111 1111 1111 1112 werd geweigerd.",  # fails Luhn
        "Request id 123e4567-e89b-12d3-a456-426614174000 failed.",
    ],
)
def test_dates_amounts_postcodes_order_and_version_numbers_are_not_personal_data(text):
    assert found(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "Van: Anna de Vries",  # names
        "Ze woont op Kerkstraat 12, 3511 AB Utrecht.",  # street addresses, postcodes, cities
        "Mijn geboortedatum is 01-02-1985.",  # dates of birth
        "Het kenteken is AB-123-C, het btw-nummer NL123456789B01.",  # other identifiers
        "Mail jan at example dot nl",  # spelled out
    ],
)
def test_names_addresses_birth_dates_and_other_identifiers_are_not_found(text):
    """The limits README "Personal data" states: this is no named-entity recogniser."""
    assert found(text) == []


def test_overlapping_findings_keep_the_longest_so_a_url_keeps_its_ip_address():
    assert found("Een kopie staat op http://192.168.1.20:8080/share") == [("URL", "http://192.168.1.20:8080/share")]


def test_findings_give_their_place_in_the_text():
    text = "Bel 06-12345678 of mail jan@example.nl"

    assert [(finding.start, finding.end) for finding in findings_in(text)] == [(4, 15), (24, 38)]
