from __future__ import annotations

from core_memory.base.errors import NotFound
from core_memory.organisations.models import Organisation


def organisation_get_own(*, organisation: Organisation, organisation_id: str) -> Organisation:
    """The caller's own organisation by id; any other id, existing or not, is a 404."""
    if organisation_id != organisation.id:
        raise NotFound("No such organisation.")
    return Organisation.objects.get(pk=organisation.pk)
