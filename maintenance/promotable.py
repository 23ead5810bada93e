"""What may become a shared record: the rules every proposal passes, whichever
analysis found it. Core checks them itself; the analysis model's judgement comes on top.

A record is never proposed when
- its type is about the person or written by Core: `preference`, `commitment`, `behaviour`
  (her own rules), `episode` and `lesson`; other types (`fact`, and a store's own
  types) may be;
- it is contested: two persons' memories disagree about it;
- it holds an address, a telephone number or a link (`maintenance.contacts`), or any other
  personal data `core_memory.pii` finds (e-mail, IBAN, card, BSN, IP address);
- it is about a person (`about_a_person`): it names a person who holds it, speaks of someone in
  the first or third person singular ("my", "her", "zijn vrouw"), or opens with a verb and
  no subject, the way records about their own person are written ("Woont in Delft", "Has two
  children", "Is allergic to nuts").

The last rule is a heuristic: a fact about a person that reads like a general statement ("Piet
is the manager of Sales") passes it, which is why a proposal waits for a person to apply it.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from core_memory.pii.detection import findings_in
from maintenance.contacts import contact_details_in

PERSONAL_TYPES = ("preference", "commitment", "behaviour", "episode", "lesson")

# First and third person singular, Dutch and English. Not "zijn" (also "to be"), "ze"
# (also "they"), "u"/"you"/"je" (general instructions are written to "you").
_PERSONAL_PRONOUNS = re.compile(
    r"(?i)\b(?:ik|mij|mijn|mijzelf|hij|hem|hijzelf|zij|zijzelf|haar|i|me|my|mine|myself|he|him|his|himself|she|her|hers|herself)\b"
)
# Verbs that open a record about its own person when the subject is left out.
_SUBJECTLESS_OPENINGS = frozenset(
    """
    is was has had lives lived works worked likes liked loves loved prefers preferred wants wanted
    needs needed hates hated owns drives speaks uses studies studied plays visits travels knows
    feels eats drinks finds gets got reads writes runs wears sleeps cannot can't can will would
    should must doesn't does did didn't isn't wasn't hasn't
    heeft had woont woonde werkt werkte houdt hield wil wilde moet moest kan kon mag mocht gaat
    ging komt kwam zit zat spreekt rijdt gebruikt studeert speelt bezoekt reist kent voelt eet
    drinkt vindt vond zoekt krijgt kreeg leest schrijft loopt draagt slaapt zal zou hoeft
    """.split()
)
_FIRST_WORD = re.compile(r"^\W*([^\W\d_][\w'’]*)")


def _names(text: str, subjects: Iterable[str]) -> bool:
    folded = text.casefold()
    for subject in subjects:
        name = subject.strip().casefold()
        if name and re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", folded):
            return True
    return False


def about_a_person(text: str, *, subjects: Iterable[str] = ()) -> bool:
    """True when the text reads as a fact about a person (the module's docstring): it names one
    of `subjects`, uses a personal pronoun, or opens with a verb and no subject."""
    if _names(text, subjects) or _PERSONAL_PRONOUNS.search(text):
        return True
    first = _FIRST_WORD.match(text)
    return bool(first) and first.group(1).casefold() in _SUBJECTLESS_OPENINGS


def holds_personal_data(text: str) -> bool:
    """An address, telephone number or link, or anything else `core_memory.pii` finds. A
    detector that fails counts as a find: nothing is proposed that could not be read."""
    try:
        return bool(contact_details_in(text) or findings_in(text))
    except Exception:  # noqa: BLE001 — a library's bug must not let a text through unread
        return True


def promotable(*, type_name: str, text: str, contested: bool, subjects: Iterable[str]) -> bool:
    """Whether a personal record may be proposed as a shared one at all (the module's docstring).
    `subjects`: the persons who hold it."""
    if type_name in PERSONAL_TYPES or contested:
        return False
    return not about_a_person(text, subjects=subjects) and not holds_personal_data(text)
