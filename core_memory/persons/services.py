"""Person writes: persons exist once named, with their rules. Erasing one spans
every layer and is a flow (core_memory.flows.erasure)."""
from __future__ import annotations

from django.db import transaction

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.organisations.models import Organisation
from core_memory.persons.models import Person


def person_ensure(*, organisation: Organisation, subject: str) -> Person:
    """The person named `subject`, created with the default rules on first mention."""
    person, _ = Person.objects.get_or_create(organisation=organisation, subject=subject)
    return person


@transaction.atomic
def person_update(*, caller: Caller, organisation: Organisation, subject: str, helper_model_may_read: bool | None = None) -> Person:
    person_ensure(organisation=organisation, subject=subject)
    person = Person.objects.for_organisation(organisation).select_for_update().get(subject=subject)
    fields = []
    if helper_model_may_read is not None and helper_model_may_read != person.helper_model_may_read:
        person.helper_model_may_read = helper_model_may_read
        fields.append("helper_model_may_read")
    if fields:
        person.save(update_fields=[*fields, "updated_at"])
        audit_event_record(
            caller=caller, action="person.updated", target=subject, details={"fields": fields}
        )
    return person


def person_forget(*, caller: Caller, subject: str) -> None:
    """Removes her row and her rules; part of erasing her (core_memory.flows.erasure)."""
    Person.objects.for_organisation(caller.organisation_id).filter(subject=subject).delete()
