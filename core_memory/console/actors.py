"""Who did something, as the console names them: a key by its name, an administrator as such —
never a raw id alone (issue 13: history and audit pages)."""
from __future__ import annotations

import re
from collections.abc import Iterable

from django.utils.translation import gettext as _

from core_memory.keys.models import ApiKey

KEY_ID = re.compile(r"\bkey_[0-9a-z]+\b")
CONSOLE_PREFIX = "console:"


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

        def key_name(match: re.Match) -> str:
            key_id = match.group(0)
            if key_id in names:
                return _("key “%(name)s”") % {"name": names[key_id]}
            return _("deleted key %(id)s") % {"id": key_id}

        return KEY_ID.sub(key_name, actor)

    return {actor: label(actor) for actor in actors}
