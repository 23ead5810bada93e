"""Who a console user is and which organisation she administers."""
from __future__ import annotations

from core_memory.base.console.models import ConsoleAdministrator

EVERY_ORGANISATION = None


def administered_organisation_id(*, user) -> str | None:
    """The id of the one organisation the user administers; EVERY_ORGANISATION (None) for a superuser.

    A staff user who is neither a superuser nor bound to an organisation administers
    nothing: the empty string, which matches no organisation.
    """
    if user.is_superuser:
        return EVERY_ORGANISATION
    # The user names her organisation: no scope to read it within.
    administrator = ConsoleAdministrator.objects.unscoped().filter(user_id=user.pk).only("organisation_id").first()
    return administrator.organisation_id if administrator else ""


def console_actor(*, user) -> str:
    """The audit actor of a console action ("key id or console user")."""
    return f"console:{user.get_username()}"
