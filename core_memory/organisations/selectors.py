from __future__ import annotations

from core_memory.base.callers import Caller
from core_memory.base.errors import NotFound
from core_memory.organisations.models import Organisation


def organisation_get_own(*, caller: Caller, asked_id: str) -> Organisation:
    """The caller's own organisation, asked for by id (`asked_id`, a route's); any other id,
    existing or not, is a 404."""
    if asked_id != caller.organisation_id:
        raise NotFound("No such organisation.")
    return Organisation.objects.get(pk=caller.organisation_id)
