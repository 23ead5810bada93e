"""Contact details in Dutch and English text: addresses, telephone numbers and links.

A text holding any of them is never proposed as a shared record, so this errs on the side of
finding: a false find costs one proposal that is not made, a miss would publish a person's
address to every colleague. `contact_details_in(text)` answers the kinds found, each with the
matched text (tests: tests/maintenance/test_contacts.py).

- `LINK`: everything `core_memory.pii` finds as a URL or an e-mail address (with a scheme,
  `www.`, or a bare domain on its list of top-level domains), and any other `name.tld` with a
  top-level domain of two or more letters (`acme.me`, `intranet.corp`; a file name such as
  `settings.py` too, which is no loss here).
- `PHONE`: `core_memory.pii`'s numbers (Dutch in any notation, any number with a country
  code), British and American numbers in their national notation (`020 7946 0958`,
  `(415) 555-2671`), read by libphonenumber for regions GB and US, and any number written with
  a country code (`+32 2 123 45 67`), whether or not libphonenumber knows it as allocated.
- `ADDRESS`: a street and house number, Dutch (`Keizersgracht 123`, `Stationsstraat 12a`,
  `Laan van Meerdervoort 5`, `Postbus 1234`) or English (`221B Baker Street`,
  `10 Downing St`, `P.O. Box 42`); a Dutch postcode (`2511 CV`), a British postcode
  (`SW1A 2AA`) or an American state and ZIP code (`CA 94105`).

Not found: a place name alone (`in Delft`, `the Utrecht office`), a room or floor (`kamer
4.12`), a building's name. Those say where the organisation is, which colleagues may share.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import phonenumbers

from core_memory.pii.detection import EMAIL, PHONE, URL, findings_in

ADDRESS = "ADDRESS"
LINK = "LINK"

# Regions read besides pii's NL (which also takes every number with a country code).
_PHONE_REGIONS = ("GB", "US")

_DUTCH_STREET_SUFFIXES = (
    "straat|straatje|laan|weg|plein|pleintje|gracht|kade|singel|dijk|dreef|hof|park|pad|steeg|"
    "markt|boulevard|plantsoen|baan|dam|wal|burgwal|haven|kanaal|veld|erf|hoek|ring|allee|"
    "steiger|poort|wijk|berg|zijde|vaart|lei|dwarsstraat|promenade|kering"
)
_HOUSE_NUMBER = r"\d{1,5}(?:\s?[a-zA-Z](?![a-zA-Z]))?(?:\s?[-/]\s?\d{1,4}(?:[a-zA-Z](?![a-zA-Z]))?)?(?:\s?(?:hs|bis|huis|boven|bg|I{1,3}))?"
_NAME_WORD = r"(?:[A-Z][a-zà-ÿ'’.]*|van|de|der|den|het|'t|op|aan|ter|ten|la|le)"
_DUTCH_STREET = re.compile(
    r"\b(?:" + _NAME_WORD + r"[-\s]){0,4}"
    r"[A-Z][a-zà-ÿ'’]*(?:" + _DUTCH_STREET_SUFFIXES + r")"
    r"\s+(?:nr\.?\s*|nummer\s+)?" + _HOUSE_NUMBER + r"\b"
)
# "Laan van Meerdervoort 5", "Plein 1944 12", "Burgemeester de Monchyplein 2" (the last by the suffix).
_DUTCH_STREET_WORD_FIRST = re.compile(
    r"\b(?:Laan|Weg|Plein|Kade|Dijk|Singel|Straat|Gracht|Dreef|Hof|Markt|Pad|Steeg)\s+"
    r"(?:(?:van|der|de|den|het|op|aan|in|te|ter|ten|bij|'t|[A-Z][a-zà-ÿ'’]+|\d{4})\s+){1,4}"
    + _HOUSE_NUMBER + r"\b"
)
_PO_BOX = re.compile(r"(?i)\b(?:postbus|antwoordnummer|p\.?\s?o\.?\s?box|post\s+office\s+box)\s*\d{1,6}\b")
_DUTCH_POSTCODE = re.compile(r"\b[1-9]\d{3}\s?(?!SA\b|SD\b|SS\b)[A-Z]{2}\b")

_ENGLISH_STREET_TYPES = (
    "Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Place|Pl|Square|Sq|Way|"
    "Terrace|Close|Crescent|Parkway|Pkwy|Highway|Hwy|Row|Mews|Gardens|Grove|Hill|Walk|Wharf|Quay|Loop|Circle|Cir|Plaza"
)
_ENGLISH_STREET = re.compile(
    r"\b\d{1,5}[A-Za-z]?(?:[-/]\d{1,4})?,?\s+(?:[A-Z][A-Za-z'’\-]*\.?\s+){1,4}(?:" + _ENGLISH_STREET_TYPES + r")\b\.?"
)
_BRITISH_POSTCODE = re.compile(r"\b(?:GIR\s?0AA|[A-PR-UWYZ][A-HK-Y]?\d[A-Z\d]?\s?\d[ABD-HJLNP-UW-Z]{2})\b")
_AMERICAN_STATES = (
    "AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM "
    "NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC"
).split()
_AMERICAN_ZIP = re.compile(r"\b(?:" + "|".join(_AMERICAN_STATES) + r")\s+\d{5}(?:-\d{4})?\b")

# Any `name.tld`: pii's list of bare top-level domains leaves out those that look like words
# or file names, which is right for redaction and wrong here.
_ANY_DOMAIN = re.compile(
    r"(?<![\w@.\-/])(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w\-@])(?:/\S*)?"
)
# An abbreviation is no domain: "e.g.", "i.e.", "a.s.", "t.a.v.", "o.a.".
_ABBREVIATION = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]$")


@dataclass(frozen=True)
class ContactDetail:
    kind: str  # ADDRESS, PHONE or LINK
    value: str


def _addresses(text: str) -> list[ContactDetail]:
    found = []
    for pattern in (_DUTCH_STREET, _DUTCH_STREET_WORD_FIRST, _PO_BOX, _DUTCH_POSTCODE, _ENGLISH_STREET, _BRITISH_POSTCODE, _AMERICAN_ZIP):
        found.extend(ContactDetail(ADDRESS, match.group().strip()) for match in pattern.finditer(text))
    return found


# Any number written with a country code (`+32 2 123 45 67`, `0044 20 …`), valid or not: a number
# libphonenumber does not know as allocated is still one somebody can call.
_INTERNATIONAL = re.compile(r"(?<![\w+])(?:\+|00)[1-9]\d{0,2}(?:[\s.\-]?\(?\d+\)?){2,6}(?!\w)")


def _phones(text: str) -> list[ContactDetail]:
    found = [
        ContactDetail(PHONE, match.group())
        for match in _INTERNATIONAL.finditer(text)
        if 8 <= sum(character.isdigit() for character in match.group()) <= 15
    ]
    for region in _PHONE_REGIONS:
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            found.append(ContactDetail(PHONE, match.raw_string))
    return found


def _domains(text: str) -> list[ContactDetail]:
    found = []
    for match in _ANY_DOMAIN.finditer(text):
        value = match.group().rstrip(".,;:!?)")
        host = value.split("/", 1)[0]
        if _ABBREVIATION.match(host) or not re.search(r"[A-Za-z]", host.rsplit(".", 1)[0]):
            continue
        found.append(ContactDetail(LINK, value))
    return found


def contact_details_in(text: str) -> list[ContactDetail]:
    """The addresses, telephone numbers and links in `text` (the module's docstring), in no
    particular order; an empty list when it holds none."""
    found = []
    for finding in findings_in(text):
        if finding.kind in (URL, EMAIL):
            found.append(ContactDetail(LINK, finding.value))
        elif finding.kind == PHONE:
            found.append(ContactDetail(PHONE, finding.value))
    return found + _addresses(text) + _phones(text) + _domains(text)
