"""Reading persons and their rules."""
from __future__ import annotations

from core_memory.base.callers import Caller
from core_memory.persons.models import Person


def person_subjects(*, caller: Caller, search: str = ""):
    """(organisation id, subject) of every person of the organisation who has rules stored
    (core_memory.flows.persons)."""
    return _person_subjects(Person.objects.for_organisation(caller.organisation_id), search=search)


def platform_person_subjects(*, search: str = ""):
    """`person_subjects` across every organisation (a console superuser's person list)."""
    return _person_subjects(Person.objects.unscoped(), search=search)


def _person_subjects(persons, *, search: str):
    if search:
        persons = persons.filter(subject__icontains=search)
    return persons.values_list("organisation_id", "subject").order_by()


def person_rules(*, caller: Caller, subjects: list[str]) -> dict[str, Person]:
    """The stored rules of those persons who have any; the others have the defaults."""
    return {person.subject: person for person in Person.objects.for_organisation(caller.organisation_id).filter(subject__in=subjects)}
