"""Pseudonymising what a store lesson's request shows (docs/decisions.md "Maintenance").

"Pseudonymised" means: every mention of the person as Core knows her — her subject, in any
case, as a whole word — becomes `<PERSON_1>`, and every piece of personal data
`core_memory.pii` finds (e-mail, telephone, IBAN, card, IP address, URL, BSN) its placeholder
(`<EMAIL_1>`, …), numbered afresh for this one call; the same value gets the same placeholder.
The model's answer is restored with the same placeholders, so her lesson, like every record,
holds real values. Ids, times and threads are never sent.

Not replaced: names of other people, and her own name when her subject is an opaque id —
finding names needs a named-entity model, which Core does not have (README "Personal data").
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from core_memory.pii.detection import Finding
from core_memory.pii.placeholders import PlaceholderAssignment, Placeholders, findings_of

PERSON = "PERSON"


def _mentions(text: str, subject: str) -> list[Finding]:
    name = subject.strip()
    if not name:
        return []
    pattern = re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)", re.IGNORECASE)
    # One value for every writing of her name, so `Anna` and `anna` share `<PERSON_1>`.
    return [Finding(match.start(), match.end(), PERSON, name) for match in pattern.finditer(text)]


def _merged(personal_data: list[Finding], mentions: list[Finding]) -> list[Finding]:
    """pii's findings, and the mentions of her outside them (her subject may be her e-mail address)."""
    kept = list(personal_data)
    for mention in mentions:
        if all(mention.end <= found.start or mention.start >= found.end for found in personal_data):
            kept.append(mention)
    return sorted(kept, key=lambda found: found.start)


def texts_pseudonymise(*, texts: Sequence[str], subject: str) -> tuple[list[str], Placeholders]:
    """The texts as the helper model may see them, and the placeholders that restore its answer.
    Raises `core_memory.pii.placeholders.RedactionError` when detection fails: then send nothing."""
    findings = findings_of(texts)
    assignment = PlaceholderAssignment(Placeholders())
    redacted = [
        assignment.redact(text, _merged(found, _mentions(text, subject))) for text, found in zip(texts, findings, strict=True)
    ]
    return redacted, assignment.placeholders
