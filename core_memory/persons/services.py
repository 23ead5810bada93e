"""Person writes (R-3.4): persons exist once named; erasing one removes what rests on her."""
from __future__ import annotations

from django.db import transaction

from audit.services import audit_event_record
from core_memory.organisations.models import Organisation
from core_memory.persons.models import Person


def person_ensure(*, organisation: Organisation, subject: str) -> Person:
    """The person named `subject`, created with the default rules on first mention."""
    person, _ = Person.objects.get_or_create(organisation=organisation, subject=subject)
    return person


@transaction.atomic
def person_update(*, organisation: Organisation, subject: str, actor: str, helper_model_may_read: bool | None = None) -> Person:
    person_ensure(organisation=organisation, subject=subject)
    person = Person.objects.select_for_update().get(organisation=organisation, subject=subject)
    fields = []
    if helper_model_may_read is not None and helper_model_may_read != person.helper_model_may_read:
        person.helper_model_may_read = helper_model_may_read
        fields.append("helper_model_may_read")
    if fields:
        person.save(update_fields=[*fields, "updated_at"])
        audit_event_record(
            organisation=organisation, actor=actor, action="person.updated", target=subject, details={"fields": fields}
        )
    return person


@transaction.atomic(durable=True)
def person_erase(*, organisation: Organisation, subject: str, actor: str) -> dict:
    """Erases a person: her records (memory.services.person_records_erase), her subject
    tokens and her rules; audited as `person.erased` (R-3.4, R-11.2). Erasing a person
    never named is not an error: afterwards she is gone either way."""
    from core_memory.keys.models import SubjectToken
    from memory.services import person_records_erase

    records = person_records_erase(organisation=organisation, subject=subject)
    tokens, _ = SubjectToken.objects.filter(key__organisation=organisation, subject=subject).delete()
    Person.objects.filter(organisation=organisation, subject=subject).delete()
    details = {"records": records, "subject_tokens": tokens}
    audit_event_record(organisation=organisation, actor=actor, action="person.erased", target=subject, details=details)
    return {"subject": subject, "erased": details}
