"""Who did something, as the console names them: a key by its name, an administrator as such —
never a raw id alone."""
from __future__ import annotations

import re
from collections.abc import Iterable

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core_memory.keys.models import ApiKey

KEY_ID = re.compile(r"\bkey_[0-9a-z]+\b")
CONSOLE_PREFIX = "console:"
COMMAND_PREFIX = "command:"
EXTRACTION_PREFIX = "extraction:"  # extraction writes as the key its switch runs under
# The names Core's own work writes as, as the console calls them.
CORE_ACTORS = {
    "maintenance": gettext_lazy("maintenance (Core's own)"),
    "createorg": gettext_lazy("the createorg command"),
}


def actor_labels(*, organisation_id: str, actors: Iterable[str | None]) -> dict[str | None, str]:
    """Each actor (`key_…`, `console:<username>`, or a name Core's own work writes as) as a
    label; one query for the keys named. A key since deleted keeps its id, marked."""
    actors = set(actors)
    key_ids = {key_id for actor in actors if actor for key_id in KEY_ID.findall(actor)}
    names = dict(ApiKey.objects.for_organisation(organisation_id).filter(id__in=key_ids).values_list("id", "name")) if key_ids else {}

    def label(actor: str | None) -> str:
        if not actor:
            return "—"
        if actor.startswith(CONSOLE_PREFIX):
            return _("administrator %(username)s") % {"username": actor.removeprefix(CONSOLE_PREFIX)}
        if actor in CORE_ACTORS:
            return str(CORE_ACTORS[actor])
        if actor.startswith(COMMAND_PREFIX):
            actor = _("the command %(command)s") % {"command": actor.removeprefix(COMMAND_PREFIX)}

        def key_name(match: re.Match) -> str:
            key_id = match.group(0)
            if key_id in names:
                return _("key “%(name)s”") % {"name": names[key_id]}
            return _("deleted key %(id)s") % {"id": key_id}

        if actor.startswith(EXTRACTION_PREFIX):
            return _("extraction, as %(key)s") % {"key": KEY_ID.sub(key_name, actor.removeprefix(EXTRACTION_PREFIX))}
        return KEY_ID.sub(key_name, actor)

    return {actor: label(actor) for actor in actors}
