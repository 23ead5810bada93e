"""Erasing a person (R-3.4, R-9.8): everything Core holds about her, in every layer, in one
transaction, with a receipt of what went."""
from __future__ import annotations

from django.db import transaction

from audit.services import audit_event_record
from core_memory.keys.services import subject_tokens_erase
from core_memory.organisations.models import Organisation
from core_memory.persons.services import person_forget
from core_memory.pii.services import person_placeholders_erase
from extraction.services.windows import person_windows_erase
from memory.services import person_records_erase


@transaction.atomic(durable=True)
def person_erase(*, organisation: Organisation, subject: str, actor: str) -> dict:
    """Erases a person: her records (memory.services.person_records_erase), her threads'
    extraction windows, her subject tokens, the real values behind her threads' placeholders
    (R-8.8) and her rules; audited as `person.erased` (R-3.4, R-11.2). Erasing a person never
    named is not an error: afterwards she is gone either way."""
    # Windows first: one being written holds its row until its records are in, so her
    # records are read for erasing after any window's records committed.
    windows = person_windows_erase(organisation=organisation, subject=subject)
    records = person_records_erase(organisation=organisation, subject=subject)
    tokens = subject_tokens_erase(organisation=organisation, subject=subject)
    placeholders = person_placeholders_erase(organisation=organisation, subject=subject)
    person_forget(organisation=organisation, subject=subject)
    details = {"records": records, "subject_tokens": tokens, "thread_placeholders": placeholders, "extraction_windows": windows}
    audit_event_record(organisation=organisation, actor=actor, action="person.erased", target=subject, details=details)
    return {"subject": subject, "erased": details}
