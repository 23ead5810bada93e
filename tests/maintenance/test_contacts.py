"""The contact-detail detector (R-9.4): addresses, telephone numbers and links in Dutch and English
text, so that none of them is ever proposed as a shared record; general facts pass."""
import pytest

from maintenance.contacts import ADDRESS, LINK, PHONE, contact_details_in


def kinds(text: str) -> set[str]:
    return {found.kind for found in contact_details_in(text)}


@pytest.mark.parametrize(
    "text, kind",
    [
        # Dutch addresses
        ("Het kantoor is op Keizersgracht 123 in Amsterdam.", ADDRESS),
        ("Stuur post naar Stationsstraat 12a.", ADDRESS),
        ("Bezoekadres: Laan van Meerdervoort 5, Den Haag", ADDRESS),
        ("Burgemeester de Monchyplein 2", ADDRESS),
        ("Korte Houtstraat 10-12", ADDRESS),
        ("Het magazijn zit aan de Industrieweg 4 bis.", ADDRESS),
        ("Antwoorden naar Postbus 1234.", ADDRESS),
        ("Ons adres is 2511 CV Den Haag", ADDRESS),
        # English addresses
        ("The office is at 221B Baker Street.", ADDRESS),
        ("Send it to 10 Downing St, London.", ADDRESS),
        ("1600 Pennsylvania Avenue NW, Washington", ADDRESS),
        ("Our mailbox is P.O. Box 42.", ADDRESS),
        ("The London office: SW1A 2AA.", ADDRESS),
        ("HQ is in Cupertino, CA 95014.", ADDRESS),
        # telephone numbers
        ("Bel de helpdesk op 020-1234567.", PHONE),
        ("Bel 06 12345678 bij storing.", PHONE),
        ("De receptie: +31 (0)70 123 4567.", PHONE),
        ("Call (415) 555-2671 for support.", PHONE),
        ("Ring 020 7946 0958 in London.", PHONE),
        ("The Brussels desk is +32 2 123 45 67.", PHONE),
        # links
        ("Het rooster staat op intranet.acme.nl/rooster", LINK),
        ("See https://wiki.example.com/page for the policy.", LINK),
        ("Docs live at acme.me.", LINK),
        ("Meld je aan via www.acme.nl.", LINK),
        ("Vragen naar facturen@acme.nl.", LINK),
        ("The tracker is intranet.corp/tickets.", LINK),
    ],
)
def test_finds_addresses_phone_numbers_and_links_in_dutch_and_english(text, kind):
    assert kind in kinds(text)


@pytest.mark.parametrize(
    "text",
    [
        "Declaraties gaan voor de 25e naar financiën.",
        "Expense claims go to finance before the 25th.",
        "Het kantoor gaat om 9 uur open.",
        "Het kantoor in Delft sluit om 18:00.",
        "The Utrecht office closes on Fridays at 5 pm.",
        "Vergaderingen zijn in kamer 4.12 op de derde verdieping.",
        "Version 2.5 is live since 2024.",
        "We use Python 3.12, e.g. for scripts.",
        "Facturen worden binnen 30 dagen betaald.",
        "In 2024 en 2025 groeit het team.",
        "Onderweg naar de klant duurt 3 uur.",
        "Orders above 1000 EUR need approval.",
        "Budget for Q3 is 50000 euro.",
        "Lunch is at 12:30 in the canteen.",
        "Teams meet on Monday at 10.",
        "De wifi heet AcmeGuest.",
        "Bestellingen boven de 500 euro vragen een tweede handtekening.",
        "Het Rijksmuseum is op maandag gesloten.",
    ],
)
def test_general_facts_hold_none(text):
    assert contact_details_in(text) == []
